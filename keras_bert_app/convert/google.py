"""Original Google TensorFlow releases of BERT, ALBERT and ELECTRA, read-only.

A release folder holds a TF1 checkpoint (`*.index` + `.data-*`; of several,
`bert_model.ckpt` or the one with the highest step) with the original
`modeling.py` scopes, and:
- BERT (google-research/bert): `bert_config.json`, `vocab.txt`; variables
  `bert/...` and the heads `cls/predictions/*`, `cls/seq_relationship/*`.
- ALBERT (google-research/albert): `albert_config.json`, a SentencePiece
  model (`30k-clean.model`); `bert/embeddings/*` (E wide),
  `bert/encoder/embedding_hidden_mapping_in` (E -> H), the shared groups
  `bert/encoder/transformer/group_{g}/inner_group_0/...`, BERT's heads
  (sentence order for NSP).
- ELECTRA (google-research/electra): `vocab.txt` and both models of the
  pair: the shared embeddings `electra/embeddings/*` (width E), the
  discriminator `electra/...` (BERT's names, `embeddings_project` when
  E != H) with `discriminator_predictions/{dense,dense_1}`, and the
  generator `generator/...` with `generator_predictions/*` (its output
  matrix is the shared token embedding). The release has no config: sizes
  come from the tensor shapes, the number of heads from `max(1, hidden // 64)`,
  unless a `bert_config.json` beside it says otherwise.
Kernels are stored [in, out]. BERT's and ALBERT's GELU is the tanh form,
ELECTRA's the exact one; LayerNorm epsilon 1e-12. Optimizer slots are skipped.
"""

import pathlib
import re

from keras_bert_app.convert import huggingface, huggingface_config, tables, weight_map
from keras_bert_app.convert.family import ALBERT, BERT, ELECTRA
from keras_bert_app.convert.weight_map import ConversionError

CONFIG_FILE = "bert_config.json"  # BERT's; optional beside an ELECTRA release
ALBERT_CONFIG_FILE = "albert_config.json"
VOCABULARY_FILE = "vocab.txt"
CHECKPOINT_PREFIX = "bert_model.ckpt"
# The original `hidden_act` names -> ours (BERT's and ALBERT's `modeling.gelu` is the tanh form, ELECTRA's erf).
ACTIVATIONS = {"gelu": "gelu_approximate", "relu": "relu", "tanh": "tanh", "linear": "linear"}
ELECTRA_ACTIVATIONS = {**ACTIVATIONS, "gelu": "gelu"}
IGNORED = ("adam_m", "adam_v", "global_step", "Momentum", "AdamWeightDecay")  # training state, not weights
WORD_EMBEDDINGS = "electra/embeddings/word_embeddings"
HEAD_SIZE = 64  # hidden units per attention head in every official ELECTRA configuration
# The pretraining heads: (our attribute, the variable that marks it, its variables' prefix).
HEADS = {BERT: (("masked_lm_head", "cls/predictions/output_bias", "cls/predictions/"),
                ("next_sentence_head", "cls/seq_relationship/output_weights", "cls/seq_relationship/")),
         ELECTRA: (("discriminator_head", "discriminator_predictions/dense/kernel", "discriminator_predictions/"),)}
HEADS[ALBERT] = HEADS[BERT]


def is_checkpoint(folder):
    """True for a release folder of any of the three families (TensorFlow is imported only without a config file)."""
    folder = pathlib.Path(folder)
    if not folder.is_dir() or _checkpoint_prefix(folder) is None or (folder / "config.json").is_file():
        return False
    return any((folder / name).is_file() for name in (CONFIG_FILE, ALBERT_CONFIG_FILE)) or \
        checkpoint_family(folder) == ELECTRA


def checkpoint_family(folder):
    """The family of a release folder (a checkpoint prefix's folder), or None for other folders.

    An ELECTRA release is known by its variables, which imports TensorFlow: a
    folder without a `*.index` file (or with an HF/keras-hub `config.json`) is
    ruled out first.
    """
    folder = pathlib.Path(folder)
    if not folder.is_dir() or _checkpoint_prefix(folder) is None or (folder / "config.json").is_file():
        return None
    if (folder / ALBERT_CONFIG_FILE).is_file():
        return ALBERT
    try:
        if WORD_EMBEDDINGS in variable_shapes(folder)[0]:
            return ELECTRA
    except Exception:  # an unreadable checkpoint is not recognised as ELECTRA's; reading it names the problem
        pass
    return BERT if (folder / CONFIG_FILE).is_file() else None


def variable_shapes(path):
    """`({name: shape}, checkpoint prefix)` of a release folder or a checkpoint prefix (no optimizer slots)."""
    reader, prefix = _reader(path)
    shapes = reader.get_variable_to_shape_map()
    return {name: tuple(shape) for name, shape in shapes.items() if not any(part in name for part in IGNORED)}, prefix


def read_tensors(path):
    """`(get_tensor, names, checkpoint_prefix)` for a release folder or a checkpoint prefix."""
    reader, prefix = _reader(path)
    names = [name for name in reader.get_variable_to_shape_map() if not any(part in name for part in IGNORED)]
    present = set(names)
    return (lambda name: reader.get_tensor(name) if name in present else None), names, prefix


def read_config(folder):
    """Our preset config from a release folder (ELECTRA's: the discriminator's, plus `generator`, its generator's
    encoder config or None)."""
    folder = pathlib.Path(folder)
    kind = checkpoint_family(folder)
    if kind == ELECTRA:
        return _electra_config(folder)
    path = folder / (ALBERT_CONFIG_FILE if kind == ALBERT else CONFIG_FILE)
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no {CONFIG_FILE}; expected an original BERT release folder.")
    config = huggingface_config.read_json(path)
    activation = config.get("hidden_act", "gelu")
    if activation not in ACTIVATIONS:
        raise ConversionError(f"{path}: hidden_act {activation!r}; expected one of {sorted(ACTIVATIONS)}.")
    # The HF readers check what the formats share (sizes; ALBERT's groups, E != H, inner_group_num, ...).
    hf_like = {**config, "hidden_act": "gelu", "layer_norm_eps": 1e-12,
               "type_vocab_size": config.get("type_vocab_size", 2 if kind == ALBERT else 16)}
    if kind == ALBERT:
        models = sorted(folder.glob("*.model"))
        if len(models) != 1:
            raise ConversionError(f"{folder}: expected one SentencePiece model (*.model, as 30k-clean.model); found "
                                  f"{[model.name for model in models]}.")
        ours = huggingface_config.albert_config(path, hf_like, folder, models[0])
    else:
        ours = huggingface_config.config_from_dict(path, hf_like, folder)
    ours["encoder"]["activation"] = ACTIVATIONS[activation]
    ours["description"] = f"Converted from the original {kind.upper()} checkpoint {folder.name}."
    return ours


def load_weights(model, path, generator=False):
    """Fill an encoder, or a model with its pretraining heads, from a release (ELECTRA's: its discriminator).

    Args:
        model: a `BertEncoder`; a `BertPretrainer` (BERT's, ALBERT's heads);
            an `ElectraDiscriminator`; with `generator`, the masked-LM
            `BertPretrainer` of an ELECTRA release's generator.
        path: a release folder or a checkpoint prefix.

    Returns:
        bool. True when pretraining heads were loaded.
    """
    path = pathlib.Path(path)
    kind = checkpoint_family(path if path.is_dir() else path.parent)
    get_tensor, names, source_name = read_tensors(path)
    encoder = getattr(model, "encoder", model)
    scope = ("generator/" if generator else "electra/") if kind == ELECTRA else "bert/"
    if generator:
        loaded, absent, heads = {"masked_lm_head"}, set(), ()
    else:
        heads = HEADS[kind]
        loaded, absent = tables.present_heads(model, heads, names)
    mappings = tables.mappings(tables.ENCODERS[kind], "google", encoder.num_groups or encoder.num_layers, scope,
                               embeddings_scope="electra/" if kind == ELECTRA else None,
                               skip=huggingface.no_projection(encoder))
    other_heads = {"masked_lm_head", "next_sentence_head", "discriminator_head"} - loaded
    mappings += tables.mappings(tables.HEADS[kind], "google", skip=other_heads)
    if kind == ELECTRA:  # the pair's other model is not read here
        own = ("generator",) if generator else ("electra/", "discriminator_")
        ignored = ("generator_predictions/",) if not generator else ()
    else:
        own, ignored = ("bert/", "cls/"), ()
    ignored += tuple(head[2] for head in heads if head[0] not in loaded)
    names = [name for name in names if name.startswith(own)]
    weight_map.check_unused(names, {mapping.source for mapping in mappings}, source_name, ignored)
    weight_map.load_mapped(model, mappings, get_tensor, source_name)
    return bool(loaded)


def _electra_config(folder):
    """An ELECTRA release's config, from its variables' shapes and the optional `bert_config.json`."""
    shapes, source_name = variable_shapes(folder)
    overrides = huggingface_config.read_json(folder / CONFIG_FILE) if (folder / CONFIG_FILE).is_file() else {}
    activation = overrides.get("hidden_act", "gelu")
    if activation not in ELECTRA_ACTIVATIONS:
        raise ConversionError(f"{folder / CONFIG_FILE}: field 'hidden_act' is {activation!r}; expected one of "
                              f"{sorted(ELECTRA_ACTIVATIONS)}.")
    discriminator = _encoder_config(shapes, "electra", overrides, source_name)
    generator = None
    if "generator/encoder/layer_0/attention/self/query/kernel" in shapes:
        generator = _encoder_config(shapes, "generator", {**overrides, "num_attention_heads": None}, source_name)
        width = shapes[WORD_EMBEDDINGS][1]
        reads = shapes.get("generator/embeddings_project/kernel", (generator["hidden_dim"],))[0]
        writes = shapes.get("generator_predictions/dense/kernel", (None, width))[1]
        for name, got in (("generator/embeddings_project/kernel", reads), ("generator_predictions/dense/kernel", writes)):
            if got != width:
                raise ConversionError(
                    f"{source_name}: the generator's embedding width ({name!r}: {got}) differs from the "
                    f"discriminator's ({WORD_EMBEDDINGS!r}: {width}); expected the shared embeddings' width."
                )
    vocabulary = folder / VOCABULARY_FILE
    return {
        "name": folder.name,
        "description": f"Converted from the original ELECTRA checkpoint {folder.name} (discriminator).",
        "encoder": discriminator,
        "tokenizer": {"vocabulary": VOCABULARY_FILE,
                      "lowercase": weight_map.vocabulary_is_lowercase(vocabulary) if vocabulary.is_file() else True},
        "architecture": ELECTRA,
        "generator": generator,
    }


def _encoder_config(shapes, scope, overrides, source_name):
    """A `BertEncoder` config for one model of an ELECTRA pair, from the tensor shapes."""
    layers = sorted({int(match.group(1)) for name in shapes if (match := re.match(rf"{scope}/encoder/layer_(\d+)/", name))})
    if not layers:
        raise ConversionError(f"{source_name}: no variables '{scope}/encoder/layer_N/...'; expected an ELECTRA checkpoint.")
    if layers != list(range(len(layers))):
        raise ConversionError(f"{source_name}: {scope} layers {layers} are not numbered 0..{len(layers) - 1}.")
    vocabulary_size, width = shapes[WORD_EMBEDDINGS]
    hidden = shapes[f"{scope}/encoder/layer_0/attention/self/query/kernel"][1]
    heads = overrides.get("num_attention_heads") or max(1, hidden // HEAD_SIZE)
    if hidden % heads:
        raise ConversionError(f"{source_name}: hidden size {hidden} of {scope!r} is not divisible by {heads} heads.")
    config = {
        "vocabulary_size": int(vocabulary_size),
        "num_layers": len(layers),
        "num_heads": int(heads),
        "hidden_dim": int(hidden),
        "intermediate_dim": int(shapes[f"{scope}/encoder/layer_0/intermediate/dense/kernel"][1]),
        "dropout": float(overrides.get("hidden_dropout_prob", 0.1)),
        "max_sequence_length": int(shapes["electra/embeddings/position_embeddings"][0]),
        "num_segments": int(shapes["electra/embeddings/token_type_embeddings"][0]),
        "activation": ELECTRA_ACTIVATIONS[overrides.get("hidden_act", "gelu")],
        "layer_norm_epsilon": 1e-12,
        "initializer_range": float(overrides.get("initializer_range", 0.02)),
    }
    return {**config, "embedding_dim": int(width)} if width != hidden else config


def _reader(path):
    """`(tf.train.CheckpointReader, prefix)` of a release folder or a checkpoint prefix."""
    import tensorflow as tf

    path = pathlib.Path(path)
    prefix = _checkpoint_prefix(path) if path.is_dir() else path
    if prefix is None or not pathlib.Path(f"{prefix}.index").is_file():
        raise FileNotFoundError(f"{path}: no TF checkpoint (*.index + .data-*); expected an original BERT, ALBERT or "
                                "ELECTRA release folder or a checkpoint prefix.")
    return tf.train.load_checkpoint(str(prefix)), str(prefix)


def _checkpoint_prefix(folder):
    """The folder's checkpoint: `bert_model.ckpt`, else of several (`model.ckpt-N`) the one with the highest step N."""
    if (folder / f"{CHECKPOINT_PREFIX}.index").is_file():
        return folder / CHECKPOINT_PREFIX

    def step(index):
        match = re.search(r"-(\d+)$", index.stem)
        return (int(match.group(1)) if match else -1, index.name)

    indexes = sorted(pathlib.Path(folder).glob("*.index"), key=step)
    return indexes[-1].with_suffix("") if indexes else None
