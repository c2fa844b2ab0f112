"""The worker side of `keras-bert-app bench`: times one implementation on the current Keras backend.

It runs in a fresh subprocess per (model, backend), started by
`processes.run_worker_process` as `python -m keras_bert_app.benchmark.worker SPEC_JSON`
with KERAS_BACKEND set (the spec is its one argument, as JSON), or in the
parent process with `in_process=True` (`--in-process`). It
imports TensorFlow only for TensorFlow and keras-hub, so our JAX and PyTorch
runs report `tensorflow_imported: false`.
"""

import json
import sys

from keras_bert_app.benchmark.flops import vendor_peak
from keras_bert_app.benchmark.measurement import encoder_inputs, make_batch, progress, time_inference, time_steps
from keras_bert_app.benchmark.peers import measure_hf, measure_keras_hub
from keras_bert_app.benchmark.processes import RESULT_PREFIX


def run_worker(spec):
    """Time one implementation (`spec["model"]`) on the current Keras backend; a result dict."""
    import keras
    import numpy as np

    # (No keras.utils.set_random_seed: it imports TensorFlow when installed.)
    backend = "torch" if spec["model"] == "HF" else keras.config.backend()
    measure = {"ours": measure_ours, "keras-hub": measure_keras_hub, "HF": measure_hf}[spec["model"]]
    batch = make_batch(spec, spec["batch_size"], np.random.default_rng(0))
    inference_batches = {
        size: make_batch(spec, size, np.random.default_rng(size)) for size in spec["inference_batch_sizes"]
    }
    policy = keras.config.dtype_policy()
    if spec["mixed_precision"]:
        keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        train, inference, extra = measure(spec, batch, inference_batches)
    finally:
        keras.config.set_dtype_policy(policy)  # matters with --in-process
    device_kind = _device_kind(backend)
    result = {
        "model": spec["model"],
        "backend": backend,
        "device_kind": device_kind,
        "vendor_peak_flops": vendor_peak(device_kind),
        "train": train,
        "inference": {str(size): times for size, times in inference.items()},
        "tensorflow_imported": "tensorflow" in sys.modules,
        "versions": _versions(spec["model"], backend),
        "notes": [],
    }
    result.update(extra)
    if backend in ("jax", "torch") and spec["model"] == "ours" and result["tensorflow_imported"]:
        result["notes"].append(f"ours on {backend} imported TensorFlow (it should not).")
    return result


def measure_ours(spec, batch, inference_batches):
    """Our `BertPretrainer` training step and `BertEncoder` forward (see `peers` for the others)."""
    import keras

    from keras_bert_app.models.bert_encoder import INPUT_NAMES, BertEncoder
    from keras_bert_app.models.bert_pretrainer import BertPretrainer

    jit = spec["jit"] and keras.config.backend() != "torch"
    encoder = BertEncoder.from_preset(
        spec["preset"], load_weights=False, fused_attention=spec.get("fused_attention", False)
    )
    pretrainer = BertPretrainer(encoder)
    pretrainer.compile(jit_compile=jit)
    x = {**encoder_inputs(batch), "mask_positions": batch["mask_positions"]}
    y = {"mlm": batch["mlm_labels"], "nsp": batch["nsp_labels"]}
    weights = {"mlm": batch["mlm_weights"]}
    progress(f"training step, batch {spec['batch_size']}, jit_compile={jit}")
    train = time_steps(lambda: pretrainer.train_on_batch(x, y, sample_weight=weights), spec["warmup"], spec["steps"])

    # Encoder forward with the two outputs every peer returns (sequence, pooled).
    inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}
    outputs = encoder(inputs)
    forward = keras.Model(inputs, {key: outputs[key] for key in ("sequence_output", "pooled_output")})
    forward.compile(jit_compile=jit)
    inference = time_inference(spec, inference_batches, lambda b: forward.predict_on_batch(encoder_inputs(b)))
    return train, inference, {"parameters": encoder.count_params()}


def _device_kind(backend):
    """"cpu", or the accelerator's name as its framework reports it."""
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        return "cpu" if device.platform == "cpu" else device.device_kind
    if backend == "torch":
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return "cpu"
    return tf.config.experimental.get_device_details(gpus[0]).get("device_name", "gpu")


def _versions(model, backend):
    """Versions of the libraries this worker ran on (all already imported)."""
    modules = {
        "ours": ["keras", backend],
        "keras-hub": ["keras", "keras_hub", backend],
        "HF": ["transformers", "torch"],
    }
    return {name: getattr(sys.modules[name], "__version__", "?") for name in modules[model]}


def main(spec_json: str) -> None:
    """Run the worker on the spec given as JSON; print its result on one `RESULT_PREFIX` line.

    An error ends the process with Python's traceback and a non-zero exit
    status, which `processes.run_worker_process` reports.
    """
    result = run_worker(json.loads(spec_json))
    print(RESULT_PREFIX + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
