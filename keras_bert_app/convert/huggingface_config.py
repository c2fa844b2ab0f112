"""Hugging Face `config.json` of BERT, ELECTRA and ALBERT checkpoints, as our preset config and back.

Our config's "architecture" entry records the family ("electra", "albert";
none for BERT). ELECTRA's `embedding_size` becomes `embedding_dim` when it
differs from `hidden_size`; ALBERT always maps E to H (configs our encoder
cannot build the same way, and the v1 `net_structure_type` options, are
refused), with the SentencePiece model `spiece.model` as its tokenizer.
"""

import json
import pathlib

from keras_bert_app.convert import tokenizer_json, weight_map
from keras_bert_app.convert.family import ALBERT, BERT, ELECTRA
from keras_bert_app.convert.weight_map import ConversionError

CONFIG_FILE = "config.json"
VOCABULARY_FILE = "vocab.txt"
SENTENCEPIECE_FILE = "spiece.model"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
WEIGHTS_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
MODEL_TYPES = {"bert": BERT, "electra": ELECTRA, "albert": ALBERT}
# HF `hidden_act` (transformers' ACT2FN names) -> our activation name, and back. HF's other
# names (gelu_10's clipping, leaky_relu's slope 0.01, laplace, relu2, ...) are refused.
ACTIVATIONS = {
    "gelu": "gelu", "gelu_python": "gelu", "silu": "silu", "swish": "silu",
    **dict.fromkeys(("gelu_new", "gelu_pytorch_tanh", "gelu_fast", "gelu_accurate", "gelu_python_tanh"), "gelu_approximate"),
    **{name: name for name in ("quick_gelu", "relu", "relu6", "mish", "tanh", "sigmoid", "linear")},
}
ACTIVATIONS_OUT = {"gelu": "gelu", "gelu_exact": "gelu", "gelu_approximate": "gelu_new",
                   **{ours: ours for ours in set(ACTIVATIONS.values()) - {"gelu", "gelu_approximate"}}}
# Classes without the next-sentence (sentence-order) head: the converted pretrainer is masked-LM only.
MASKED_LM_ARCHITECTURES = ("BertForMaskedLM", "BertLMHeadModel", "AlbertForMaskedLM")
REQUIRED_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
ELECTRA_ARCHITECTURES = tuple(f"ElectraFor{name}" for name in (
    "PreTraining", "MaskedLM", "SequenceClassification", "TokenClassification", "QuestionAnswering", "MultipleChoice"))


def is_checkpoint(folder):
    """True for a folder with an HF `config.json` (a `model_type`) and weights."""
    folder = pathlib.Path(folder)
    try:
        config = read_json(folder / CONFIG_FILE) if (folder / CONFIG_FILE).is_file() else None
    except ConversionError:
        return False
    return isinstance(config, dict) and "model_type" in config and any((folder / name).is_file() for name in WEIGHTS_FILES)


def checkpoint_family(path):
    """The family of an HF checkpoint folder (or weights file): its `config.json`'s model_type; BERT without one."""
    path = pathlib.Path(path)
    config_path = (path.parent if path.is_file() else path) / CONFIG_FILE
    config = read_json(config_path) if config_path.is_file() else {}
    return MODEL_TYPES.get(config.get("model_type") if isinstance(config, dict) else None, BERT)


def read_config(folder):
    """Our preset config (`encoder`, `tokenizer`, "architecture" but for BERT) from an HF checkpoint folder.

    Raises:
        ConversionError: another `model_type`, an ELECTRA class we do not
            know, or settings our encoder cannot express, named with the field.
    """
    folder = pathlib.Path(folder)
    path = folder / CONFIG_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no {CONFIG_FILE}; expected a Hugging Face checkpoint folder.")
    config = read_json(path)
    family = MODEL_TYPES.get(config.get("model_type"))
    if family is None:
        raise ConversionError(
            f"{path}: model_type is {config.get('model_type')!r}; this converter reads BERT, ELECTRA and ALBERT "
            "checkpoints (model_type 'bert', 'electra' or 'albert'), not other architectures."
        )
    name = config.get("_name_or_path") or folder.name
    if family == ALBERT:
        ours = albert_config(path, config, folder, folder / SENTENCEPIECE_FILE)
        tokenizer_path = folder / tokenizer_json.TOKENIZER_FILE
        if not (folder / SENTENCEPIECE_FILE).is_file() and tokenizer_path.is_file():  # transformers 5
            ours["tokenizer"].update(tokenizer_json.unigram_settings(tokenizer_path, ours["encoder"]["vocabulary_size"]))
        return ours
    ours = config_from_dict(path, config, folder)
    if family == ELECTRA:
        architectures = config.get("architectures") or ["ElectraModel"]
        if not isinstance(architectures, list) or len(architectures) != 1 or \
                architectures[0] not in ("ElectraModel", *ELECTRA_ARCHITECTURES):
            raise ConversionError(f"{path}: field 'architectures' is {architectures!r}; expected one of "
                                  f"{['ElectraModel', *ELECTRA_ARCHITECTURES]} (an ELECTRA encoder, discriminator, "
                                  "generator or task model).")
        embedding_size = int(config.get("embedding_size") or config["hidden_size"])
        if embedding_size != ours["encoder"]["hidden_dim"]:
            ours["encoder"]["embedding_dim"] = embedding_size
        ours.update(description=f"Converted from the Hugging Face ELECTRA checkpoint {name} ({architectures[0]}).",
                    architecture=ELECTRA, checkpoint_architecture=architectures[0])
    return ours


def config_from_dict(path, config, folder):
    """Our preset config from a parsed BERT-style config (HF's field names; `path` is named in errors)."""
    # BERT's learned positions and bidirectional attention (`is_decoder` makes transformers' attention causal).
    for field, expected in (("position_embedding_type", "absolute"), ("is_decoder", False)):
        if config.get(field, expected) != expected:
            raise ConversionError(f"{path}: field {field!r} is {config[field]!r}; expected {expected!r} (BERT's encoder).")
    activation = config.get("hidden_act", "gelu")
    if activation not in ACTIVATIONS:
        raise ConversionError(f"{path}: field 'hidden_act' is {activation!r}; expected one of {sorted(ACTIVATIONS)}.")
    missing = [key for key in REQUIRED_FIELDS if key not in config]
    if missing:
        raise ConversionError(f"{path}: missing field(s) {missing}; expected the sizes of the model.")
    encoder = {
        "vocabulary_size": int(config["vocab_size"]),
        "num_layers": int(config["num_hidden_layers"]),
        "num_heads": int(config["num_attention_heads"]),
        "hidden_dim": int(config["hidden_size"]),
        "intermediate_dim": int(config["intermediate_size"]),
        "dropout": float(config.get("hidden_dropout_prob", 0.1)),
        "max_sequence_length": int(config.get("max_position_embeddings", 512)),
        "num_segments": int(config.get("type_vocab_size", 2)),
        "activation": ACTIVATIONS[activation],
        "layer_norm_epsilon": float(config.get("layer_norm_eps", 1e-12)),
        "initializer_range": float(config.get("initializer_range", 0.02)),
    }
    return {
        "name": folder.name,
        "description": f"Converted from the Hugging Face checkpoint {config.get('_name_or_path') or folder.name}.",
        "encoder": encoder,
        "tokenizer": {"vocabulary": VOCABULARY_FILE, "lowercase": _lowercase(folder)},
        # False for a masked-LM class (no sentence head): `convert` then writes a masked-LM-only pretrainer.
        "next_sentence_prediction": not set(config.get("architectures") or ()) & set(MASKED_LM_ARCHITECTURES),
    }


def albert_config(path, config, folder, sentencepiece_path):
    """Our preset config from a parsed ALBERT config (HF's field names; `path` is named in errors)."""
    for field, expected in (("inner_group_num", 1), ("net_structure_type", 0), ("gap_size", 0),
                            ("num_memory_blocks", 0), ("down_scale_factor", 1)):
        if config.get(field, expected) != expected:
            raise ConversionError(f"{path}: field {field!r} is {config[field]!r}; expected {expected} (ALBERT v1/v2).")
    # transformers' ALBERT attention is never causal, whatever `is_decoder` says.
    ours = config_from_dict(path, {**config, "is_decoder": False}, folder)
    encoder = ours["encoder"]
    embedding_size = int(config.get("embedding_size", 128))
    if embedding_size == encoder["hidden_dim"]:
        raise ConversionError(
            f"{path}: field 'embedding_size' equals 'hidden_size' ({embedding_size}); expected them to differ "
            "(ALBERT's E -> H mapping is kept only for factorized embeddings)."
        )
    groups = int(config.get("num_hidden_groups", 1))
    if groups < 1 or encoder["num_layers"] % groups:
        raise ConversionError(f"{path}: field 'num_hidden_groups' is {groups}; expected a divisor of "
                              f"num_hidden_layers ({encoder['num_layers']}).")
    encoder.update(embedding_dim=embedding_size, num_groups=groups)
    sentencepiece_path = pathlib.Path(sentencepiece_path)
    if sentencepiece_path.is_file():
        from keras_bert_app.preprocessing import sentencepiece_model

        _, pieces, _ = sentencepiece_model.read_model(sentencepiece_path, argument="source")
        if len(pieces) != encoder["vocabulary_size"]:
            raise ConversionError(f"{sentencepiece_path}: the SentencePiece model has {len(pieces)} pieces but the "
                                  f"token embedding has {encoder['vocabulary_size']} rows; expected the same number.")
    settings = read_json(folder / TOKENIZER_CONFIG_FILE) if (folder / TOKENIZER_CONFIG_FILE).is_file() else {}
    tokenizer = {"type": "sentencepiece", "sentencepiece_model": sentencepiece_path.name,
                 "lowercase": bool(settings.get("do_lower_case", True)),
                 "strip_accents": not settings.get("keep_accents", False)}
    name = config.get("_name_or_path") or folder.name
    return {**ours, "description": f"Converted from the Hugging Face ALBERT checkpoint {name}.", "architecture": ALBERT,
            "encoder": encoder, "tokenizer": tokenizer}


def hf_config(encoder, architecture, family=BERT):
    """An HF `BertConfig`, `ElectraConfig` or `AlbertConfig` dict for our encoder."""
    if encoder.activation not in ACTIVATIONS_OUT:
        raise ConversionError(
            f"Activation {encoder.activation!r} has no HF name; expected one of {sorted(ACTIVATIONS_OUT)}."
        )
    config = {
        "architectures": [architecture],
        "model_type": family,
        "vocab_size": encoder.vocabulary_size,
        "hidden_size": encoder.hidden_dim,
        "num_hidden_layers": encoder.num_layers,
        "num_attention_heads": encoder.num_heads,
        "intermediate_size": encoder.intermediate_dim,
        "hidden_act": ACTIVATIONS_OUT[encoder.activation],
        "hidden_dropout_prob": encoder.dropout,
        "attention_probs_dropout_prob": encoder.dropout,
        "max_position_embeddings": encoder.max_sequence_length,
        "type_vocab_size": encoder.num_segments,
        "initializer_range": encoder.initializer_range,
        "layer_norm_eps": encoder.layer_norm_epsilon,
        "pad_token_id": 0,
    }
    if family != ALBERT:
        config["position_embedding_type"] = "absolute"
    if family != BERT:
        config.update(embedding_size=encoder.embedding_dim or encoder.hidden_dim, tie_word_embeddings=True)
    if family == ALBERT:
        if encoder.embedding_dim in (None, encoder.hidden_dim):
            raise ConversionError(
                f"An ALBERT checkpoint maps embeddings of width E to H; this encoder has embedding_dim="
                f"{encoder.embedding_dim} and hidden_dim={encoder.hidden_dim} (expected E != H)."
            )
        config.update(num_hidden_groups=encoder.num_groups or encoder.num_layers, inner_group_num=1,
                      classifier_dropout_prob=0.1, bos_token_id=2, eos_token_id=3)
    return config


def read_json(path):
    """A JSON file's value; ConversionError naming the file when malformed."""
    try:
        return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConversionError(f"{path}: malformed JSON ({error}).") from None


def write_json(path, value):
    pathlib.Path(path).write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def _lowercase(folder):
    """`do_lower_case` of the folder's tokenizer_config.json, else whether its vocab.txt is uncased (True without)."""
    tokenizer_config = folder / TOKENIZER_CONFIG_FILE
    if tokenizer_config.is_file():
        value = read_json(tokenizer_config).get("do_lower_case")
        if isinstance(value, bool):
            return value
    if (folder / VOCABULARY_FILE).is_file():
        return weight_map.vocabulary_is_lowercase(folder / VOCABULARY_FILE)
    return True
