"""One weight-map table per family: where each of our variables is in each format.

A row is `(kind, ours, google, huggingface, keras_hub)`: one of our layers (or
variables) and its name in each format (None: that format has none). `{i}`
is the layer index (ALBERT: the group's), `{name}` query, key and value.
Kinds, expanded into `weight_map.Mapping`s by `mappings`:
- "dense": kernel and bias; "heads": query/key/value (ours [in, heads,
  head_dim]); "merge": the attention output (ours [heads, head_dim, out]);
  "norm": LayerNorm gamma and beta;
- "embedding": one table; "vector": one variable as it is; "kernel_t": a
  kernel stored [out, in] in every format (BERT's next-sentence weights).
The encoder's names are relative to the checkpoint's scope or prefix
(`bert/`, `electra.`, ...), which `mappings` prepends; the heads' are absolute.
"""

import collections

from keras_bert_app.convert import weight_map
from keras_bert_app.convert.family import ALBERT, BERT, ELECTRA

FORMATS = ("google", "huggingface", "keras_hub")
# How a format names a layer's variables, and lays out their kernels (ours: Keras' [in, out]).
Naming = collections.namedtuple("Naming", ["separator", "kernel", "bias", "gamma", "beta", "embedding", "layouts"])
_SAME = weight_map.SAME
NAMINGS = {
    "google": Naming("/", "kernel", "bias", "gamma", "beta", "", {
        "dense": _SAME, "heads": weight_map.HEADS_KERNEL, "heads_bias": weight_map.HEADS_BIAS,
        "merge": weight_map.MERGE_HEADS_KERNEL}),
    "huggingface": Naming(".", "weight", "bias", "weight", "bias", "weight", {  # PyTorch: [out, in]
        "dense": weight_map.TRANSPOSED, "heads": weight_map.HEADS_KERNEL_TRANSPOSED, "heads_bias": weight_map.HEADS_BIAS,
        "merge": weight_map.MERGE_HEADS_KERNEL_TRANSPOSED}),
    "keras_hub": Naming("/", "kernel", "bias", "gamma", "beta", "embeddings", {
        "dense": _SAME, "heads": _SAME, "heads_bias": _SAME, "merge": _SAME}),
}

_EMBEDDINGS = [
    ("embedding", "embeddings/token_embedding/embeddings", "embeddings/word_embeddings", "embeddings.word_embeddings",
     "token_embedding"),
    ("embedding", "embeddings/segment_embedding/embeddings", "embeddings/token_type_embeddings",
     "embeddings.token_type_embeddings", "segment_embedding"),
    ("embedding", "embeddings/position_embeddings", "embeddings/position_embeddings", "embeddings.position_embeddings",
     "position_embedding"),
    ("norm", "embeddings/layer_norm", "embeddings/LayerNorm", "embeddings.LayerNorm", "embeddings_layer_norm"),
]
_L = "transformer_layer_{i}"
_BERT_LAYERS = [
    ("heads", f"{_L}/attention/{{name}}", "encoder/layer_{i}/attention/self/{name}",
     "encoder.layer.{i}.attention.self.{name}", f"{_L}/self_attention_layer/{{name}}"),
    ("merge", f"{_L}/attention/attention_output", "encoder/layer_{i}/attention/output/dense",
     "encoder.layer.{i}.attention.output.dense", f"{_L}/self_attention_layer/attention_output"),
    ("norm", f"{_L}/attention_layer_norm", "encoder/layer_{i}/attention/output/LayerNorm",
     "encoder.layer.{i}.attention.output.LayerNorm", f"{_L}/self_attention_layer_norm"),
    ("dense", f"{_L}/intermediate", "encoder/layer_{i}/intermediate/dense", "encoder.layer.{i}.intermediate.dense",
     f"{_L}/feedforward_intermediate_dense"),
    ("dense", f"{_L}/output", "encoder/layer_{i}/output/dense", "encoder.layer.{i}.output.dense",
     f"{_L}/feedforward_output_dense"),
    ("norm", f"{_L}/output_layer_norm", "encoder/layer_{i}/output/LayerNorm", "encoder.layer.{i}.output.LayerNorm",
     f"{_L}/feedforward_layer_norm"),
]
_G, _H = "encoder/transformer/group_{i}/inner_group_0", "encoder.albert_layer_groups.{i}.albert_layers.0"
_ALBERT_LAYERS = [
    ("dense", "embedding_projection", "encoder/embedding_hidden_mapping_in", "encoder.embedding_hidden_mapping_in", None),
    ("heads", f"{_L}/attention/{{name}}", f"{_G}/attention_1/self/{{name}}", f"{_H}.attention.{{name}}", None),
    ("merge", f"{_L}/attention/attention_output", f"{_G}/attention_1/output/dense", f"{_H}.attention.dense", None),
    ("norm", f"{_L}/attention_layer_norm", f"{_G}/LayerNorm", f"{_H}.attention.LayerNorm", None),
    ("dense", f"{_L}/intermediate", f"{_G}/ffn_1/intermediate/dense", f"{_H}.ffn", None),
    ("dense", f"{_L}/output", f"{_G}/ffn_1/intermediate/output/dense", f"{_H}.ffn_output", None),
    ("norm", f"{_L}/output_layer_norm", f"{_G}/LayerNorm_1", f"{_H}.full_layer_layer_norm", None),
    ("dense", "pooler", "pooler/dense", "pooler", None),
]
# The encoder of each family (ELECTRA has no pooler but keras-hub's; its projection E -> H only when E != H).
ENCODERS = {
    BERT: _EMBEDDINGS + _BERT_LAYERS + [("dense", "pooler", "pooler/dense", "pooler.dense", "pooled_dense")],
    ELECTRA: _EMBEDDINGS + _BERT_LAYERS + [
        ("dense", "embedding_projection", "embeddings_project", "embeddings_project", "embeddings_projection"),
        ("dense", "pooler", None, None, "pooled_dense")],
    ALBERT: _EMBEDDINGS + _ALBERT_LAYERS,
}
_MASKED_LM = "masked_lm_head"
# The pretraining heads of each family (`BertPretrainer`'s; ELECTRA's discriminator's and generator's).
HEADS = {
    BERT: [
        ("dense", f"{_MASKED_LM}/dense", "cls/predictions/transform/dense", "cls.predictions.transform.dense", None),
        ("norm", f"{_MASKED_LM}/layer_norm", "cls/predictions/transform/LayerNorm", "cls.predictions.transform.LayerNorm",
         None),
        ("vector", f"{_MASKED_LM}/output_bias", "cls/predictions/output_bias", "cls.predictions.bias", None),
        ("kernel_t", "next_sentence_head/dense/kernel", "cls/seq_relationship/output_weights",
         "cls.seq_relationship.weight", None),
        ("vector", "next_sentence_head/dense/bias", "cls/seq_relationship/output_bias", "cls.seq_relationship.bias", None),
    ],
    ELECTRA: [
        ("dense", "discriminator_head/dense", "discriminator_predictions/dense", "discriminator_predictions.dense", None),
        # The second dense of the original scope, `dense_1`, is HF's `dense_prediction`.
        ("dense", "discriminator_head/dense_prediction", "discriminator_predictions/dense_1",
         "discriminator_predictions.dense_prediction", None),
        ("dense", f"{_MASKED_LM}/dense", "generator_predictions/dense", "generator_predictions.dense", None),
        ("norm", f"{_MASKED_LM}/layer_norm", "generator_predictions/LayerNorm", "generator_predictions.LayerNorm", None),
        ("vector", f"{_MASKED_LM}/output_bias", "generator_predictions/output_bias", "generator_lm_head.bias", None),
    ],
}
# ALBERT: BERT's Google names; HF's `predictions.*` and `sop_classifier.classifier.*`.
HEADS[ALBERT] = [(kind, ours, google, hf.replace("cls.", "").replace(".transform", "").replace(
    "seq_relationship", "sop_classifier.classifier"), None) for kind, ours, google, hf, _ in HEADS[BERT]]


def mappings(rows, format_name, count=1, scope="", embeddings_scope=None, skip=(), layer_norm=None):
    """`Mapping`s of a table's rows in one format.

    Args:
        count: int. Layers (ALBERT: groups) of the rows with `{i}`.
        scope: str. Prepended to every source name (`bert/`, `electra.`, ...).
        embeddings_scope: str or None. In place of `scope` for the embeddings
            (ELECTRA's generator reads the discriminator's).
        skip: our layers (the first part of a path) the checkpoint has no tensors for.
        layer_norm: (gamma, beta) names in place of the format's (old HF checkpoints' "gamma", "beta").
    """
    naming = NAMINGS[format_name]
    sep, layouts = naming.separator, naming.layouts
    gamma, beta = layer_norm or (naming.gamma, naming.beta)
    column = 2 + FORMATS.index(format_name)
    result = []
    for row in rows:
        kind, ours, source = row[0], row[1], row[column]
        if source is None or ours.split("/")[0] in skip:
            continue
        prefix = embeddings_scope if embeddings_scope is not None and ours.startswith("embeddings/") else scope
        for index in range(count) if "{i}" in ours else [0]:
            for name in ("query", "key", "value") if kind == "heads" else [None]:
                target, name_in = ours.format(i=index, name=name), prefix + source.format(i=index, name=name)
                result += _expand(kind, name_in, target, sep, layouts, naming, gamma, beta)
    return result


def _expand(kind, source, target, sep, layouts, naming, gamma, beta):
    M = weight_map.Mapping
    if kind == "embedding":
        return [M(f"{source}{sep}{naming.embedding}" if naming.embedding else source, target, _SAME)]
    if kind in ("vector", "kernel_t"):
        return [M(source, target, _SAME if kind == "vector" else weight_map.TRANSPOSED)]
    if kind == "norm":
        return [M(f"{source}{sep}{gamma}", f"{target}/gamma", _SAME), M(f"{source}{sep}{beta}", f"{target}/beta", _SAME)]
    bias = layouts["heads_bias"] if kind == "heads" else _SAME
    return [M(f"{source}{sep}{naming.kernel}", f"{target}/kernel", layouts[kind]),
            M(f"{source}{sep}{naming.bias}", f"{target}/bias", bias)]


def present_heads(model, heads, names):
    """`(loaded, absent)`: our head layers the checkpoint fills, and those of the model it lacks (kept fresh).

    `heads` are `(our attribute, the tensor that marks it, ...)`; the first
    one the model has decides: without its tensor, none is read.
    """
    wanted = [head for head in heads if getattr(model, head[0], None) is not None]
    if not wanted or wanted[0][1] not in names:
        return set(), set()
    return {head[0] for head in wanted if head[1] in names}, {head[0] for head in wanted if head[1] not in names}
