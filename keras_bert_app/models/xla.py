"""XLA compilation by default wherever the backend can use it.

Keras' `jit_compile="auto"` turns XLA on for JAX, and for TensorFlow only on
accelerators: on a CPU a TensorFlow model runs op by op. For BERT, XLA's
fused kernels are faster on CPU too (`tools/benchmark.py`: about 25% for a
BERT-base training step), so our models and commands resolve "auto" to XLA
on TensorFlow and JAX, and to no XLA on PyTorch, where Keras has none.

One exception: a TensorFlow model under a `tf.distribute` strategy with more
than one replica keeps Keras' own "auto". XLA on CPU cannot compile the
cross-replica collectives (`CollectiveGatherV2`) that MirroredStrategy and
MultiWorkerMirroredStrategy put into the train step, and Keras' "auto"
already turns XLA on where it can (GPU) and TPUStrategy compiles anyway.
"""

import keras

from keras_bert_app import errors

XLA_BACKENDS = ("tensorflow", "jax")


def default_jit_compile():
    """True where the current backend compiles with XLA (TensorFlow, JAX)."""
    return keras.config.backend() in XLA_BACKENDS


def resolve_jit_compile(jit_compile="auto", model=None):
    """`jit_compile` for `keras.Model.compile`: "auto" becomes `default_jit_compile()`.

    Args:
        jit_compile: "auto", True or False. True on PyTorch is an error.
        model: optional, the model being compiled: on TensorFlow, a model
            built under a multi-replica `tf.distribute` strategy keeps
            "auto" for Keras to resolve (see the module docstring).
    """
    if jit_compile == "auto":
        if _replicas(model) > 1:
            return "auto"
        return default_jit_compile()
    if jit_compile and not default_jit_compile():
        raise errors.ArgumentError("jit_compile", f"jit_compile=True needs the TensorFlow or JAX backend; the backend is {keras.config.backend()}.")
    return bool(jit_compile)


def _replicas(model):
    """Replicas of the TensorFlow strategy the model was built (or is compiled) under; 1 elsewhere."""
    if keras.config.backend() != "tensorflow":
        return 1
    import tensorflow as tf

    strategy = getattr(model, "distribute_strategy", None) or tf.distribute.get_strategy()
    return strategy.num_replicas_in_sync
