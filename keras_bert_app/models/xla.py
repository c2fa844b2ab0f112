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

Runs whose batches come in several lengths (fine-tuning, `predict` and
`evaluate` with bucketing: up to one shape per bucket length, for each of
the train, test and predict functions) resolve "auto" with
`jit_compile_for_lengths`: on TensorFlow without a GPU or TPU that is no
XLA, because each shape costs a compile of its own. Measured on MiniLM-L6
fine-tuning 1,600 headlines on 2 CPU cores: XLA's steps were about 15%
faster (0.18 s vs 0.21 s) but its compiles took 9 to 20 s per shape; the
whole run took 68 s with XLA and 44 s without. JAX keeps XLA (its op-by-op
mode is far slower), and so does a GPU or TPU.

The environment variable `KERAS_BERT_APP_JIT_COMPILE=0` makes "auto" mean no
XLA on every backend (an explicit `jit_compile=True` still compiles): for
many short runs, where XLA's compile time (seconds per model on a CPU) costs
more than its faster steps save. The test runner sets it for TensorFlow,
except in the tests of XLA itself.
"""

import contextlib
import inspect
import os

import keras

from keras_bert_app import errors

XLA_BACKENDS = ("tensorflow", "jax")


JIT_COMPILE_VARIABLE = "KERAS_BERT_APP_JIT_COMPILE"
_OFF, _ON = ("0", "false", "no", "off"), ("", "1", "true", "yes", "on", "auto")


def default_jit_compile():
    """True where the current backend compiles with XLA (TensorFlow, JAX), unless the environment says no."""
    setting = os.environ.get(JIT_COMPILE_VARIABLE, "").strip().lower()
    if setting in _OFF:
        return False
    if setting not in _ON:
        raise errors.ArgumentError(
            JIT_COMPILE_VARIABLE,
            f"environment variable {JIT_COMPILE_VARIABLE}={os.environ[JIT_COMPILE_VARIABLE]!r}: expected 0 or 1.",
        )
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
    if jit_compile and keras.config.backend() not in XLA_BACKENDS:
        raise errors.ArgumentError("jit_compile", f"jit_compile=True needs the TensorFlow or JAX backend; the backend is {keras.config.backend()}.")
    return bool(jit_compile)


def jit_compile_for_lengths(variable_lengths, jit_compile="auto"):
    """`jit_compile` for a run whose batches have one length or several (bucketing).

    "auto" with `variable_lengths` on TensorFlow without a GPU or TPU gives
    False (see the module docstring); anything else is returned as it is, for
    `resolve_jit_compile` to settle.
    """
    if jit_compile != "auto" or not variable_lengths or keras.config.backend() != "tensorflow":
        return jit_compile
    return "auto" if has_accelerator() else False


@contextlib.contextmanager
def graph_optimization_for(model):
    """Within: no Grappler pass over the functions `model` runs op by op on a TensorFlow CPU.

    Grappler rewrites each TensorFlow function graph when it first runs.
    For a step that runs op by op (no XLA) on a CPU, BERT's graph gains
    nothing from it: measured on MiniLM-L6 fine-tuning (2 CPU cores), steps
    took the same time with it and without (at lengths 8 to 128), and
    outputs were equal, but its passes over the training step's ~4,700
    nodes took 1.3 s of the first step (a twentieth of a 1,600-headline
    run). Skipped only there: XLA-compiled steps, accelerators and
    `tf.distribute` strategies keep TensorFlow's default; the setting is
    restored on leaving, and functions first run outside keep Grappler.

    With `KERAS_BERT_APP_OP_STACKS=0` (what a `keras-bert-app` process sets
    unless the environment says otherwise) the graph ops made within record
    no Python stack either (`without_op_stacks`).
    """
    if not runs_op_by_op_on_cpu(model):
        yield
        return
    import tensorflow as tf

    stacks = contextlib.nullcontext() if records_op_stacks() else without_op_stacks()
    before = tf.config.optimizer.get_experimental_options().get("disable_meta_optimizer", False)
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    try:
        with stacks:
            yield
    finally:
        tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": before})


OP_STACKS_VARIABLE = "KERAS_BERT_APP_OP_STACKS"


def records_op_stacks():
    """Whether graph ops record the Python stack that made them: TensorFlow's default, unless
    `KERAS_BERT_APP_OP_STACKS` is 0 (a `keras-bert-app` process sets it so when unset)."""
    setting = os.environ.get(OP_STACKS_VARIABLE, "").strip().lower()
    if setting not in _OFF + _ON:
        raise errors.ArgumentError(
            OP_STACKS_VARIABLE, f"environment variable {OP_STACKS_VARIABLE}={os.environ[OP_STACKS_VARIABLE]!r}: "
            "expected 0 or 1.",
        )
    return setting not in _OFF


@contextlib.contextmanager
def without_op_stacks():
    """Within: TensorFlow graph ops are made without the Python stack of their creation.

    TensorFlow walks the Python stack (about a hundred frames deep under
    Keras) for every op a `tf.function` traces, to name the source lines in
    the message of an error the op raises when it runs. Measured on
    MiniLM-L6 fine-tuning on 2 CPU cores: tracing the training step 1.9-2.1
    -> 1.8 s, instantiating it 0.69 -> 0.53 s, the whole 1,600-headline run
    19.9 -> 19.0 s (4 runs each, alternating; the same dev accuracy). Such
    an error still names its node ("Detected at node ... <stack traces
    unavailable>"). Restored on leaving; a TensorFlow whose op constructor
    has no such switch is left as it is.
    """
    from tensorflow.python.framework import ops

    create = ops._create_c_op
    if "extract_traceback" not in inspect.signature(create).parameters:
        yield
        return

    def create_without_stack(*args, **kwargs):
        kwargs["extract_traceback"] = False
        return create(*args, **kwargs)

    ops._create_c_op = create_without_stack
    try:
        yield
    finally:
        ops._create_c_op = create


def pads_to_exact_length(model):
    """Whether `model`'s length-grouped batches are cut to their longest example itself, not to a bucket length.

    Bucket lengths (`data.bucketing`) exist for what compiles per shape:
    XLA, TPUs, JAX. A TensorFlow model run op by op on a CPU (no XLA, no
    strategy) or a PyTorch model on a CPU compiles nothing per shape, so
    rounding a batch up to a bucket only adds padding: measured on MiniLM-L6
    fine-tuning steps (2 CPU cores, op by op), a step's time grew with the
    length (0.16 s at 9 tokens, 0.20 s at 12, 0.25 s at 16) and a length's
    first step took no longer than its next ones. There batches are padded
    to their longest example, as HF's `DataCollatorWithPadding` pads; 1,600
    BBC headlines in length-grouped batches of 32 then take 15% fewer
    token positions than rounded up to buckets.
    """
    if keras.config.backend() == "torch":
        return not has_accelerator()
    return runs_op_by_op_on_cpu(model)


def runs_op_by_op_on_cpu(model):
    """Whether `model` runs op by op on a CPU: TensorFlow, no XLA, no accelerator, no `tf.distribute` strategy."""
    if keras.config.backend() != "tensorflow" or getattr(model, "jit_compile", False) or has_accelerator():
        return False
    import tensorflow as tf

    return not tf.distribute.has_strategy() and getattr(model, "_distribute_strategy", None) is None


def has_accelerator():
    """Whether the backend sees a GPU or a TPU (PyTorch: a CUDA or MPS device, where Keras puts its tensors)."""
    if keras.config.backend() == "torch":  # keras.distribution has no PyTorch implementation
        import torch

        return torch.cuda.is_available() or torch.backends.mps.is_available()
    return any(device.split(":")[0].lower() in ("gpu", "tpu") for device in keras.distribution.list_devices())


def _replicas(model):
    """Replicas of the TensorFlow strategy the model was built (or is compiled) under; 1 elsewhere."""
    if keras.config.backend() != "tensorflow":
        return 1
    import tensorflow as tf

    strategy = getattr(model, "distribute_strategy", None) or tf.distribute.get_strategy()
    return strategy.num_replicas_in_sync
