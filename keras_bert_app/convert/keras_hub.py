"""keras-hub presets of BERT and ELECTRA (`BertBackbone`, `ElectraBackbone`), in and out.

A keras-hub preset folder holds `config.json` (the serialized backbone),
`model.weights.h5`, `tokenizer.json` and `assets/tokenizer/vocabulary.txt`,
with the family table's keras-hub names (`tables`). keras-hub's BERT and
ELECTRA use the tanh GELU and LayerNorm epsilon 1e-12. A preset holds the
encoder only: a task preset's head is not read (with a warning).
"""

import pathlib
import warnings

from keras_bert_app.convert import huggingface, huggingface_config, tables, weight_map
from keras_bert_app.convert.family import BERT, ELECTRA
from keras_bert_app.convert.weight_map import ConversionError, Mapping
from keras_bert_app.extras import require

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
TOKENIZER_CONFIG_FILE = "tokenizer.json"
TASK_CONFIG_FILE = "task.json"
VOCABULARY_FILE = "assets/tokenizer/vocabulary.txt"
BACKBONES = {"BertBackbone": BERT, "ElectraBackbone": ELECTRA}
ACTIVATION = "gelu_approximate"  # HF's "gelu_new"
# HF's config fields -> the backbone's (the rest: HF's defaults, which are keras-hub's).
HF_FIELDS = {"vocab_size": "vocabulary_size", "num_hidden_layers": "num_layers", "num_attention_heads": "num_heads",
             "hidden_size": "hidden_dim", "intermediate_size": "intermediate_dim", "hidden_dropout_prob": "dropout",
             "max_position_embeddings": "max_sequence_length", "type_vocab_size": "num_segments"}
LAYER_NORM_EPSILON = 1e-12


def is_preset(folder):
    """True for a folder whose `config.json` is a serialized keras-hub model."""
    path = pathlib.Path(folder) / CONFIG_FILE
    try:
        config = huggingface_config.read_json(path) if path.is_file() else None
    except ConversionError:
        return False
    return isinstance(config, dict) and str(config.get("module", "")).startswith("keras_hub")


def read_config(folder):
    """Our preset config (`encoder`, `tokenizer`; "architecture" for ELECTRA) from a keras-hub preset folder."""
    folder = pathlib.Path(folder)
    path = folder / CONFIG_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no {CONFIG_FILE}; expected a keras-hub preset folder.")
    config = huggingface_config.read_json(path)
    class_name = config.get("class_name") if isinstance(config, dict) else None
    if class_name not in BACKBONES:
        raise ConversionError(f"{path}: class_name is {class_name!r}; this converter reads keras-hub "
                              f"{' and '.join(BACKBONES)} presets, not other architectures.")
    backbone = config["config"]
    _note_task_head(folder)
    hf_like = {theirs: backbone[ours] for theirs, ours in HF_FIELDS.items() if ours in backbone}
    hf_like.setdefault("vocab_size", backbone.get("vocab_size"))  # ElectraBackbone's name of it
    encoder = huggingface_config.config_from_dict(path, {**hf_like, "hidden_act": "gelu_new"}, folder)["encoder"]
    ours = {"name": folder.name, "description": f"Converted from the keras-hub preset {folder.name}.",
            "encoder": encoder, "tokenizer": _tokenizer_entry(folder)}
    if BACKBONES[class_name] == ELECTRA:
        if int(backbone["embedding_dim"]) != encoder["hidden_dim"]:
            encoder["embedding_dim"] = int(backbone["embedding_dim"])
        ours.update(description=f"Converted from the keras-hub ELECTRA preset {folder.name}.", architecture=ELECTRA)
    return ours


def load_weights(model, folder):
    """Fill a `BertEncoder` (or a model's `.encoder`) from a keras-hub preset.

    Returns:
        bool. False: a keras-hub backbone preset has no pretraining heads.
    """
    import keras

    keras_hub = require("keras_hub", extra="convert", feature="Reading a keras-hub preset")

    folder = pathlib.Path(folder)
    family = read_config(folder).get("architecture", BERT)  # clear errors for other architectures
    if not (folder / WEIGHTS_FILE).is_file():
        raise FileNotFoundError(f"{folder}: no {WEIGHTS_FILE}; expected a keras-hub preset with weights.")
    backbone = getattr(keras_hub.models, _backbone_class(family)).from_preset(str(folder))
    tensors = {variable.path: keras.ops.convert_to_numpy(variable) for variable in backbone.weights}
    encoder = getattr(model, "encoder", model)
    mappings = _mappings(encoder, family)
    source_name = str(folder / WEIGHTS_FILE)
    weight_map.check_unused(tensors, {mapping.source for mapping in mappings}, source_name)
    weight_map.load_mapped(encoder, mappings, tensors.get, source_name)
    return False


def save(model, folder, vocabulary_path, lowercase, special_tokens_in_strings=False, family=BERT):
    """Write a keras-hub preset that `keras_hub.models.BertBackbone` (ELECTRA: `ElectraBackbone`) `.from_preset` loads.

    `model` is a `BertEncoder` or a model with one (its heads are not
    written: a backbone preset has none). keras-hub's fixed tanh GELU and
    LayerNorm epsilon 1e-12: the exact GELU or another epsilon is written
    with a warning, another activation refused.
    """
    keras_hub = require("keras_hub", extra="convert", feature="Writing a keras-hub preset")
    encoder = getattr(model, "encoder", model)
    weight_map.check_vocabulary(vocabulary_path, encoder.vocabulary_size)
    class_name = _backbone_class(family)
    _check_writable(encoder, class_name)
    sizes = dict(num_layers=encoder.num_layers, num_heads=encoder.num_heads, hidden_dim=encoder.hidden_dim,
                 intermediate_dim=encoder.intermediate_dim, dropout=encoder.dropout,
                 max_sequence_length=encoder.max_sequence_length, num_segments=encoder.num_segments)
    if family == ELECTRA:
        sizes.update(vocab_size=encoder.vocabulary_size, embedding_dim=encoder.embedding_dim or encoder.hidden_dim)
    else:
        sizes.update(vocabulary_size=encoder.vocabulary_size)
    backbone = getattr(keras_hub.models, class_name)(**sizes)
    mappings = _mappings(encoder, family)
    tensors = weight_map.export_mapped(encoder, mappings)  # keyed by keras-hub paths
    identity = [Mapping(mapping.source, mapping.source, weight_map.SAME) for mapping in mappings]
    weight_map.load_mapped(backbone, identity, tensors.get, "the encoder")
    folder = pathlib.Path(folder)
    backbone.save_to_preset(str(folder))
    tokenizer = getattr(keras_hub.models, class_name.replace("Backbone", "Tokenizer"))
    tokenizer(vocabulary=str(vocabulary_path), lowercase=bool(lowercase),
              special_tokens_in_strings=bool(special_tokens_in_strings)).save_to_preset(str(folder))
    return folder


def _mappings(encoder, family):
    return tables.mappings(tables.ENCODERS[family], "keras_hub", encoder.num_layers,
                           skip=huggingface.no_projection(encoder))


def _backbone_class(family):
    return next(name for name, kind in BACKBONES.items() if kind == family)


def _tokenizer_entry(folder):
    """Our tokenizer entry from a keras-hub preset's `tokenizer.json`: its casing and special-token rule.

    keras-hub's own WordPiece pre-tokenization differs from BERT's in places
    (see README, "keras-hub presets"): ours, as google-research/bert and HF
    tokenize, is kept.
    """
    path = pathlib.Path(folder) / TOKENIZER_CONFIG_FILE
    settings = huggingface_config.read_json(path).get("config", {}) if path.is_file() else {}
    entry = {"vocabulary": VOCABULARY_FILE, "lowercase": bool(settings.get("lowercase", True))}
    if settings.get("special_tokens_in_strings"):
        entry["special_tokens_in_strings"] = True
    return entry


def _note_task_head(folder):
    """Warn that a keras-hub task preset's head (`task.json`, `task.weights.h5`) is not read: the encoder is."""
    path = pathlib.Path(folder) / TASK_CONFIG_FILE
    if path.is_file():
        task = huggingface_config.read_json(path)
        name = task.get("class_name", "?") if isinstance(task, dict) else "?"
        warnings.warn(f"{folder}: the keras-hub task {name}'s head ({TASK_CONFIG_FILE}, task.weights.h5) is not read; "
                      "only its backbone is (a fine-tuned task of ours starts its own head).", stacklevel=3)


def _check_writable(encoder, backbone_class):
    """Refuse an encoder whose activation keras-hub's backbones cannot compute; warn where outputs differ slightly
    (the exact GELU or another epsilon: about 1e-4 apart)."""
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
