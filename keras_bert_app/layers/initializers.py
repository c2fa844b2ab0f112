"""BERT's truncated-normal initializer, whose draws a model about to load a checkpoint skips.

Building a model draws every weight from its initializer, and loading a
checkpoint then overwrites them: on a 2-core CPU, MiniLM-L6's 22.7M draws
took 0.4 s of each `from_preset` (the 11.7M of the token embeddings most),
BERT-Base's 110M several seconds. Inside `deferred_initialization()` the
`TruncatedNormal` of our layers fills with zeros instead; `finish` then
draws, for each of those weights the checkpoint did not fill (a new task
head, a pooler the checkpoint lacks), exactly what it would have drawn at
construction (an initializer's seed is fixed when it is made, so the draw
does not depend on when it runs). Keras offers no such hook: its lazy
variables (`StatelessScope`) are JAX-style and cannot be assigned before
they are initialised.
"""

import contextlib
import threading

import keras

# The open `deferred_initialization` records of each thread, innermost last: a
# model another thread builds meanwhile draws its weights as usual.
_THREAD = threading.local()


def _active():
    if not hasattr(_THREAD, "records"):
        _THREAD.records = []
    return _THREAD.records

# Where a layer keeps the variable an `*_initializer` attribute filled.
_VARIABLE_OF = {
    "kernel_initializer": "kernel",  # Dense, EinsumDense
    "embeddings_initializer": "embeddings",  # Embedding
    "position_initializer": "position_embeddings",  # BertEmbeddings
}


@keras.saving.register_keras_serializable(package="keras_bert_app")
class TruncatedNormal(keras.initializers.TruncatedNormal):
    """Keras' `TruncatedNormal`, filling zeros inside `deferred_initialization()`."""

    def __call__(self, shape, dtype=None):
        records = _active()
        if records:
            records[-1].calls += 1
            records[-1].initializers[id(self)] = self
            return keras.ops.zeros(shape, dtype=dtype)
        return super().__call__(shape, dtype=dtype)


def truncated_normal(stddev):
    """BERT's weight initializer (Devlin et al. 2018: truncated normal, stddev `initializer_range`)."""
    return TruncatedNormal(stddev=stddev)


class DeferredInitialization:
    """The weights a `deferred_initialization()` block left at zeros, and their initializers."""

    def __init__(self):
        self.calls = 0
        self.initializers = {}
        self.assigned = set()
        self._pending = None

    def pending(self, model):
        """`[(variable, initializer)]` for each weight of `model` filled with zeros in the block."""
        if self._pending is None:
            found = {}
            for layer in model._flatten_layers(include_self=True, recursive=True):
                for attribute, name in _VARIABLE_OF.items():
                    initializer = getattr(layer, attribute, None)
                    variable = getattr(layer, name, None)
                    if id(initializer) in self.initializers and isinstance(variable, keras.Variable):
                        found[id(variable)] = (variable, initializer)
            if len(found) != self.calls:
                raise RuntimeError(
                    f"deferred_initialization: {self.calls} weights were filled with zeros but {len(found)} were "
                    "found on the model; a layer keeps its initializer under an attribute `_VARIABLE_OF` lacks."
                )
            self._pending = list(found.values())
        return self._pending

    @contextlib.contextmanager
    def loading(self, model):
        """Within: note which of `model`'s deferred weights are assigned (by a checkpoint loader)."""
        wrapped = []
        try:
            for variable, _ in self.pending(model):
                variable.assign = self._noting(variable, variable.assign)
                wrapped.append(variable)
            yield
        finally:
            for variable in wrapped:
                del variable.assign

    def _noting(self, variable, assign):
        def noted_assign(value):
            result = assign(value)
            self.assigned.add(id(variable))
            return result

        return noted_assign

    def finish(self, model):
        """Draw each deferred weight that nothing assigned, as its initializer would have at construction."""
        for variable, initializer in self.pending(model):
            if id(variable) not in self.assigned:
                variable.assign(keras.initializers.TruncatedNormal.__call__(initializer, variable.shape, variable.dtype))
        self.assigned = {id(variable) for variable, _ in self.pending(model)}


@contextlib.contextmanager
def deferred_initialization():
    """Within: our `TruncatedNormal` weights are zeros until the yielded record's `finish(model)`.

    ```python
    with deferred_initialization() as deferred:
        model = build()
    with deferred.loading(model):
        load_checkpoint(model)
    deferred.finish(model)
    ```
    """
    record = DeferredInitialization()
    _active().append(record)
    try:
        yield record
    finally:
        _active().remove(record)
