"""Original google-research/albert TensorFlow checkpoints, read-only.

A release folder (`albert_base` of the v2 tarballs) holds `albert_config.json`,
a SentencePiece model (`30k-clean.model`) and a TF1 checkpoint
(`model.ckpt-best.{index,data-*}`) with the original `modeling.py` scopes:
`bert/embeddings/*` (E wide), `bert/encoder/embedding_hidden_mapping_in`
(E -> H), `bert/encoder/transformer/group_{g}/inner_group_0/` with
`attention_1/self/{query,key,value}`, `attention_1/output/dense`,
`LayerNorm` (after attention), `ffn_1/intermediate/dense`,
`ffn_1/intermediate/output/dense` and `LayerNorm_1` (after the
feed-forward), `bert/pooler/dense`; the heads `cls/predictions/*` and
`cls/seq_relationship/*` (sentence order). Kernels are stored [in, out].
The original GELU is the tanh form ("gelu" -> our "gelu_approximate").
"""

import json
import pathlib

from keras_bert_app.convert import google, huggingface_albert, weight_map
from keras_bert_app.convert.weight_map import ConversionError, Mapping

CONFIG_FILE = "albert_config.json"
MODEL_TYPE = "albert"


def is_checkpoint(folder):
    """True for a folder with `albert_config.json` and a TF checkpoint (`*.index`)."""
    folder = pathlib.Path(folder)
    return (folder / CONFIG_FILE).is_file() and _checkpoint_prefix(folder) is not None


def read_config(folder):
    """Our preset config (`encoder` with `embedding_dim` and `num_groups`, a SentencePiece `tokenizer`)."""
    folder = pathlib.Path(folder)
    path = folder / CONFIG_FILE
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConversionError(f"{path}: malformed JSON ({error}).") from None
    activation = config.get("hidden_act", "gelu")
    if activation not in google.ACTIVATIONS:
        raise ConversionError(f"{path}: hidden_act {activation!r}; expected one of {sorted(google.ACTIVATIONS)}.")
    required = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size")
    missing = [key for key in required if key not in config]
    if missing:
        raise ConversionError(f"{path}: missing {missing}.")
    # The HF reader checks what the two formats share (groups, E != H, inner_group_num, ...).
    hf_like = {**config, "model_type": MODEL_TYPE, "hidden_act": "gelu", "layer_norm_eps": 1e-12,
               "type_vocab_size": config.get("type_vocab_size", 2)}
    models = sorted(folder.glob("*.model"))
    if len(models) != 1:
        raise ConversionError(
            f"{folder}: expected one SentencePiece model (*.model, as 30k-clean.model); found {[m.name for m in models]}."
        )
    ours = huggingface_albert.config_from_dict(path, hf_like, folder, models[0])
    ours["encoder"]["activation"] = google.ACTIVATIONS[activation]
    ours["description"] = f"Converted from the original ALBERT checkpoint {folder.name}."
    return ours


def encoder_mappings(num_groups):
    """`Mapping`s from the original variable names to our `BertEncoder(embedding_dim=E, num_groups=G)`."""

    def dense(source, target, layout=weight_map.SAME):
        return [Mapping(f"{source}/kernel", f"{target}/kernel", layout), Mapping(f"{source}/bias", f"{target}/bias",
                                                                               weight_map.SAME)]

    def layer_norm(source, target):
        return [Mapping(f"{source}/gamma", f"{target}/gamma", weight_map.SAME),
                Mapping(f"{source}/beta", f"{target}/beta", weight_map.SAME)]

    embeddings = (("word_embeddings", "token_embedding/embeddings"), ("token_type_embeddings", "segment_embedding/embeddings"),
                  ("position_embeddings", "position_embeddings"))
    mappings = [Mapping(f"bert/embeddings/{name}", f"embeddings/{target}", weight_map.SAME) for name, target in embeddings]
    mappings += layer_norm("bert/embeddings/LayerNorm", "embeddings/layer_norm")
    mappings += dense("bert/encoder/embedding_hidden_mapping_in", "embedding_projection")
    for group in range(num_groups):
        source = f"bert/encoder/transformer/group_{group}/inner_group_0"
        target = f"transformer_layer_{group}"
        for name in ("query", "key", "value"):
            mappings += [
                Mapping(f"{source}/attention_1/self/{name}/kernel", f"{target}/attention/{name}/kernel",
                        weight_map.HEADS_KERNEL),
                Mapping(f"{source}/attention_1/self/{name}/bias", f"{target}/attention/{name}/bias", weight_map.HEADS_BIAS),
            ]
        mappings += dense(f"{source}/attention_1/output/dense", f"{target}/attention/attention_output",
                          weight_map.MERGE_HEADS_KERNEL)
        mappings += layer_norm(f"{source}/LayerNorm", f"{target}/attention_layer_norm")
        mappings += dense(f"{source}/ffn_1/intermediate/dense", f"{target}/intermediate")
        mappings += dense(f"{source}/ffn_1/intermediate/output/dense", f"{target}/output")
        mappings += layer_norm(f"{source}/LayerNorm_1", f"{target}/output_layer_norm")
    mappings += dense("bert/pooler/dense", "pooler")
    return mappings


def load_weights(model, path):
    """Fill a `BertEncoder`, or a `BertPretrainer` with its MLM and sentence-order heads, from an original checkpoint.

    Returns:
        bool. True when the heads were loaded (`cls/*` present and the model has a sentence head).
    """
    path = pathlib.Path(path)
    get_tensor, names, source_name = google.read_tensors(_checkpoint_prefix(path) if path.is_dir() else path)
    encoder = getattr(model, "encoder", model)
    mappings = encoder_mappings(encoder.num_groups or encoder.num_layers)
    heads = getattr(model, "next_sentence_head", None) is not None and "cls/predictions/output_bias" in names
    ignored = () if heads else ("cls/",)
    if heads:
        mappings += google.head_mappings()
    names = [name for name in names if name.startswith(("bert/", "cls/"))]
    weight_map.check_unused(names, {mapping.source for mapping in mappings}, source_name, ignored)
    weight_map.load_mapped(model, mappings, get_tensor, source_name)
    return heads


def _checkpoint_prefix(folder):
    indexes = sorted(pathlib.Path(folder).glob("*.index"))
    return indexes[-1].with_suffix("") if indexes else None
