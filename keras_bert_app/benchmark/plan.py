"""What `keras-bert-app bench` runs: the checked settings and the (model, backend) runs."""

import importlib.util

from keras_bert_app import errors

BACKEND_MODULES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}


def worker_spec(
    preset, backends, sequence_length, batch_size, inference_batch_sizes, max_predictions, steps, warmup, jit,
    mixed_precision, fused_attention, in_process,
):
    """The checked settings every worker gets, and the backends to run ours on (typed errors naming the argument)."""
    backends = _backends(backends)
    if in_process:
        import keras

        if backends != [keras.config.backend()]:
            raise errors.ArgumentError(
                "in_process",
                f"in_process runs on the current backend only: pass backends=[{keras.config.backend()!r}] "
                f"(--backends {keras.config.backend()}); got {backends}.",
            )
    for name, value in (("batch_size", batch_size), ("steps", steps), ("sequence_length", sequence_length),
                        ("max_predictions", max_predictions)):
        errors.check_int(name, value, minimum=1)
    errors.check_int("warmup", warmup, minimum=0)
    if max_predictions > sequence_length - 2:
        raise errors.ArgumentError(
            "max_predictions",
            f"max_predictions must be <= sequence length - 2 ([CLS] and [SEP] are never masked); "
            f"got {max_predictions} for sequence length {sequence_length}.",
        )
    errors.check_type("inference_batch_sizes", inference_batch_sizes, (list, tuple), "a list of ints")
    if not inference_batch_sizes:
        raise errors.ArgumentError("inference_batch_sizes", "inference_batch_sizes is empty.")
    for size in inference_batch_sizes:
        errors.check_int("inference_batch_sizes", size, minimum=1)
    for name, value in (("jit", jit), ("mixed_precision", mixed_precision), ("fused_attention", fused_attention)):
        errors.check_type(name, value, bool)
    from keras_bert_app.convert import resolve  # no Keras, no TensorFlow

    encoder_config = resolve.read_config(preset)["encoder"]  # ours or a foreign checkpoint's; an ArgumentError naming "preset"
    max_length = encoder_config.get("max_sequence_length", 512)
    if sequence_length > max_length:
        raise errors.ArgumentError(
            "sequence_length", f"sequence_length {sequence_length} exceeds the preset's max_sequence_length {max_length}."
        )
    spec = {
        "preset": str(preset),
        "encoder": encoder_config,
        "sequence_length": sequence_length,
        "batch_size": batch_size,
        "inference_batch_sizes": list(inference_batch_sizes),
        "max_predictions": max_predictions,
        "steps": steps,
        "warmup": warmup,
        "jit": jit,
        "mixed_precision": mixed_precision,
        "fused_attention": fused_attention,
    }
    return spec, backends


def planned_runs(backends, skip_keras_hub, skip_hf, notes):
    """(model, backend) pairs to run: ours and keras-hub on each backend, HF on torch."""
    runs = [("ours", backend) for backend in backends]
    if _keras_hub_available(skip_keras_hub, notes):
        runs += [("keras-hub", backend) for backend in backends]
    if skip_hf:
        notes.append("HF transformers skipped (--skip-hf).")
    elif not (is_installed("transformers") and is_installed("torch")):
        notes.append("HF transformers skipped: transformers and torch are not both installed.")
    else:
        runs.append(("HF", "torch"))
    return runs


def _backends(names):
    """The backends asked for (None: those installed), checked."""
    installed = [name for name, module in BACKEND_MODULES.items() if is_installed(module)]
    if names is None:
        if not installed:
            raise errors.ArgumentError("backends", "backends: no Keras backend is installed (tensorflow, jax or torch).")
        return installed
    names = [names] if isinstance(names, str) else names
    errors.check_type("backends", names, (list, tuple), "None or a list of backend names")
    backends = [str(name).strip() for name in names if str(name).strip()]
    for name in backends:
        if name not in BACKEND_MODULES:
            raise errors.ArgumentError("backends", f"backends: Unknown backend {name!r}: expected some of {list(BACKEND_MODULES)}.")
        if name not in installed:
            raise errors.ArgumentError("backends", f"backends: {name!r} is not installed here; installed: {installed}.")
    if not backends:
        raise errors.ArgumentError("backends", "backends is empty.")
    return backends


def is_installed(module):
    return importlib.util.find_spec(module) is not None


def _keras_hub_available(skip_keras_hub, notes):
    if skip_keras_hub:
        notes.append("keras-hub skipped (--skip-keras-hub).")
        return False
    if not is_installed("keras_hub"):
        notes.append("keras-hub skipped: not installed.")
        return False
    if not is_installed("tensorflow"):
        notes.append("keras-hub skipped: it imports TensorFlow, which is not installed.")
        return False
    return True
