"""Original Google BERT TensorFlow checkpoints (google-research/bert), read-only.

A release folder holds `bert_config.json`, `vocab.txt` and a TF1 checkpoint
`bert_model.ckpt.{index,data-*}` with variables named by the original
`modeling.py` scopes (`bert/encoder/layer_0/attention/self/query/kernel`,
...). Optimizer slots (`adam_m`, `adam_v`) and `global_step` are skipped.
The original code uses the tanh approximation of GELU, so `hidden_act:
"gelu"` becomes our "gelu_approximate".
"""

import json
import pathlib

from keras_bert_app.convert import weight_map
from keras_bert_app.convert.weight_map import ConversionError, Mapping

CONFIG_FILE = "bert_config.json"
VOCABULARY_FILE = "vocab.txt"
CHECKPOINT_PREFIX = "bert_model.ckpt"
# The original `hidden_act` names -> ours (`modeling.gelu` is the tanh form).
ACTIVATIONS = {"gelu": "gelu_approximate", "relu": "relu", "tanh": "tanh", "linear": "linear"}
# Variables that are training state, not weights.
IGNORED = ("adam_m", "adam_v", "global_step", "Momentum", "AdamWeightDecay")


def is_checkpoint(folder):
    """True for a folder with `bert_config.json` and a `*.ckpt.index`."""
    folder = pathlib.Path(folder)
    return (folder / CONFIG_FILE).is_file() and _checkpoint_prefix(folder) is not None


def read_config(folder):
    """Our preset config (`encoder`, `tokenizer`) from a Google release folder."""
    folder = pathlib.Path(folder)
    path = folder / CONFIG_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no {CONFIG_FILE}; expected an original BERT release folder.")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConversionError(f"{path}: malformed JSON ({error}).") from None
    activation = config.get("hidden_act", "gelu")
    if activation not in ACTIVATIONS:
        raise ConversionError(f"{path}: hidden_act {activation!r}; expected one of {sorted(ACTIVATIONS)}.")
    required = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
    missing = [key for key in required if key not in config]
    if missing:
        raise ConversionError(f"{path}: missing {missing}.")
    vocabulary = folder / VOCABULARY_FILE
    return {
        "name": folder.name,
        "description": f"Converted from the original BERT checkpoint {folder.name}.",
        "encoder": {
            "vocabulary_size": int(config["vocab_size"]),
            "num_layers": int(config["num_hidden_layers"]),
            "num_heads": int(config["num_attention_heads"]),
            "hidden_dim": int(config["hidden_size"]),
            "intermediate_dim": int(config["intermediate_size"]),
            "dropout": float(config.get("hidden_dropout_prob", 0.1)),
            "max_sequence_length": int(config.get("max_position_embeddings", 512)),
            "num_segments": int(config.get("type_vocab_size", 16)),
            "activation": ACTIVATIONS[activation],
            "layer_norm_epsilon": 1e-12,
            "initializer_range": float(config.get("initializer_range", 0.02)),
        },
        "tokenizer": {
            "vocabulary": VOCABULARY_FILE,
            "lowercase": weight_map.vocabulary_is_lowercase(vocabulary) if vocabulary.is_file() else True,
        },
    }


def encoder_mappings(num_layers):
    """`Mapping`s from the original variable names to our encoder variables."""

    def dense(source, target, layout=weight_map.SAME):
        return [
            Mapping(f"{source}/kernel", f"{target}/kernel", layout),
            Mapping(f"{source}/bias", f"{target}/bias", weight_map.SAME),
        ]

    def layer_norm(source, target):
        return [
            Mapping(f"{source}/gamma", f"{target}/gamma", weight_map.SAME),
            Mapping(f"{source}/beta", f"{target}/beta", weight_map.SAME),
        ]

    mappings = [
        Mapping(
            "bert/embeddings/word_embeddings",
            "embeddings/token_embedding/embeddings",
            weight_map.SAME,
        ),
        Mapping(
            "bert/embeddings/token_type_embeddings",
            "embeddings/segment_embedding/embeddings",
            weight_map.SAME,
        ),
        Mapping(
            "bert/embeddings/position_embeddings",
            "embeddings/position_embeddings",
            weight_map.SAME,
        ),
        *layer_norm("bert/embeddings/LayerNorm", "embeddings/layer_norm"),
    ]
    for index in range(num_layers):
        source = f"bert/encoder/layer_{index}"
        target = f"transformer_layer_{index}"
        for name in ("query", "key", "value"):
            mappings += [
                Mapping(
                    f"{source}/attention/self/{name}/kernel",
                    f"{target}/attention/{name}/kernel",
                    weight_map.HEADS_KERNEL,
                ),
                Mapping(
                    f"{source}/attention/self/{name}/bias",
                    f"{target}/attention/{name}/bias",
                    weight_map.HEADS_BIAS,
                ),
            ]
        mappings += dense(
            f"{source}/attention/output/dense",
            f"{target}/attention/attention_output",
            weight_map.MERGE_HEADS_KERNEL,
        )
        mappings += layer_norm(
            f"{source}/attention/output/LayerNorm",
            f"{target}/attention_layer_norm",
        )
        mappings += dense(f"{source}/intermediate/dense", f"{target}/intermediate")
        mappings += dense(f"{source}/output/dense", f"{target}/output")
        mappings += layer_norm(f"{source}/output/LayerNorm", f"{target}/output_layer_norm")
    mappings += dense("bert/pooler/dense", "pooler")
    return mappings


def read_tensors(path):
    """`(get_tensor, names, checkpoint_prefix)` for a release folder or a checkpoint prefix."""
    import tensorflow as tf

    path = pathlib.Path(path)
    prefix = _checkpoint_prefix(path) if path.is_dir() else path
    if prefix is None or not pathlib.Path(f"{prefix}.index").is_file():
        raise FileNotFoundError(
            f"{path}: no TF checkpoint ({CHECKPOINT_PREFIX}.index + .data-*); "
            "expected an original BERT release folder or a checkpoint prefix."
        )
    reader = tf.train.load_checkpoint(str(prefix))
    names = [name for name in reader.get_variable_to_shape_map() if not any(part in name for part in IGNORED)]
    present = set(names)

    def get_tensor(name):
        return reader.get_tensor(name) if name in present else None

    return get_tensor, names, str(prefix)


def head_mappings(next_sentence=True):
    """`Mapping`s from the original `cls/*` variables to `BertPretrainer`'s heads."""
    mappings = [
        Mapping(
            "cls/predictions/transform/dense/kernel",
            "masked_lm_head/dense/kernel",
            weight_map.SAME,
        ),
        Mapping(
            "cls/predictions/transform/dense/bias",
            "masked_lm_head/dense/bias",
            weight_map.SAME,
        ),
        Mapping(
            "cls/predictions/transform/LayerNorm/gamma",
            "masked_lm_head/layer_norm/gamma",
            weight_map.SAME,
        ),
        Mapping(
            "cls/predictions/transform/LayerNorm/beta",
            "masked_lm_head/layer_norm/beta",
            weight_map.SAME,
        ),
        Mapping("cls/predictions/output_bias", "masked_lm_head/output_bias", weight_map.SAME),
    ]
    if next_sentence:
        mappings += [
            # output_weights is [2, hidden]: our kernel transposed.
            Mapping(
                "cls/seq_relationship/output_weights",
                "next_sentence_head/dense/kernel",
                weight_map.TRANSPOSED,
            ),
            Mapping(
                "cls/seq_relationship/output_bias",
                "next_sentence_head/dense/bias",
                weight_map.SAME,
            ),
        ]
    return mappings


def load_weights(model, path):
    """Fill a `BertEncoder` or a `BertPretrainer` from an original BERT checkpoint.

    Args:
        model: `BertEncoder`, or `BertPretrainer` (its heads are filled from
            `cls/predictions/*` and `cls/seq_relationship/*` when present).
        path: a release folder or a checkpoint prefix.

    Returns:
        bool. True when pretraining heads were loaded.
    """
    get_tensor, names, source_name = read_tensors(path)
    encoder = getattr(model, "encoder", model)
    mappings = encoder_mappings(encoder.num_layers)
    ignored = ()
    heads = hasattr(model, "masked_lm_head") and "cls/predictions/output_bias" in names
    if heads:
        mappings += head_mappings(model.next_sentence_head is not None)
        if model.next_sentence_head is None:
            ignored = ("cls/seq_relationship/",)
    else:
        ignored = ("cls/",)
    # Other top-level variables (a fine-tuned task's output layer) are not BERT's.
    names = [name for name in names if name.startswith(("bert/", "cls/"))]
    weight_map.check_unused(names, {mapping.source for mapping in mappings}, source_name, ignored)
    weight_map.load_mapped(model, mappings, get_tensor, source_name)
    return heads


def _checkpoint_prefix(folder):
    if (folder / f"{CHECKPOINT_PREFIX}.index").is_file():
        return folder / CHECKPOINT_PREFIX
    indexes = sorted(folder.glob("*.ckpt*.index"))
    return indexes[-1].with_suffix("") if indexes else None
