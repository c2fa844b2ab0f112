"""Name maps between foreign checkpoints and our variables, with shape checks.

Every converter describes a checkpoint as a list of `Mapping`s: the tensor
name in the checkpoint, the path of our variable, and the `Layout` that turns
one into the other (a transpose, a split into attention heads, ...). The
expected shape of every checkpoint tensor is derived from our variable's
shape, so a wrong shape, a missing tensor or a config that disagrees with the
weights is reported before anything is assigned.
"""

import collections
import json
import pathlib

import numpy as np

from keras_bert_app import errors


class ConversionError(errors.DataError):
    """A checkpoint that cannot be converted (named tensor, expected vs got); a `ValueError`."""


# to_ours(array, our_shape) -> array in our layout; to_source(array) -> back.
Layout = collections.namedtuple("Layout", ["to_ours", "to_source"])

SAME = Layout(lambda array, shape: array, lambda array: array)
# Dense kernels stored [out, in] (PyTorch) against our [in, out].
TRANSPOSED = Layout(lambda array, shape: array.T, lambda array: array.T)
# Query/key/value: [in, heads * head_dim] <-> ours [in, heads, head_dim].
HEADS_KERNEL = Layout(
    lambda array, shape: array.reshape(shape),
    lambda array: array.reshape(array.shape[0], -1),
)
# The same, stored [heads * head_dim, in] (PyTorch).
HEADS_KERNEL_TRANSPOSED = Layout(
    lambda array, shape: array.T.reshape(shape),
    lambda array: array.reshape(array.shape[0], -1).T,
)
# Query/key/value bias: [heads * head_dim] <-> ours [heads, head_dim].
HEADS_BIAS = Layout(
    lambda array, shape: array.reshape(shape), lambda array: array.reshape(-1)
)
# Attention output: [heads * head_dim, out] <-> ours [heads, head_dim, out].
MERGE_HEADS_KERNEL = Layout(
    lambda array, shape: array.reshape(shape),
    lambda array: array.reshape(-1, array.shape[-1]),
)
# The same, stored [out, heads * head_dim] (PyTorch).
MERGE_HEADS_KERNEL_TRANSPOSED = Layout(
    lambda array, shape: array.T.reshape(shape),
    lambda array: array.reshape(-1, array.shape[-1]).T,
)

# source: checkpoint tensor name; target: our variable path (see
# `variables_by_path`); layout: how the two are related.
Mapping = collections.namedtuple("Mapping", ["source", "target", "layout"])


def variables_by_path(model):
    """Our model's variables keyed by their path (`embeddings/layer_norm/gamma`)."""
    return {variable.path: variable for variable in model.weights}


def find_variable(variables, target):
    """The one variable whose path is `target` or ends with `/target`."""
    found = [
        variable
        for path, variable in variables.items()
        if path == target or path.endswith("/" + target)
    ]
    if len(found) != 1:
        raise ConversionError(
            f"Expected exactly one model variable at path {target!r}; found "
            f"{[variable.path for variable in found]}. Is this a BERT model of this package?"
        )
    return found[0]


def load_mapped(model, mappings, get_tensor, source_name):
    """Check then assign checkpoint tensors to the model's variables.

    Args:
        model: a keras model (or layer) whose variables are the targets.
        mappings: list of `Mapping`.
        get_tensor: callable(name) -> NumPy array or None when missing.
        source_name: str. The checkpoint file, named in errors.

    Every tensor is read, shape-checked and converted before any variable is
    assigned, so a bad checkpoint leaves the model untouched.
    """
    variables = variables_by_path(model)
    values = []
    for mapping in mappings:
        variable = find_variable(variables, mapping.target)
        our_shape = tuple(variable.shape)
        expected = tuple(mapping.layout.to_source(np.zeros(our_shape, "float32")).shape)
        array = get_tensor(mapping.source)
        if array is None:
            raise ConversionError(
                f"{source_name}: missing tensor {mapping.source!r} (expected shape "
                f"{expected}, for our variable {variable.path!r})."
            )
        array = np.asarray(array)
        if tuple(array.shape) != expected:
            raise ConversionError(
                f"{source_name}: tensor {mapping.source!r} has shape "
                f"{tuple(array.shape)}; expected {expected} from the config "
                f"(our variable {variable.path!r} is {our_shape})."
            )
        values.append((variable, mapping.layout.to_ours(array, our_shape)))
    for variable, value in values:
        variable.assign(value.astype(variable.dtype, copy=False))  # TensorFlow copies it once more anyway


def export_mapped(model, mappings):
    """Our model's weights as `{checkpoint tensor name: NumPy array}`."""
    import keras

    variables = variables_by_path(model)
    tensors = {}
    for mapping in mappings:
        value = keras.ops.convert_to_numpy(find_variable(variables, mapping.target))
        tensors[mapping.source] = np.ascontiguousarray(mapping.layout.to_source(value))
    return tensors


def check_unused(names, used, source_name, ignored=()):
    """Raise on checkpoint tensors that no mapping consumed.

    Leftover tensors mean the config disagrees with the weights (e.g. more
    layers in the file than `num_layers` says) or another architecture.
    """
    unused = sorted(
        name for name in names if name not in used and not any(part in name for part in ignored)
    )
    if unused:
        shown = unused[:5] + (["..."] if len(unused) > 5 else [])
        raise ConversionError(
            f"{source_name}: {len(unused)} tensor(s) not used by the config's "
            f"architecture: {shown}. Does the config (layers, heads, sizes) match "
            "the weights?"
        )


def check_tied_output(tensors, output_name, embeddings_name, source_name):
    """Raise when a masked-LM output matrix in the file differs from the token embeddings (untied).

    Our masked-LM heads score against the token embeddings (BERT, ALBERT and
    ELECTRA's generator tie them); a checkpoint saved with
    `tie_word_embeddings: false` holds a separate output matrix, which
    they cannot keep. Tied checkpoints omit it or hold an equal copy.
    """
    output, embeddings = tensors.get(output_name), tensors.get(embeddings_name)
    if output is not None and embeddings is not None and (
        output.shape != embeddings.shape or not np.allclose(output, embeddings)
    ):
        raise ConversionError(
            f"{source_name}: tensor {output_name!r} differs from {embeddings_name!r} (an untied output layer, "
            "tie_word_embeddings false); expected them tied (equal): our masked-LM head scores against the token "
            "embeddings. BertEncoder.from_preset reads the encoder alone."
        )


def read_vocabulary(path):
    """The tokens of a `vocab.txt`, one a line (split on newlines only: tokens may hold other breaks)."""
    with open(path, encoding="utf-8", newline="") as file:
        lines = file.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def tokenizer_json_vocabulary(path):
    """The tokens, in id order, of an HF `tokenizer.json` with a WordPiece model (transformers 5 saves BERT's
    and ELECTRA's vocabulary there only, without a vocab.txt), added tokens included.

    transformers strips each token of the vocab.txt it read, so a token of
    Unicode whitespace alone (Chinese BERT's U+2028 on line 344, and its
    "##" + U+2028) is saved as "" (or "##"), several of them under one key.
    No text gives such a token (BERT splits text at whitespace), so each
    gets a placeholder of its id, `[EMPTY_<id>]`, which no text gives either
    (text is split at brackets): the ids of every other token stay as they were.
    """
    try:
        tokenizer = json.loads(pathlib.Path(path).read_text(encoding="utf-8"), object_pairs_hook=_PairsDict)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConversionError(f"{path}: malformed JSON ({error}).") from None
    model = tokenizer.get("model") if isinstance(tokenizer, dict) else None
    kind = model.get("type") if isinstance(model, dict) else None
    if kind != "WordPiece" or not isinstance(model.get("vocab"), dict):
        raise ConversionError(f"{path}: field 'model.type' is {kind!r}; expected 'WordPiece' (a BERT vocabulary).")
    pairs = [*model["vocab"].pairs, *((added["content"], added["id"]) for added in tokenizer.get("added_tokens") or ())]
    tokens = {}
    for token, index in pairs:
        if token.strip() in ("", "##"):
            token = f"[EMPTY_{index}]"
        if tokens.get(index, token) != token:
            raise ConversionError(f"{path}: id {index} is both {tokens[index]!r} and {token!r}; expected one token an id.")
        tokens[index] = token
    if sorted(tokens) != list(range(len(tokens))) or len(set(tokens.values())) != len(tokens):
        raise ConversionError(f"{path}: the WordPiece ids are not 0..{len(tokens) - 1}, one per token.")
    return [tokens[index] for index in range(len(tokens))]


class _PairsDict(dict):
    """A JSON object as a dict that also keeps its (key, value) pairs in order, repeated keys included."""

    def __init__(self, pairs):
        super().__init__(pairs)
        self.pairs = pairs


def check_vocabulary(path, vocabulary_size):
    """Raise when the vocabulary file's size (a vocab.txt, or an HF tokenizer.json) differs from the embedding rows."""
    path = pathlib.Path(path)
    size = len(tokenizer_json_vocabulary(path) if path.suffix == ".json" else read_vocabulary(path))
    if size != vocabulary_size:
        raise ConversionError(
            f"{path}: vocabulary has {size} tokens but the token embedding has "
            f"{vocabulary_size} rows; expected the same number."
        )


def vocabulary_is_lowercase(path):
    """True when no token outside `[...]` and `<...>` specials has an uppercase letter.

    (Chinese BERT's uncased vocabulary holds `<S>` and `<T>`.)
    """
    for token in read_vocabulary(path):
        if len(token) > 2 and (token[0], token[-1]) in (("[", "]"), ("<", ">")):
            continue
        if token != token.lower():
            return False
    return True
