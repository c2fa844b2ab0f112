"""Hugging Face transformers ALBERT checkpoints (`model_type: "albert"`), in and out.

A folder holds `config.json` (an `AlbertConfig`), `model.safetensors` and
`spiece.model` (the SentencePiece model; `albert/albert-base-v2` has this
layout), or, saved by transformers 5, `tokenizer.json` in its place (of which
`tokenizer_json` makes the spiece.model, and which sets our tokenizer's
`lowercase` and `strip_accents`). These layouts are read and written:
- `AlbertModel`: `embeddings.*` (E wide), `encoder.embedding_hidden_mapping_in`
  (E -> H: our `embedding_projection`), `encoder.albert_layer_groups.{g}.albert_layers.0.*`
  (our shared block `transformer_layer_{g}`), `pooler`.
- `AlbertForPreTraining`: `albert.` prefix plus `predictions.*` (our
  `MaskedLMHead`; the decoder matrix is the tied token embedding) and
  `sop_classifier.classifier` (our `NextSentenceHead`, scoring the
  sentence order: label 1 = swapped).
- `AlbertForMaskedLM`: the same without `sop_classifier` (nor a pooler):
  a masked-LM-only `BertPretrainer`.
Task checkpoints (`AlbertFor...`) give their encoder (a fresh pooler where they have none). ALBERT always maps E to
H, so a config with `embedding_size == hidden_size` (which our encoder
builds without a projection) is refused, as are `inner_group_num != 1` and
the v1 `net_structure_type` options no released model uses.
"""

import json
import pathlib

from keras_bert_app.convert import huggingface, tokenizer_json, weight_map
from keras_bert_app.convert.weight_map import ConversionError, Mapping

MODEL_TYPE = "albert"
SENTENCEPIECE_FILE = "spiece.model"
ENCODER_ARCHITECTURE = "AlbertModel"
PRETRAINING_ARCHITECTURE = "AlbertForPreTraining"
MASKED_LM_ARCHITECTURE = "AlbertForMaskedLM"  # no sentence-order head, no pooler (nor is ours written)
PREFIX = "albert."
# The `tokenizer` entry of an ALBERT preset (`preprocessing.sentencepiece_tokenizer`).
TOKENIZER_TYPE = "sentencepiece"


def is_albert(folder):
    """True when the folder's `config.json` says `model_type: "albert"`."""
    path = pathlib.Path(folder) / huggingface.CONFIG_FILE
    try:
        config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(config, dict) and config.get("model_type") == MODEL_TYPE


def read_config(folder):
    """Our preset config (`encoder` with `embedding_dim` and `num_groups`, a SentencePiece `tokenizer`).

    Raises:
        ConversionError: a config our encoder cannot express, named with the
            field; a `spiece.model` that is no SentencePiece model or whose
            pieces do not match `vocab_size`; without one, a `tokenizer.json`
            that we cannot reproduce or whose pieces do not match.
    """
    folder = pathlib.Path(folder)
    path = folder / huggingface.CONFIG_FILE
    config = huggingface._read_json(path)
    if config.get("model_type") != MODEL_TYPE:
        raise ConversionError(f"{path}: model_type is {config.get('model_type')!r}; expected {MODEL_TYPE!r}.")
    ours = config_from_dict(path, config, folder, folder / SENTENCEPIECE_FILE)
    tokenizer_path = folder / tokenizer_json.TOKENIZER_FILE
    if not (folder / SENTENCEPIECE_FILE).is_file() and tokenizer_path.is_file():  # transformers 5
        ours["tokenizer"].update(tokenizer_json.unigram_settings(tokenizer_path, ours["encoder"]["vocabulary_size"]))
    return ours


def config_from_dict(path, config, folder, sentencepiece_path):
    """Our preset config from a parsed ALBERT config (HF's field names; `path` is named in errors)."""
    for field, expected in (("inner_group_num", 1), ("net_structure_type", 0), ("gap_size", 0),
                            ("num_memory_blocks", 0), ("down_scale_factor", 1)):
        if config.get(field, expected) != expected:
            raise ConversionError(f"{path}: field {field!r} is {config[field]!r}; expected {expected} (ALBERT v1/v2).")
    # transformers' ALBERT attention is never causal, whatever `is_decoder` says.
    ours = huggingface.config_from_dict(path, {**config, "model_type": "bert", "is_decoder": False}, folder)
    encoder = ours["encoder"]
    embedding_size = int(config.get("embedding_size", 128))
    if embedding_size == encoder["hidden_dim"]:
        raise ConversionError(
            f"{path}: field 'embedding_size' equals 'hidden_size' ({embedding_size}); expected them to differ "
            "(ALBERT's E -> H mapping is kept only for factorized embeddings)."
        )
    groups = int(config.get("num_hidden_groups", 1))
    if groups < 1 or encoder["num_layers"] % groups:
        raise ConversionError(
            f"{path}: field 'num_hidden_groups' is {groups}; expected a divisor of num_hidden_layers "
            f"({encoder['num_layers']})."
        )
    encoder["embedding_dim"] = embedding_size
    encoder["num_groups"] = groups
    check_sentencepiece_model(sentencepiece_path, encoder["vocabulary_size"])
    name = config.get("_name_or_path") or folder.name
    return {
        "name": folder.name,
        "description": f"Converted from the Hugging Face ALBERT checkpoint {name}.",
        "architecture": MODEL_TYPE,
        "encoder": encoder,
        "tokenizer": {**tokenizer_config(folder), "sentencepiece_model": pathlib.Path(sentencepiece_path).name},
        "next_sentence_prediction": ours["next_sentence_prediction"],  # False for an AlbertForMaskedLM
    }


def check_sentencepiece_model(path, vocabulary_size):
    """A SentencePiece model with one piece per embedding row, when the file is there (DataError otherwise)."""
    from keras_bert_app.preprocessing import sentencepiece_model

    if pathlib.Path(path).is_file():
        _, pieces, _ = sentencepiece_model.read_model(path, argument="source")
        if len(pieces) != vocabulary_size:
            raise ConversionError(
                f"{path}: the SentencePiece model has {len(pieces)} pieces but the token embedding has "
                f"{vocabulary_size} rows; expected the same number."
            )


def tokenizer_config(folder):
    """Our `tokenizer` entry: the SentencePiece model and HF's `do_lower_case` / `keep_accents`."""
    settings = {}
    path = pathlib.Path(folder) / huggingface.TOKENIZER_CONFIG_FILE
    if path.is_file():
        settings = huggingface._read_json(path)
    return {
        "type": TOKENIZER_TYPE,
        "sentencepiece_model": SENTENCEPIECE_FILE,
        "lowercase": bool(settings.get("do_lower_case", True)),
        "strip_accents": not settings.get("keep_accents", False),
    }


def encoder_mappings(num_groups, prefix=""):
    """`Mapping`s from HF ALBERT encoder tensors to our `BertEncoder(embedding_dim=E, num_groups=G)`."""

    def dense(source, target, layout=weight_map.TRANSPOSED):
        return [
            Mapping(f"{prefix}{source}.weight", f"{target}/kernel", layout),
            Mapping(f"{prefix}{source}.bias", f"{target}/bias", weight_map.SAME),
        ]

    def layer_norm(source, target):
        return [
            Mapping(f"{prefix}{source}.weight", f"{target}/gamma", weight_map.SAME),
            Mapping(f"{prefix}{source}.bias", f"{target}/beta", weight_map.SAME),
        ]

    embeddings = (("word_embeddings", "token_embedding/embeddings"), ("token_type_embeddings", "segment_embedding/embeddings"),
                  ("position_embeddings", "position_embeddings"))
    mappings = [Mapping(f"{prefix}embeddings.{name}.weight", f"embeddings/{target}", weight_map.SAME)
                for name, target in embeddings]
    mappings += layer_norm("embeddings.LayerNorm", "embeddings/layer_norm")
    mappings += dense("encoder.embedding_hidden_mapping_in", "embedding_projection")
    for group in range(num_groups):
        source = f"encoder.albert_layer_groups.{group}.albert_layers.0"
        target = f"transformer_layer_{group}"
        for name in ("query", "key", "value"):
            mappings += [
                Mapping(f"{prefix}{source}.attention.{name}.weight", f"{target}/attention/{name}/kernel",
                        weight_map.HEADS_KERNEL_TRANSPOSED),
                Mapping(f"{prefix}{source}.attention.{name}.bias", f"{target}/attention/{name}/bias", weight_map.HEADS_BIAS),
            ]
        mappings += dense(f"{source}.attention.dense", f"{target}/attention/attention_output",
                          weight_map.MERGE_HEADS_KERNEL_TRANSPOSED)
        mappings += layer_norm(f"{source}.attention.LayerNorm", f"{target}/attention_layer_norm")
        mappings += dense(f"{source}.ffn", f"{target}/intermediate")
        mappings += dense(f"{source}.ffn_output", f"{target}/output")
        mappings += layer_norm(f"{source}.full_layer_layer_norm", f"{target}/output_layer_norm")
    mappings += dense("pooler", "pooler")
    return mappings


def head_mappings(sentence_order=True):
    """`Mapping`s of `predictions.*` (MLM) and `sop_classifier.*` (sentence order) to `BertPretrainer`'s heads."""
    mappings = [
        Mapping("predictions.dense.weight", "masked_lm_head/dense/kernel", weight_map.TRANSPOSED),
        Mapping("predictions.dense.bias", "masked_lm_head/dense/bias", weight_map.SAME),
        Mapping("predictions.LayerNorm.weight", "masked_lm_head/layer_norm/gamma", weight_map.SAME),
        Mapping("predictions.LayerNorm.bias", "masked_lm_head/layer_norm/beta", weight_map.SAME),
        Mapping("predictions.bias", "masked_lm_head/output_bias", weight_map.SAME),
    ]
    if sentence_order:
        mappings += [
            Mapping("sop_classifier.classifier.weight", "next_sentence_head/dense/kernel", weight_map.TRANSPOSED),
            Mapping("sop_classifier.classifier.bias", "next_sentence_head/dense/bias", weight_map.SAME),
        ]
    return mappings


def load_weights(model, path):
    """Fill a `BertEncoder`, or a `BertPretrainer` with its heads, from an HF ALBERT checkpoint.

    An `AlbertForMaskedLM` has no sentence-order head (a pretrainer's stays
    fresh, with a warning) and, as token classifiers, no pooler (ours stays
    fresh, with a warning). An untied MLM output layer is refused.

    Returns:
        bool. True when the MLM head was loaded (with the sentence-order head
        when both have one: an `AlbertForPreTraining` into a `BertPretrainer`).
    """
    tensors, source_name = huggingface.read_tensors(path)
    encoder = getattr(model, "encoder", model)
    prefix = PREFIX if f"{PREFIX}embeddings.word_embeddings.weight" in tensors else ""
    tensors = huggingface.with_decoder_bias(tensors, "predictions.")
    heads = getattr(model, "masked_lm_head", None) is not None and "predictions.bias" in tensors
    if heads:
        weight_map.check_tied_output(tensors, "predictions.decoder.weight", f"{prefix}embeddings.word_embeddings.weight",
                                     source_name)
    absent = huggingface.absent_layers(model, tensors, f"{prefix}pooler.weight",
                                       heads and "sop_classifier.classifier.weight")
    mappings = huggingface.without_pooler(encoder_mappings(encoder.num_groups or encoder.num_layers, prefix), absent)
    ignored = huggingface.IGNORED + ("predictions.decoder.",)
    if heads:
        sentence_order = getattr(model, "next_sentence_head", None) is not None and "next_sentence_head" not in absent
        mappings += head_mappings(sentence_order)
        if not sentence_order:
            ignored += ("sop_classifier.",)
    else:
        ignored += ("predictions.", "sop_classifier.")
    own = (prefix, "predictions.", "sop_classifier.") if prefix else ("embeddings.", "encoder.", "pooler.")
    names = [name for name in tensors if name.startswith(own)]
    weight_map.check_unused(names, {mapping.source for mapping in mappings}, source_name, ignored)
    weight_map.load_mapped(model, mappings, tensors.get, source_name)
    huggingface.warn_fresh(absent, source_name)
    return heads


def save(model, folder, sentencepiece_path, lowercase, strip_accents=True):
    """Write an HF ALBERT folder that transformers' `from_pretrained` loads.

    A `BertEncoder` becomes an `AlbertModel`; a `BertPretrainer` with a
    sentence head an `AlbertForPreTraining`, without one an
    `AlbertForMaskedLM` (`predictions.decoder` is the tied token embedding).
    Writes `config.json`, `model.safetensors`, `spiece.model` and
    `tokenizer_config.json`.
    """
    from safetensors.numpy import save_file

    encoder = getattr(model, "encoder", model)
    width = encoder.embedding_dim
    if width is None or width == encoder.hidden_dim:
        raise ConversionError(
            f"An ALBERT checkpoint maps embeddings of width E to H; this encoder has embedding_dim={width} "
            f"and hidden_dim={encoder.hidden_dim} (expected E != H)."
        )
    groups = encoder.num_groups or encoder.num_layers
    if getattr(model, "masked_lm_head", None) is not None:
        sentence_order = getattr(model, "next_sentence_head", None) is not None
        architecture = PRETRAINING_ARCHITECTURE if sentence_order else MASKED_LM_ARCHITECTURE
        mappings = encoder_mappings(groups, PREFIX) + head_mappings(sentence_order)
        if not sentence_order:  # transformers would report our pooler's tensors as unexpected keys
            mappings = huggingface.without_pooler(mappings, {"pooler"})
    else:
        architecture = ENCODER_ARCHITECTURE
        mappings = encoder_mappings(groups)
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = weight_map.export_mapped(model, mappings)
    if architecture != ENCODER_ARCHITECTURE:
        tensors["predictions.decoder.weight"] = tensors[f"{PREFIX}embeddings.word_embeddings.weight"]
        tensors["predictions.decoder.bias"] = tensors["predictions.bias"]
    save_file(tensors, str(folder / huggingface.SAFETENSORS_FILE), metadata={"format": "pt"})
    config = huggingface.hf_config(encoder, architecture)
    config.update(model_type=MODEL_TYPE, embedding_size=width, num_hidden_groups=groups, inner_group_num=1,
                  classifier_dropout_prob=0.1, bos_token_id=2, eos_token_id=3, tie_word_embeddings=True)
    del config["position_embedding_type"]
    huggingface._write_json(folder / huggingface.CONFIG_FILE, config)
    huggingface._write_json(
        folder / huggingface.TOKENIZER_CONFIG_FILE,
        {"do_lower_case": bool(lowercase), "keep_accents": not strip_accents, "tokenizer_class": "AlbertTokenizer"},
    )
    (folder / SENTENCEPIECE_FILE).write_bytes(pathlib.Path(sentencepiece_path).read_bytes())
    return folder
