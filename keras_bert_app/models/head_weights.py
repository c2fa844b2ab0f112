"""The weights of a model's heads: everything but its encoder, in Keras' own weights format.

A preset folder holds the encoder in `model.weights.h5` and, for a
pretrainer or a fine-tuned task, the rest of the model in a second file
written by `keras.saving.save_weights` with the encoder skipped.
`load_head_weights` reads that file, a full model's `save_weights` file, and
the per-variable layout of the pretraining heads that earlier versions wrote
to `pretrainer.weights.h5`.
"""

import os
import pathlib

import keras
import numpy as np

KERAS_LAYERS_GROUP = "layers"  # the root group of Keras' weights files


def save_head_weights(model, path):
    """Write every weight of `model` except its encoder's (and no optimizer state), atomically."""
    path = pathlib.Path(path)
    temporary = path.with_name(f".{path.name}.tmp.weights.h5")
    keras.saving.save_weights(model, str(temporary), objects_to_skip=_not_heads(model))
    os.replace(temporary, path)


def load_head_weights(model, path):
    """Fill the heads of `model` from a file written by `save_head_weights` (or an older layout).

    The encoder's weights are not read (they come from `model.weights.h5`),
    even when the file holds them (a full model's `save_weights`).
    """
    if _is_keras_file(path):
        keras.saving.load_weights(model, str(path), objects_to_skip=_not_heads(model))
    else:
        _load_legacy_head_weights(model, path)


def saved_head_names(path):
    """Names of the heads (top-level layers such as "next_sentence_head") a heads file holds."""
    import h5py

    with h5py.File(path, "r") as file:
        group = file[KERAS_LAYERS_GROUP] if KERAS_LAYERS_GROUP in file else file
        return set(group.keys())


def _not_heads(model):
    """The encoder's layers (the tied embedding included) and the optimizer: not written with the heads."""
    skipped = all_layers(model.encoder)
    if getattr(model, "optimizer", None) is not None:
        skipped.append(model.optimizer)
    return skipped


def all_layers(layer):
    """`layer` and every layer inside it, found through public attributes on every backend."""
    found, pending = {}, [layer]
    while pending:
        current = pending.pop()
        if id(current) not in found:
            found[id(current)] = current
            pending.extend(_sublayers(current))
    return list(found.values())


def _sublayers(layer):
    """A model's `layers`, and the layers a layer keeps as attributes (PyTorch: its child modules)."""
    children = list(layer.layers) if isinstance(layer, keras.Model) else []
    if keras.config.backend() == "torch":  # a Keras layer is a torch.nn.Module there, its sublayers its children
        children += [child for child in layer.children() if isinstance(child, keras.layers.Layer)]
    else:
        for name, value in vars(layer).items():
            if not name.startswith("_"):
                children += [item for item in (value if isinstance(value, (list, tuple)) else [value])
                             if isinstance(item, keras.layers.Layer)]
    return children


def _is_keras_file(path):
    import h5py

    with h5py.File(path, "r") as file:
        return KERAS_LAYERS_GROUP in file


def _load_legacy_head_weights(model, path):
    """The pretraining heads as earlier versions wrote them: one dataset per `head/.../variable` path."""
    import h5py

    stored = {}

    def collect(name, item):
        if isinstance(item, h5py.Dataset):
            stored[name] = item[()]

    with h5py.File(path, "r") as file:
        file.visititems(collect)
    for name, variable in _legacy_head_variables(model).items():
        if name not in stored:
            raise ValueError(f"{path}: no weights for {name!r}; the file has {sorted(stored)}.")
        value = np.asarray(stored[name])
        if value.shape != tuple(variable.shape):
            raise ValueError(f"{path}: {name!r} has shape {value.shape}, expected {tuple(variable.shape)}.")
        variable.assign(value)


def _legacy_head_variables(model):
    """`{"masked_lm_head/dense/kernel": variable, ...}`: the heads' own variables (not the tied embeddings)."""
    tied = id(model.encoder.token_embedding.embeddings)
    variables = {}
    for head in (model.masked_lm_head, model.next_sentence_head):
        if head is None:
            continue
        for variable in head.weights:
            if id(variable) != tied:
                parts = variable.path.split("/")
                if head.name in parts:
                    parts = parts[len(parts) - parts[::-1].index(head.name):]
                variables[f"{head.name}/{'/'.join(parts)}"] = variable
    return variables
