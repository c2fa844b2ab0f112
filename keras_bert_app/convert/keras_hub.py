"""keras-hub BERT presets (`keras_hub.models.BertBackbone`), in and out.

A keras-hub preset folder holds `config.json` (the serialized backbone),
`model.weights.h5`, `tokenizer.json` and `assets/tokenizer/vocabulary.txt`.
keras-hub's BERT always uses the tanh GELU and LayerNorm epsilon 1e-12, so a
converted encoder gets activation "gelu_approximate".
"""

import json
import pathlib
import warnings

from keras_bert_app.convert import weight_map
from keras_bert_app.convert.weight_map import ConversionError, Mapping

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
TOKENIZER_CONFIG_FILE = "tokenizer.json"
TASK_CONFIG_FILE = "task.json"
VOCABULARY_FILE = "assets/tokenizer/vocabulary.txt"
BACKBONE_CLASS = "BertBackbone"
ACTIVATION = "gelu_approximate"
LAYER_NORM_EPSILON = 1e-12


def is_preset(folder):
    """True for a folder whose `config.json` is a serialized keras-hub model."""
    path = pathlib.Path(folder) / CONFIG_FILE
    if not path.is_file():
        return False
    try:
        config = _read_json(path)
    except ConversionError:
        return False
    return isinstance(config, dict) and str(config.get("module", "")).startswith("keras_hub")


def read_config(folder):
    """Our preset config (`encoder`, `tokenizer`) from a keras-hub preset folder."""
    folder = pathlib.Path(folder)
    path = folder / CONFIG_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no {CONFIG_FILE}; expected a keras-hub preset folder.")
    config = _read_json(path)
    class_name = config.get("class_name") if isinstance(config, dict) else None
    if class_name != BACKBONE_CLASS:
        raise ConversionError(
            f"{path}: class_name is {class_name!r}; this converter reads keras-hub "
            f"{BACKBONE_CLASS} and ElectraBackbone presets, not other architectures."
        )
    backbone = config["config"]
    note_task_head(folder)
    return {
        "name": folder.name,
        "description": f"Converted from the keras-hub preset {folder.name}.",
        "encoder": {
            "vocabulary_size": int(backbone["vocabulary_size"]),
            "num_layers": int(backbone["num_layers"]),
            "num_heads": int(backbone["num_heads"]),
            "hidden_dim": int(backbone["hidden_dim"]),
            "intermediate_dim": int(backbone["intermediate_dim"]),
            "dropout": float(backbone.get("dropout", 0.1)),
            "max_sequence_length": int(backbone.get("max_sequence_length", 512)),
            "num_segments": int(backbone.get("num_segments", 2)),
            "activation": ACTIVATION,
            "layer_norm_epsilon": LAYER_NORM_EPSILON,
            "initializer_range": 0.02,
        },
        "tokenizer": tokenizer_entry(folder),
    }


def tokenizer_entry(folder):
    """Our preset's tokenizer entry from a keras-hub preset's `tokenizer.json`: its casing and special-token rule.

    keras-hub's own WordPiece pre-tokenization differs from BERT's in places
    (see README, "keras-hub presets"): ours, as google-research/bert and HF
    tokenize, is kept.
    """
    settings = {}
    path = pathlib.Path(folder) / TOKENIZER_CONFIG_FILE
    if path.is_file():
        settings = _read_json(path).get("config", {})
    entry = {"vocabulary": VOCABULARY_FILE, "lowercase": bool(settings.get("lowercase", True))}
    if settings.get("special_tokens_in_strings"):
        entry["special_tokens_in_strings"] = True
    return entry


def note_task_head(folder):
    """Warn that a keras-hub task preset's head (`task.json`, `task.weights.h5`) is not read: the encoder is."""
    path = pathlib.Path(folder) / TASK_CONFIG_FILE
    if not path.is_file():
        return
    task = _read_json(path)
    name = task.get("class_name", "?") if isinstance(task, dict) else "?"
    warnings.warn(
        f"{folder}: the keras-hub task {name}'s head ({TASK_CONFIG_FILE}, task.weights.h5) is not read; only its "
        "backbone is (a fine-tuned task of ours starts its own head).",
        stacklevel=2,
    )


def check_writable(encoder, backbone_class):
    """Refuse an encoder whose activation keras-hub's backbones cannot compute; warn where outputs differ slightly.

    keras-hub's BERT and ELECTRA backbones always apply the tanh GELU with
    LayerNorm epsilon 1e-12: the exact GELU and another epsilon give outputs
    about 1e-4 apart; any other activation would give other outputs.
    """
    if encoder.activation not in (ACTIVATION, "gelu"):
        raise ConversionError(
            f"the encoder's activation is {encoder.activation!r}; keras-hub's {backbone_class} always computes the "
            f"tanh GELU ({ACTIVATION!r}), so its outputs there would not be this model's. Convert it to Hugging "
            "Face (--to huggingface), which names the activation, instead."
        )
    if encoder.activation != ACTIVATION or encoder.layer_norm_epsilon != LAYER_NORM_EPSILON:
        warnings.warn(
            f"keras-hub's {backbone_class} uses activation {ACTIVATION!r} and layer_norm_epsilon "
            f"{LAYER_NORM_EPSILON}; this encoder has {encoder.activation!r} and "
            f"{encoder.layer_norm_epsilon}, so its outputs in keras-hub will differ slightly.",
            stacklevel=3,
        )


def encoder_mappings(num_layers):
    """`Mapping`s from keras-hub `BertBackbone` variable paths to ours (same shapes)."""

    def same(source, target, names):
        return [Mapping(f"{source}/{name}", f"{target}/{name}", weight_map.SAME) for name in names]

    dense = ("kernel", "bias")
    layer_norm = ("gamma", "beta")
    mappings = [
        Mapping(
            "token_embedding/embeddings",
            "embeddings/token_embedding/embeddings",
            weight_map.SAME,
        ),
        Mapping(
            "segment_embedding/embeddings",
            "embeddings/segment_embedding/embeddings",
            weight_map.SAME,
        ),
        Mapping("position_embedding/embeddings", "embeddings/position_embeddings", weight_map.SAME),
        *same("embeddings_layer_norm", "embeddings/layer_norm", layer_norm),
    ]
    for index in range(num_layers):
        source = f"transformer_layer_{index}"
        target = f"transformer_layer_{index}"
        for name in ("query", "key", "value", "attention_output"):
            mappings += same(
                f"{source}/self_attention_layer/{name}",
                f"{target}/attention/{name}",
                dense,
            )
        mappings += same(
            f"{source}/self_attention_layer_norm",
            f"{target}/attention_layer_norm",
            layer_norm,
        )
        mappings += same(
            f"{source}/feedforward_intermediate_dense",
            f"{target}/intermediate",
            dense,
        )
        mappings += same(f"{source}/feedforward_output_dense", f"{target}/output", dense)
        mappings += same(
            f"{source}/feedforward_layer_norm",
            f"{target}/output_layer_norm",
            layer_norm,
        )
    mappings += same("pooled_dense", "pooler", dense)
    return mappings


def read_tensors(folder):
    """`{variable path: NumPy array}` of a keras-hub BertBackbone preset folder."""
    import keras
    import keras_hub

    folder = pathlib.Path(folder)
    read_config(folder)  # clear errors for other architectures
    if not (folder / WEIGHTS_FILE).is_file():
        raise FileNotFoundError(f"{folder}: no {WEIGHTS_FILE}; expected a keras-hub preset with weights.")
    backbone = keras_hub.models.BertBackbone.from_preset(str(folder))
    return {variable.path: keras.ops.convert_to_numpy(variable) for variable in backbone.weights}


def load_weights(model, folder):
    """Fill a `BertEncoder` (or a `BertPretrainer`'s encoder) from a keras-hub preset.

    Returns:
        bool. False: a BertBackbone preset has no pretraining heads.
    """
    tensors = read_tensors(folder)
    mappings = encoder_mappings(getattr(model, "encoder", model).num_layers)
    source_name = str(pathlib.Path(folder) / WEIGHTS_FILE)
    weight_map.check_unused(tensors, {mapping.source for mapping in mappings}, source_name)
    weight_map.load_mapped(model, mappings, tensors.get, source_name)
    return False


def save(model, folder, vocabulary_path, lowercase, special_tokens_in_strings=False):
    """Write a keras-hub preset folder that `keras_hub.models.BertBackbone.from_preset` loads.

    `model` is a `BertEncoder` (or a `BertPretrainer`, whose encoder is
    written: a BertBackbone preset has no pretraining heads).

    keras-hub's BERT has a fixed tanh GELU and LayerNorm epsilon 1e-12
    (`check_writable`: the exact GELU or another epsilon is written with a
    warning, another activation refused).
    """
    import keras_hub

    encoder = getattr(model, "encoder", model)
    weight_map.check_vocabulary(vocabulary_path, encoder.vocabulary_size)
    check_writable(encoder, BACKBONE_CLASS)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=encoder.vocabulary_size,
        num_layers=encoder.num_layers,
        num_heads=encoder.num_heads,
        hidden_dim=encoder.hidden_dim,
        intermediate_dim=encoder.intermediate_dim,
        dropout=encoder.dropout,
        max_sequence_length=encoder.max_sequence_length,
        num_segments=encoder.num_segments,
    )
    mappings = encoder_mappings(encoder.num_layers)
    tensors = weight_map.export_mapped(encoder, mappings)  # keyed by keras-hub paths
    identity = [Mapping(mapping.source, mapping.source, weight_map.SAME) for mapping in mappings]
    weight_map.load_mapped(backbone, identity, tensors.get, "the encoder")
    folder = pathlib.Path(folder)
    backbone.save_to_preset(str(folder))
    tokenizer = keras_hub.models.BertTokenizer(
        vocabulary=str(vocabulary_path), lowercase=bool(lowercase),
        special_tokens_in_strings=bool(special_tokens_in_strings),
    )
    tokenizer.save_to_preset(str(folder))
    return folder


def _read_json(path):
    try:
        return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConversionError(f"{path}: malformed JSON ({error}).") from None
