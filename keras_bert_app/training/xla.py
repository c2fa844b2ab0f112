"""XLA compilation by default wherever the backend can use it.

Keras' `jit_compile="auto"` turns XLA on for JAX, and for TensorFlow only on
accelerators: on a CPU a TensorFlow model runs op by op. For BERT, XLA's
fused kernels are faster on CPU too (`tools/benchmark.py`: about 25% for a
BERT-base training step), so our models and commands resolve "auto" to XLA
on TensorFlow and JAX, and to no XLA on PyTorch, where Keras has none.
"""

import keras

XLA_BACKENDS = ("tensorflow", "jax")


def default_jit_compile():
    """True where the current backend compiles with XLA (TensorFlow, JAX)."""
    return keras.config.backend() in XLA_BACKENDS


def resolve_jit_compile(jit_compile="auto"):
    """`jit_compile` for `keras.Model.compile`: "auto" becomes `default_jit_compile()`.

    Args:
        jit_compile: "auto", True or False. True on PyTorch is an error.
    """
    if jit_compile == "auto":
        return default_jit_compile()
    if jit_compile and not default_jit_compile():
        raise ValueError(f"jit_compile=True needs the TensorFlow or JAX backend; the backend is {keras.config.backend()}.")
    return bool(jit_compile)
