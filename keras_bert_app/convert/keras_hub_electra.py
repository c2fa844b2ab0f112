"""keras-hub ELECTRA presets (`keras_hub.models.ElectraBackbone`), in and out.

The folder layout is keras-hub's (`config.json`, `model.weights.h5`,
`tokenizer.json`, `assets/tokenizer/vocabulary.txt`). The backbone's
variables have `BertBackbone`'s names plus `embeddings_projection` (E -> H,
when `embedding_dim != hidden_dim`), and it has a pooler (`pooled_dense`).
keras-hub's ELECTRA uses the tanh GELU and LayerNorm epsilon 1e-12, so a
converted encoder gets activation "gelu_approximate". A keras-hub ELECTRA
preset holds the encoder only (the discriminator or the generator's
encoder, without their heads).
"""

import pathlib

from keras_bert_app.convert import huggingface_electra, keras_hub, weight_map
from keras_bert_app.convert.weight_map import ConversionError, Mapping

BACKBONE_CLASS = "ElectraBackbone"


def is_preset(folder):
    """True for a keras-hub preset folder whose backbone is an `ElectraBackbone`."""
    path = pathlib.Path(folder) / keras_hub.CONFIG_FILE
    if not keras_hub.is_preset(folder):
        return False
    try:
        return keras_hub._read_json(path).get("class_name") == BACKBONE_CLASS
    except ConversionError:
        return False


def read_config(folder):
    """Our preset config (`encoder`, `tokenizer`, `architecture`) from a keras-hub ELECTRA preset."""
    folder = pathlib.Path(folder)
    path = folder / keras_hub.CONFIG_FILE
    config = keras_hub._read_json(path)
    if config.get("class_name") != BACKBONE_CLASS:
        raise ConversionError(
            f"{path}: field 'class_name' is {config.get('class_name')!r}; expected {BACKBONE_CLASS!r}."
        )
    backbone = config["config"]
    keras_hub.note_task_head(folder)
    encoder = {
        "vocabulary_size": int(backbone["vocab_size"]),
        "num_layers": int(backbone["num_layers"]),
        "num_heads": int(backbone["num_heads"]),
        "hidden_dim": int(backbone["hidden_dim"]),
        "intermediate_dim": int(backbone["intermediate_dim"]),
        "dropout": float(backbone.get("dropout", 0.1)),
        "max_sequence_length": int(backbone.get("max_sequence_length", 512)),
        "num_segments": int(backbone.get("num_segments", 2)),
        "activation": keras_hub.ACTIVATION,
        "layer_norm_epsilon": keras_hub.LAYER_NORM_EPSILON,
        "initializer_range": 0.02,
    }
    if int(backbone["embedding_dim"]) != encoder["hidden_dim"]:
        encoder["embedding_dim"] = int(backbone["embedding_dim"])
    return {
        "name": folder.name,
        "description": f"Converted from the keras-hub ELECTRA preset {folder.name}.",
        "encoder": encoder,
        "tokenizer": keras_hub.tokenizer_entry(folder),
        "architecture": huggingface_electra.MODEL_TYPE,
    }


def encoder_mappings(num_layers, projection=False):
    """`Mapping`s from `ElectraBackbone` variable paths to ours (same shapes)."""
    mappings = keras_hub.encoder_mappings(num_layers)
    if projection:
        mappings += [
            Mapping(f"embeddings_projection/{name}", f"embedding_projection/{name}", weight_map.SAME)
            for name in ("kernel", "bias")
        ]
    return mappings


def load_weights(model, folder):
    """Fill a `BertEncoder` (or a model's `.encoder`) from a keras-hub ELECTRA preset.

    Returns:
        bool. False: a keras-hub ELECTRA preset has no pretraining heads.
    """
    import keras
    import keras_hub as hub

    folder = pathlib.Path(folder)
    read_config(folder)
    if not (folder / keras_hub.WEIGHTS_FILE).is_file():
        raise FileNotFoundError(f"{folder}: no {keras_hub.WEIGHTS_FILE}; expected a keras-hub preset with weights.")
    backbone = hub.models.ElectraBackbone.from_preset(str(folder))
    tensors = {variable.path: keras.ops.convert_to_numpy(variable) for variable in backbone.weights}
    encoder = getattr(model, "encoder", model)
    mappings = encoder_mappings(encoder.num_layers, _has_projection(encoder))
    source_name = str(folder / keras_hub.WEIGHTS_FILE)
    weight_map.check_unused(tensors, {mapping.source for mapping in mappings}, source_name)
    weight_map.load_mapped(encoder, mappings, tensors.get, source_name)
    return False


def save(model, folder, vocabulary_path, lowercase, special_tokens_in_strings=False):
    """Write a keras-hub preset that `keras_hub.models.ElectraBackbone.from_preset` loads.

    `model` is a `BertEncoder` or a model with one (its heads are not
    written: an ElectraBackbone preset has none). An encoder whose
    activation or epsilon differs from keras-hub's fixed ones is written
    with a warning, or refused (`keras_hub.check_writable`).
    """
    import keras_hub as hub

    encoder = getattr(model, "encoder", model)
    weight_map.check_vocabulary(vocabulary_path, encoder.vocabulary_size)
    keras_hub.check_writable(encoder, BACKBONE_CLASS)
    backbone = hub.models.ElectraBackbone(
        vocab_size=encoder.vocabulary_size,
        num_layers=encoder.num_layers,
        num_heads=encoder.num_heads,
        hidden_dim=encoder.hidden_dim,
        embedding_dim=huggingface_electra.embedding_width(encoder),
        intermediate_dim=encoder.intermediate_dim,
        dropout=encoder.dropout,
        max_sequence_length=encoder.max_sequence_length,
        num_segments=encoder.num_segments,
    )
    mappings = encoder_mappings(encoder.num_layers, _has_projection(encoder))
    tensors = weight_map.export_mapped(encoder, mappings)  # keyed by keras-hub paths
    identity = [Mapping(mapping.source, mapping.source, weight_map.SAME) for mapping in mappings]
    weight_map.load_mapped(backbone, identity, tensors.get, "the encoder")
    folder = pathlib.Path(folder)
    backbone.save_to_preset(str(folder))
    tokenizer = hub.models.ElectraTokenizer(
        vocabulary=str(vocabulary_path), lowercase=bool(lowercase),
        special_tokens_in_strings=bool(special_tokens_in_strings),
    )
    tokenizer.save_to_preset(str(folder))
    return folder


def _has_projection(encoder):
    return huggingface_electra.embedding_width(encoder) != encoder.hidden_dim
