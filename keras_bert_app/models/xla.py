"""XLA compilation and batch shapes: Keras' `jit_compile`, checked once, and what it implies for padding.

`jit_compile` has Keras' meaning everywhere in this package ("auto", True,
False): "auto" lets Keras decide (XLA on JAX and on TensorFlow with a GPU or
TPU; no XLA on a TensorFlow CPU, under a multi-replica `tf.distribute`
strategy, or on PyTorch). One flag on the commands, `--jit-compile`, passes
it through; nothing in the environment changes it.

What XLA means for the data: XLA (and JAX, and a TPU) compiles a program per
input shape, so batches are padded to a few bucket lengths
(`data.bucketing`); a model that runs op by op compiles nothing per shape, so
its length-grouped batches are cut to their longest example instead
(`pads_to_exact_length`): fewer padded tokens, less work.
"""

import keras

from keras_bert_app import errors

XLA_BACKENDS = ("tensorflow", "jax")


def resolve_jit_compile(jit_compile="auto"):
    """`jit_compile` checked for `keras.Model.compile`: "auto", True or False (True needs TensorFlow or JAX)."""
    if isinstance(jit_compile, str) and jit_compile == "auto":
        return "auto"
    if not isinstance(jit_compile, bool):
        raise errors.ArgumentError("jit_compile", f"jit_compile must be 'auto', True or False; got {jit_compile!r}.")
    if jit_compile and keras.config.backend() not in XLA_BACKENDS:
        raise errors.ArgumentError(
            "jit_compile", f"jit_compile=True needs the TensorFlow or JAX backend; the backend is {keras.config.backend()}."
        )
    return jit_compile


def parse_jit_compile(text):
    """The `--jit-compile` flag's value: "auto", "true"/"1" or "false"/"0"."""
    value = {"auto": "auto", "true": True, "1": True, "false": False, "0": False}.get(str(text).strip().lower())
    if value is None:
        raise errors.ArgumentError("--jit-compile", f"--jit-compile takes auto, true or false; got {text!r}.")
    return value


def pads_to_exact_length(model):
    """Whether `model`'s length-grouped batches are cut to their longest example itself, not to a bucket length.

    Bucket lengths exist for what compiles per shape: XLA, TPUs, JAX. A
    TensorFlow model run op by op on a CPU (no XLA, no strategy) or a
    PyTorch model on a CPU compiles nothing per shape, so rounding a batch
    up to a bucket only adds padding; there batches are padded to their
    longest example, as HF's `DataCollatorWithPadding` pads.
    """
    if keras.config.backend() == "torch":
        return not has_accelerator()
    return runs_op_by_op_on_cpu(model)


def runs_op_by_op_on_cpu(model):
    """Whether `model` runs op by op on a CPU: TensorFlow, no XLA, no accelerator, no `tf.distribute` strategy."""
    if keras.config.backend() != "tensorflow" or model.jit_compile is True or has_accelerator():
        return False
    import tensorflow as tf

    # A model built under a strategy keeps it (`distribute_strategy`); one built outside has the default one.
    return not tf.distribute.has_strategy() and model.distribute_strategy is tf.distribute.get_strategy()


def has_accelerator():
    """Whether the backend sees a GPU or a TPU (PyTorch: a CUDA or MPS device, where Keras puts its tensors)."""
    if keras.config.backend() == "torch":  # keras.distribution has no PyTorch implementation
        import torch

        return torch.cuda.is_available() or torch.backends.mps.is_available()
    return any(device.split(":")[0].lower() in ("gpu", "tpu") for device in keras.distribution.list_devices())
