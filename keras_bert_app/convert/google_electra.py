"""Original ELECTRA TensorFlow checkpoints (google-research/electra), read-only.

A release folder (`electra_small/`, ...) holds `vocab.txt` and a TF1
checkpoint (`electra_small.index` + `.data-*`, or `model.ckpt-N.*` from a
pretraining run) with both models of the pair, named by the original
variable scopes:
- shared embeddings: `electra/embeddings/{word,position,token_type}_embeddings`
  and `electra/embeddings/LayerNorm/*` (width E);
- the discriminator: `electra/embeddings_project/*` (E -> H, when E != H),
  `electra/encoder/layer_N/...` (BERT's names), and its head
  `discriminator_predictions/dense/*` then `discriminator_predictions/dense_1/*`;
- the generator: `generator/embeddings_project/*`, `generator/encoder/layer_N/...`,
  and `generator_predictions/{dense,LayerNorm}/*` and
  `generator_predictions/output_bias` (the output matrix is the shared
  token embedding).

The release has no config file: sizes come from the tensor shapes, and the
number of attention heads from the official rule `max(1, hidden // 64)`
(`util/training_utils.py`), unless a `bert_config.json` beside the
checkpoint says otherwise. The original code uses the exact (erf) GELU and
LayerNorm epsilon 1e-12, and has no pooler.
"""

import json
import pathlib
import re

from keras_bert_app.convert import google, huggingface_electra, weight_map
from keras_bert_app.convert.weight_map import SAME, ConversionError, Mapping

VOCABULARY_FILE = "vocab.txt"
CONFIG_FILE = "bert_config.json"  # optional: the original BertConfig keys
DISCRIMINATOR_SCOPE = "electra"
GENERATOR_SCOPE = "generator"
WORD_EMBEDDINGS = "electra/embeddings/word_embeddings"
HEAD_SIZE = 64  # hidden units per attention head in every official configuration
# The original `hidden_act` names -> ours (ELECTRA's `modeling.gelu` is the exact erf form).
ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "tanh": "tanh", "linear": "linear"}
GENERATOR_HEAD = huggingface_electra.GENERATOR_HEAD
DISCRIMINATOR_HEAD = huggingface_electra.DISCRIMINATOR_HEAD


def is_checkpoint(folder):
    """True for a folder with a TF checkpoint whose variables are ELECTRA's (`electra/embeddings/...`).

    Reading the variable names imports TensorFlow, so folders without a
    `*.index` file (or with an HF/keras-hub `config.json`) are ruled out first.
    """
    folder = pathlib.Path(folder)
    if not folder.is_dir() or (folder / "config.json").is_file() or _checkpoint_prefix(folder) is None:
        return False
    try:
        return WORD_EMBEDDINGS in variable_shapes(folder)[0]
    except Exception:  # an unreadable checkpoint is not recognised here; reading it names the problem
        return False


def variable_shapes(path):
    """`({name: shape}, checkpoint prefix)` of a release folder or a checkpoint prefix (no optimizer slots)."""
    import tensorflow as tf

    path = pathlib.Path(path)
    prefix = _checkpoint_prefix(path) if path.is_dir() else path
    if prefix is None or not pathlib.Path(f"{prefix}.index").is_file():
        raise FileNotFoundError(
            f"{path}: no TF checkpoint (*.index + .data-*); expected an original ELECTRA release folder."
        )
    shapes = tf.train.load_checkpoint(str(prefix)).get_variable_to_shape_map()
    shapes = {name: tuple(shape) for name, shape in shapes.items() if not any(part in name for part in google.IGNORED)}
    return shapes, str(prefix)


def read_tensors(path):
    """`(get_tensor, names, checkpoint_prefix)` for a release folder or a checkpoint prefix."""
    path = pathlib.Path(path)
    prefix = _checkpoint_prefix(path) if path.is_dir() else path
    if prefix is None:
        raise FileNotFoundError(
            f"{path}: no TF checkpoint (*.index + .data-*); expected an original ELECTRA release folder."
        )
    return google.read_tensors(prefix)


def read_config(folder):
    """Our preset config of the discriminator, plus `generator`: the generator's encoder config (or None).

    Raises:
        ConversionError: no ELECTRA variables, or a generator whose embedding
            width disagrees with the shared embeddings.
    """
    folder = pathlib.Path(folder)
    shapes, source_name = variable_shapes(folder)
    overrides = _config_overrides(folder)
    if WORD_EMBEDDINGS not in shapes:
        raise ConversionError(f"{source_name}: no variable {WORD_EMBEDDINGS!r}; expected an ELECTRA checkpoint.")
    discriminator = _encoder_config(shapes, DISCRIMINATOR_SCOPE, overrides, source_name)
    generator = None
    if f"{GENERATOR_SCOPE}/encoder/layer_0/attention/self/query/kernel" in shapes:
        generator = _encoder_config(shapes, GENERATOR_SCOPE, {**overrides, "num_attention_heads": None}, source_name)
        check_generator_width(shapes, generator, source_name)
    vocabulary = folder / VOCABULARY_FILE
    return {
        "name": folder.name,
        "description": f"Converted from the original ELECTRA checkpoint {folder.name} (discriminator).",
        "encoder": discriminator,
        "tokenizer": {
            "vocabulary": VOCABULARY_FILE,
            "lowercase": weight_map.vocabulary_is_lowercase(vocabulary) if vocabulary.is_file() else True,
        },
        "architecture": huggingface_electra.MODEL_TYPE,
        "generator": generator,
    }


def check_generator_width(shapes, generator, source_name):
    """Raise when the generator does not read or write the shared embedding width E."""
    width = shapes[WORD_EMBEDDINGS][1]
    reads = shapes.get(f"{GENERATOR_SCOPE}/embeddings_project/kernel", (generator["hidden_dim"],))[0]
    writes = shapes.get(f"{GENERATOR_SCOPE}_predictions/dense/kernel", (None, width))[1]
    checks = ((f"{GENERATOR_SCOPE}/embeddings_project/kernel", reads), ("generator_predictions/dense/kernel", writes))
    for name, got in checks:
        if got != width:
            raise ConversionError(
                f"{source_name}: the generator's embedding width ({name!r}: {got}) differs from the "
                f"discriminator's ({WORD_EMBEDDINGS!r}: {width}); expected the shared embeddings' width."
            )


def encoder_mappings(num_layers, scope=DISCRIMINATOR_SCOPE, projection=False):
    """`Mapping`s from one model of the pair (`electra` or `generator` scope) to our `BertEncoder`."""
    mappings = []
    for mapping in google.encoder_mappings(num_layers):
        if mapping.target.startswith("pooler/"):
            continue  # ELECTRA has no pooler
        source = mapping.source
        if not source.startswith("bert/embeddings/"):
            source = source.replace("bert/", f"{scope}/", 1)
        else:
            source = source.replace("bert/", f"{DISCRIMINATOR_SCOPE}/", 1)  # shared by both models
        mappings.append(Mapping(source, mapping.target, mapping.layout))
    if projection:
        mappings += [
            Mapping(f"{scope}/embeddings_project/kernel", "embedding_projection/kernel", weight_map.SAME),
            Mapping(f"{scope}/embeddings_project/bias", "embedding_projection/bias", weight_map.SAME),
        ]
    return mappings


def discriminator_mappings():
    """`Mapping`s of `discriminator_predictions/*` to our discriminator head."""
    return [
        Mapping("discriminator_predictions/dense/kernel", f"{DISCRIMINATOR_HEAD}/dense/kernel", weight_map.SAME),
        Mapping("discriminator_predictions/dense/bias", f"{DISCRIMINATOR_HEAD}/dense/bias", weight_map.SAME),
        # The second dense of the scope, `dense_1`, is HF's `dense_prediction`.
        Mapping("discriminator_predictions/dense_1/kernel", f"{DISCRIMINATOR_HEAD}/dense_prediction/kernel", SAME),
        Mapping("discriminator_predictions/dense_1/bias", f"{DISCRIMINATOR_HEAD}/dense_prediction/bias", SAME),
    ]


def generator_mappings():
    """`Mapping`s of `generator_predictions/*` to our `MaskedLMHead`."""
    return [
        Mapping("generator_predictions/dense/kernel", f"{GENERATOR_HEAD}/dense/kernel", weight_map.SAME),
        Mapping("generator_predictions/dense/bias", f"{GENERATOR_HEAD}/dense/bias", weight_map.SAME),
        Mapping("generator_predictions/LayerNorm/gamma", f"{GENERATOR_HEAD}/layer_norm/gamma", weight_map.SAME),
        Mapping("generator_predictions/LayerNorm/beta", f"{GENERATOR_HEAD}/layer_norm/beta", weight_map.SAME),
        Mapping("generator_predictions/output_bias", f"{GENERATOR_HEAD}/output_bias", weight_map.SAME),
    ]


def load_weights(model, path):
    """Fill the discriminator (a `BertEncoder`, or a model with `.encoder` and `.discriminator_head`).

    Returns:
        bool. True when the discriminator head was loaded too.
    """
    get_tensor, names, source_name = read_tensors(path)
    encoder = getattr(model, "encoder", model)
    mappings = encoder_mappings(encoder.num_layers, DISCRIMINATOR_SCOPE, _has_projection(encoder))
    heads = getattr(model, "discriminator_head", None) is not None and "discriminator_predictions/dense/kernel" in names
    if heads:
        mappings += discriminator_mappings()
    ignored = (f"{GENERATOR_SCOPE}/", "generator_predictions/") + (() if heads else ("discriminator_predictions/",))
    names = [name for name in names if name.startswith((f"{DISCRIMINATOR_SCOPE}/", GENERATOR_SCOPE, "discriminator_"))]
    weight_map.check_unused(names, {mapping.source for mapping in mappings}, source_name, ignored)
    weight_map.load_mapped(model, mappings, get_tensor, source_name)
    return heads


def load_generator_weights(model, path):
    """Fill the generator (a model with `.encoder` and `.masked_lm_head`) from the pair's checkpoint.

    Returns:
        bool. True (the generator's head is always in a pretraining checkpoint).
    """
    get_tensor, names, source_name = read_tensors(path)
    encoder = model.encoder
    mappings = encoder_mappings(encoder.num_layers, GENERATOR_SCOPE, _has_projection(encoder))
    mappings += generator_mappings()
    names = [name for name in names if name.startswith(GENERATOR_SCOPE)]
    weight_map.check_unused(names, {mapping.source for mapping in mappings}, source_name)
    weight_map.load_mapped(model, mappings, get_tensor, source_name)
    return True


def _encoder_config(shapes, scope, overrides, source_name):
    """A `BertEncoder` config for one model of the pair, from the tensor shapes."""
    layers = sorted(
        {int(match.group(1)) for name in shapes if (match := re.match(rf"{scope}/encoder/layer_(\d+)/", name))}
    )
    if not layers:
        raise ConversionError(
            f"{source_name}: no variables '{scope}/encoder/layer_N/...'; expected an ELECTRA checkpoint."
        )
    if layers != list(range(len(layers))):
        raise ConversionError(f"{source_name}: {scope} layers {layers} are not numbered 0..{len(layers) - 1}.")
    vocabulary_size, width = shapes[WORD_EMBEDDINGS]
    hidden = shapes[f"{scope}/encoder/layer_0/attention/self/query/kernel"][1]
    heads = overrides.get("num_attention_heads") or max(1, hidden // HEAD_SIZE)
    config = {
        "vocabulary_size": int(vocabulary_size),
        "num_layers": len(layers),
        "num_heads": int(heads),
        "hidden_dim": int(hidden),
        "intermediate_dim": int(shapes[f"{scope}/encoder/layer_0/intermediate/dense/kernel"][1]),
        "dropout": float(overrides.get("hidden_dropout_prob", 0.1)),
        "max_sequence_length": int(shapes["electra/embeddings/position_embeddings"][0]),
        "num_segments": int(shapes["electra/embeddings/token_type_embeddings"][0]),
        "activation": ACTIVATIONS[overrides.get("hidden_act", "gelu")],
        "layer_norm_epsilon": 1e-12,
        "initializer_range": float(overrides.get("initializer_range", 0.02)),
    }
    if hidden % heads:
        raise ConversionError(f"{source_name}: hidden size {hidden} of {scope!r} is not divisible by {heads} heads.")
    if width != hidden:
        config["embedding_dim"] = int(width)
    return config


def _config_overrides(folder):
    """The optional `bert_config.json` beside the checkpoint (heads, activation, dropout)."""
    path = folder / CONFIG_FILE
    if not path.is_file():
        return {}
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConversionError(f"{path}: malformed JSON ({error}).") from None
    activation = config.get("hidden_act", "gelu")
    if activation not in ACTIVATIONS:
        raise ConversionError(
            f"{path}: field 'hidden_act' is {activation!r}; expected one of {sorted(ACTIVATIONS)}."
        )
    return config


def _has_projection(encoder):
    return huggingface_electra.embedding_width(encoder) != encoder.hidden_dim


def _checkpoint_prefix(folder):
    """The checkpoint of the folder; of several (`model.ckpt-N`), the one with the highest step N."""

    def step(index):
        match = re.search(r"-(\d+)$", index.stem)
        return (int(match.group(1)) if match else -1, index.name)

    indexes = sorted(pathlib.Path(folder).glob("*.index"), key=step)
    return indexes[-1].with_suffix("") if indexes else None
