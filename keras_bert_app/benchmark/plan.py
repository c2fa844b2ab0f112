"""What `keras-bert-app bench` runs: the checked settings and the (model, backend) runs."""

import importlib.util

BACKEND_MODULES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}


def worker_spec(args):
    """The checked settings every worker gets, and the backends to run ours on."""
    backends = _backends(args.backends)
    if args.in_process:
        import keras

        if backends != [keras.config.backend()]:
            raise ValueError(
                f"--in-process runs on the current backend only: pass --backends "
                f"{keras.config.backend()}; got {backends}."
            )
    for name in ("batch_size", "steps", "sequence_length", "max_predictions"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1; got {getattr(args, name)}.")
    if args.warmup < 0:
        raise ValueError(f"--warmup must be >= 0; got {args.warmup}.")
    if args.max_predictions > args.sequence_length - 2:
        raise ValueError(
            f"--max-predictions must be <= sequence length - 2 ([CLS] and [SEP] are never masked); "
            f"got {args.max_predictions} for sequence length {args.sequence_length}."
        )
    from keras_bert_app import presets  # no Keras, no TensorFlow

    encoder_config = presets.read_config(args.preset)["encoder"]
    max_length = encoder_config.get("max_sequence_length", 512)
    if args.sequence_length > max_length:
        raise ValueError(
            f"--sequence-length {args.sequence_length} exceeds the preset's max_sequence_length {max_length}."
        )
    spec = {
        "preset": str(args.preset),
        "encoder": encoder_config,
        "sequence_length": args.sequence_length,
        "batch_size": args.batch_size,
        "inference_batch_sizes": _positive_ints(args.inference_batch_sizes, "--inference-batch-sizes"),
        "max_predictions": args.max_predictions,
        "steps": args.steps,
        "warmup": args.warmup,
        "jit": args.jit,
        "mixed_precision": args.mixed_precision,
        "fused_attention": getattr(args, "fused_attention", False),
    }
    return spec, backends


def planned_runs(args, backends, notes):
    """(model, backend) pairs to run: ours and keras-hub on each backend, HF on torch."""
    runs = [("ours", backend) for backend in backends]
    if _keras_hub_available(args, notes):
        runs += [("keras-hub", backend) for backend in backends]
    if args.skip_hf:
        notes.append("HF transformers skipped (--skip-hf).")
    elif not (is_installed("transformers") and is_installed("torch")):
        notes.append("HF transformers skipped: transformers and torch are not both installed.")
    else:
        runs.append(("HF", "torch"))
    return runs


def _backends(text):
    installed = [name for name, module in BACKEND_MODULES.items() if is_installed(module)]
    if text is None:
        if not installed:
            raise ValueError("No Keras backend is installed (tensorflow, jax or torch).")
        return installed
    backends = [name.strip() for name in text.split(",") if name.strip()]
    for name in backends:
        if name not in BACKEND_MODULES:
            raise ValueError(f"Unknown backend {name!r}: expected some of {list(BACKEND_MODULES)}.")
        if name not in installed:
            raise ValueError(f"Backend {name!r} is not installed here; installed: {installed}.")
    if not backends:
        raise ValueError("--backends is empty.")
    return backends


def _positive_ints(text, flag):
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise ValueError(f"{flag} must be comma-separated positive integers; got {text!r}.")
    return values


def is_installed(module):
    return importlib.util.find_spec(module) is not None


def _keras_hub_available(args, notes):
    if args.skip_keras_hub:
        notes.append("keras-hub skipped (--skip-keras-hub).")
        return False
    if not is_installed("keras_hub"):
        notes.append("keras-hub skipped: not installed.")
        return False
    if not is_installed("tensorflow"):
        notes.append("keras-hub skipped: it imports TensorFlow, which is not installed.")
        return False
    return True
