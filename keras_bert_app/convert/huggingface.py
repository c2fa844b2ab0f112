"""Hugging Face transformers BERT checkpoints, in and out.

A checkpoint folder holds `config.json` (a `BertConfig`), `model.safetensors`
(or shards listed in `model.safetensors.index.json`) and `vocab.txt`. Both
the `BertModel` layout (`embeddings.word_embeddings.weight`, ...) and the
`BertForPreTraining` layout (`bert.` prefix, `cls.predictions.*`,
`cls.seq_relationship.*`) are read, as is `BertForMaskedLM` (no NSP head, no
pooler); the MLM output layer must be tied to the token embeddings.
Safetensors are read with NumPy (no torch); a `pytorch_model.bin` is read
only when its path is given explicitly and torch is installed, with
`torch.load(weights_only=True)`.
"""

import json
import pathlib
import warnings

from keras_bert_app.convert import weight_map
from keras_bert_app.convert.weight_map import ConversionError, Mapping

CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX_FILE = "model.safetensors.index.json"
PYTORCH_FILE = "pytorch_model.bin"
VOCABULARY_FILE = "vocab.txt"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"

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
# Buffers that are not weights.
IGNORED = ("position_ids",)


def is_checkpoint(folder):
    """True for a folder with an HF BERT-style `config.json` and weights."""
    folder = pathlib.Path(folder)
    try:
        config = _read_json(folder / CONFIG_FILE) if (folder / CONFIG_FILE).is_file() else None
    except ConversionError:
        return False
    if not isinstance(config, dict) or "model_type" not in config:
        return False
    return any((folder / name).is_file() for name in (SAFETENSORS_FILE, SAFETENSORS_INDEX_FILE, PYTORCH_FILE))


def read_config(folder):
    """Our preset config (`encoder`, `tokenizer`) from an HF checkpoint folder."""
    folder = pathlib.Path(folder)
    path = folder / CONFIG_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no {CONFIG_FILE}; expected a Hugging Face checkpoint folder.")
    config = _read_json(path)
    model_type = config.get("model_type")
    if model_type != "bert":
        raise ConversionError(
            f"{path}: model_type is {model_type!r}; this converter reads BERT and ELECTRA "
            "checkpoints (model_type 'bert' or 'electra'), not other architectures."
        )
    return config_from_dict(path, config, folder)


def config_from_dict(path, config, folder):
    """Our preset config from a parsed BERT-style HF `config.json` (`path` is named in errors)."""
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
    tokenizer = {"vocabulary": VOCABULARY_FILE, "lowercase": _lowercase(folder)}
    return {
        "name": folder.name,
        "description": "Converted from the Hugging Face checkpoint "
        f"{config.get('_name_or_path') or folder.name}.",
        "encoder": encoder,
        "tokenizer": tokenizer,
        # False for a masked-LM class (no sentence head): `convert` then writes a masked-LM-only pretrainer.
        "next_sentence_prediction": not set(config.get("architectures") or ()) & set(MASKED_LM_ARCHITECTURES),
    }


def encoder_mappings(num_layers, prefix="", layer_norm_names=("weight", "bias")):
    """`Mapping`s from HF BERT tensor names to our encoder variables."""
    gamma, beta = layer_norm_names

    def dense(source, target, layout=weight_map.TRANSPOSED):
        return [
            Mapping(f"{prefix}{source}.weight", f"{target}/kernel", layout),
            Mapping(f"{prefix}{source}.bias", f"{target}/bias", weight_map.SAME),
        ]

    def layer_norm(source, target):
        return [
            Mapping(f"{prefix}{source}.{gamma}", f"{target}/gamma", weight_map.SAME),
            Mapping(f"{prefix}{source}.{beta}", f"{target}/beta", weight_map.SAME),
        ]

    embeddings = (("word_embeddings", "token_embedding/embeddings"),
                  ("token_type_embeddings", "segment_embedding/embeddings"),
                  ("position_embeddings", "position_embeddings"))
    mappings = [Mapping(f"{prefix}embeddings.{name}.weight", f"embeddings/{target}", weight_map.SAME)
                for name, target in embeddings]
    mappings += layer_norm("embeddings.LayerNorm", "embeddings/layer_norm")
    for index in range(num_layers):
        source = f"encoder.layer.{index}"
        target = f"transformer_layer_{index}"
        for name in ("query", "key", "value"):
            mappings += [
                Mapping(f"{prefix}{source}.attention.self.{name}.weight", f"{target}/attention/{name}/kernel",
                        weight_map.HEADS_KERNEL_TRANSPOSED),
                Mapping(f"{prefix}{source}.attention.self.{name}.bias", f"{target}/attention/{name}/bias",
                        weight_map.HEADS_BIAS),
            ]
        mappings += dense(f"{source}.attention.output.dense", f"{target}/attention/attention_output",
                          weight_map.MERGE_HEADS_KERNEL_TRANSPOSED)
        mappings += layer_norm(f"{source}.attention.output.LayerNorm", f"{target}/attention_layer_norm")
        mappings += dense(f"{source}.intermediate.dense", f"{target}/intermediate")
        mappings += dense(f"{source}.output.dense", f"{target}/output")
        mappings += layer_norm(f"{source}.output.LayerNorm", f"{target}/output_layer_norm")
    mappings += dense("pooler.dense", "pooler")
    return mappings


def read_tensors(path):
    """`{name: NumPy array}` from a checkpoint folder or an explicit weights file.

    Args:
        path: a folder with `model.safetensors` (or an index of shards), or the
            path of a `.safetensors` or `.bin` file. A `.bin` (pickle) file is
            read only when named explicitly, with torch's `weights_only=True`.

    Returns:
        (tensors, file_name) where file_name is named in errors.
    """
    path = pathlib.Path(path)
    if path.is_dir():
        if (path / SAFETENSORS_FILE).is_file():
            return _read_safetensors([path / SAFETENSORS_FILE]), str(path / SAFETENSORS_FILE)
        if (path / SAFETENSORS_INDEX_FILE).is_file():
            index = _read_json(path / SAFETENSORS_INDEX_FILE)
            shards = sorted(set(index.get("weight_map", {}).values()))
            return _read_safetensors([path / shard for shard in shards]), str(path / SAFETENSORS_INDEX_FILE)
        if (path / PYTORCH_FILE).is_file():
            raise ConversionError(
                f"{path} has only {PYTORCH_FILE} (a pickle file). Pass the file "
                f"itself ({path / PYTORCH_FILE}) to load it with torch "
                "(weights_only=True), or convert it to model.safetensors."
            )
        raise FileNotFoundError(f"{path}: no {SAFETENSORS_FILE} or {PYTORCH_FILE}.")
    if path.suffix == ".safetensors":
        return _read_safetensors([path]), str(path)
    if path.suffix == ".bin":
        return _read_pytorch(path), str(path)
    raise FileNotFoundError(f"{path}: expected a checkpoint folder, a .safetensors or a .bin file.")


def head_mappings(layer_norm_names=("weight", "bias"), next_sentence=True):
    """`Mapping`s from HF `cls.*` tensors to `BertPretrainer`'s head variables.

    The MLM decoder weight is tied to the word embeddings and not mapped.
    """
    gamma, beta = layer_norm_names
    transform = "cls.predictions.transform"
    mappings = [
        Mapping(f"{transform}.dense.weight", "masked_lm_head/dense/kernel", weight_map.TRANSPOSED),
        Mapping(f"{transform}.dense.bias", "masked_lm_head/dense/bias", weight_map.SAME),
        Mapping(f"{transform}.LayerNorm.{gamma}", "masked_lm_head/layer_norm/gamma", weight_map.SAME),
        Mapping(f"{transform}.LayerNorm.{beta}", "masked_lm_head/layer_norm/beta", weight_map.SAME),
        Mapping("cls.predictions.bias", "masked_lm_head/output_bias", weight_map.SAME),
    ]
    if next_sentence:
        mappings += [
            Mapping("cls.seq_relationship.weight", "next_sentence_head/dense/kernel", weight_map.TRANSPOSED),
            Mapping("cls.seq_relationship.bias", "next_sentence_head/dense/bias", weight_map.SAME),
        ]
    return mappings


def load_weights(model, path):
    """Fill a `BertEncoder` or a `BertPretrainer` from an HF checkpoint.

    Args:
        model: `BertEncoder`, or `BertPretrainer` (its heads are filled when
            the checkpoint has `cls.predictions.*`, as `BertForPreTraining`;
            a `BertForMaskedLM` has no NSP head, which then stays fresh,
            with a warning). A checkpoint without a pooler (`BertForMaskedLM`,
            token classification, ...) leaves ours fresh, with a warning.
        path: a checkpoint folder or an explicit weights file.

    Raises:
        ConversionError: an untied MLM output layer (`tie_word_embeddings`
            false), which our head, scoring against the token embeddings,
            cannot hold; tensors that do not fit the config.

    Returns:
        bool. True when pretraining heads were loaded.
    """
    tensors, source_name = read_tensors(path)
    encoder = getattr(model, "encoder", model)
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""
    layer_norm_names = _layer_norm_names(tensors)
    ignored = IGNORED + ("cls.predictions.decoder.",)
    tensors = with_decoder_bias(tensors, "cls.predictions.")
    heads = hasattr(model, "masked_lm_head") and "cls.predictions.bias" in tensors
    if heads:
        weight_map.check_tied_output(tensors, "cls.predictions.decoder.weight",
                                     f"{prefix}embeddings.word_embeddings.weight", source_name)
    absent = absent_layers(model, tensors, f"{prefix}pooler.dense.weight", heads and "cls.seq_relationship.weight")
    mappings = without_pooler(encoder_mappings(encoder.num_layers, prefix, layer_norm_names), absent)
    if heads:
        next_sentence = getattr(model, "next_sentence_head", None) is not None and "next_sentence_head" not in absent
        mappings += head_mappings(layer_norm_names, next_sentence)
        if not next_sentence:
            ignored += ("cls.seq_relationship.",)
    else:
        ignored += ("cls.",)
    # With the `bert.` prefix, other top-level tensors belong to a task head.
    names = [name for name in tensors if name.startswith((prefix, "cls."))]
    weight_map.check_unused(names, {mapping.source for mapping in mappings}, source_name, ignored)
    weight_map.load_mapped(model, mappings, tensors.get, source_name)
    warn_fresh(absent, source_name)
    return heads


def save(model, folder, vocabulary_path, lowercase):
    """Write an HF checkpoint folder from our encoder or pretrainer.

    A `BertEncoder` becomes a `BertModel` (no prefix); a `BertPretrainer` a
    `BertForPreTraining` (`bert.` prefix, `cls.*` heads), or without its NSP
    head a `BertForMaskedLM` (without our pooler: that class has none, and
    transformers reports its tensors as unexpected keys). Writes
    `config.json`, `model.safetensors`, `vocab.txt` and
    `tokenizer_config.json` (`do_lower_case`), which transformers'
    `from_pretrained` reads.
    """
    encoder = getattr(model, "encoder", model)
    weight_map.check_vocabulary(vocabulary_path, encoder.vocabulary_size)
    if hasattr(model, "masked_lm_head"):
        next_sentence = model.next_sentence_head is not None
        architecture = "BertForPreTraining" if next_sentence else "BertForMaskedLM"
        mappings = encoder_mappings(encoder.num_layers, "bert.") + head_mappings(next_sentence=next_sentence)
        if not next_sentence:
            mappings = without_pooler(mappings, {"pooler"})
    else:
        architecture = "BertModel"
        mappings = encoder_mappings(encoder.num_layers)
    tensors = weight_map.export_mapped(model, mappings)
    return write_folder(folder, tensors, hf_config(encoder, architecture), vocabulary_path, lowercase)


def write_folder(folder, tensors, config, vocabulary_path, lowercase):
    """An HF BERT folder: `model.safetensors`, `config.json`, `vocab.txt`, `tokenizer_config.json`."""
    from safetensors.numpy import save_file

    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / SAFETENSORS_FILE), metadata={"format": "pt"})
    _write_json(folder / CONFIG_FILE, config)
    _write_json(folder / TOKENIZER_CONFIG_FILE, {"do_lower_case": bool(lowercase), "tokenizer_class": "BertTokenizer"})
    (folder / VOCABULARY_FILE).write_text(pathlib.Path(vocabulary_path).read_text(encoding="utf-8"), encoding="utf-8")
    return folder


def hf_config(encoder, architecture):
    """An HF `BertConfig` dict for our encoder."""
    if encoder.activation not in ACTIVATIONS_OUT:
        raise ConversionError(
            f"Activation {encoder.activation!r} has no HF name; expected one of "
            f"{sorted(ACTIVATIONS_OUT)}."
        )
    return {
        "architectures": [architecture],
        "model_type": "bert",
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
        "position_embedding_type": "absolute",
        "pad_token_id": 0,
    }


def with_decoder_bias(tensors, head):
    """The MLM output bias is the one HF's forward adds: `{head}decoder.bias` when the file has it (tied
    checkpoints hold `{head}bias`, and may hold an equal copy as `{head}decoder.bias`)."""
    if f"{head}decoder.bias" in tensors:
        return {**tensors, f"{head}bias": tensors[f"{head}decoder.bias"]}
    return tensors


def absent_layers(model, tensors, pooler_weight, sentence_weight=None):
    """Our layers the checkpoint has no tensors for: "pooler" (`BertForMaskedLM`, token classification,
    question answering) and a pretrainer's "next_sentence_head" (masked-LM classes; `sentence_weight`
    None when the heads are not loaded). They keep fresh weights (`warn_fresh`)."""
    absent = set() if pooler_weight in tensors else {"pooler"}
    if sentence_weight and getattr(model, "next_sentence_head", None) is not None and sentence_weight not in tensors:
        absent.add("next_sentence_head")
    return absent


def warn_fresh(absent, source_name):
    """One warning naming the layers `absent_layers` found, once the weights are loaded."""
    if absent:
        warnings.warn(f"{source_name} has no tensors for our {' and '.join(sorted(absent))} (a masked-LM or task "
                      "checkpoint): those keep fresh weights.", stacklevel=3)


def without_pooler(mappings, absent):
    """The mappings less the pooler's when the checkpoint has none."""
    return [mapping for mapping in mappings if "pooler" not in absent or not mapping.target.startswith("pooler/")]


def _layer_norm_names(tensors):
    """Old checkpoints name LayerNorm parameters gamma/beta, new ones weight/bias."""
    if any(name.endswith("LayerNorm.gamma") for name in tensors):
        return ("gamma", "beta")
    return ("weight", "bias")


def _lowercase(folder):
    tokenizer_config = folder / TOKENIZER_CONFIG_FILE
    if tokenizer_config.is_file():
        value = _read_json(tokenizer_config).get("do_lower_case")
        if isinstance(value, bool):
            return value
    if (folder / VOCABULARY_FILE).is_file():
        return weight_map.vocabulary_is_lowercase(folder / VOCABULARY_FILE)
    return True


def _read_safetensors(paths):
    from safetensors.numpy import load_file

    tensors = {}
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"{path}: safetensors shard not found.")
        tensors.update(load_file(str(path)))
    return tensors


def _read_pytorch(path):
    try:
        import torch
    except ImportError:
        raise ConversionError(
            f"{path} is a PyTorch pickle file; reading it needs torch (pip install "
            "torch), or convert it to model.safetensors."
        ) from None
    state = torch.load(str(path), map_location="cpu", weights_only=True)
    return {
        name: tensor.float().numpy() if tensor.is_floating_point() else tensor.numpy()
        for name, tensor in state.items()
    }


def _read_json(path):
    try:
        return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConversionError(f"{path}: malformed JSON ({error}).") from None


def _write_json(path, value):
    pathlib.Path(path).write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
