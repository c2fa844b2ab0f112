"""Model FLOPs and peak FLOP/s for MFU: the formula, the CPU peak measured in the run, vendor peaks."""

import time

FLOPS_FORMULA = (
    "training FLOPs/step = 6 * N * T + 12 * L * H * S * T; inference FLOPs/step = "
    "2 * N * T + 4 * L * H * S * T; N = non-embedding parameters of the encoder "
    "(Transformer blocks + pooler), T = batch * S tokens, L layers, H hidden size, "
    "S sequence length (second term: attention scores and weighted sum). Embedding "
    "lookups, LayerNorms, softmax and the pretraining heads are not counted, so every "
    "implementation gets the same FLOPs for the same model (HF's MLM over all "
    "positions is extra work it does, not model FLOPs)."
)


def measure_cpu_peak_flops(size=2048, repeats=5):
    """FLOP/s of the fastest of `repeats` float32 [size, size] matmuls (NumPy BLAS, all cores)."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    a @ b  # warm up threads and caches
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best


def non_embedding_parameters(encoder_config):
    """Parameters of the Transformer blocks and the pooler (biases and LayerNorms included)."""
    hidden = encoder_config["hidden_dim"]
    intermediate = encoder_config["intermediate_dim"]
    attention = 4 * hidden * hidden + 4 * hidden  # q, k, v, output projections
    feed_forward = 2 * hidden * intermediate + intermediate + hidden
    layer_norms = 2 * 2 * hidden
    pooler = hidden * hidden + hidden
    return encoder_config["num_layers"] * (attention + feed_forward + layer_norms) + pooler


def model_flops(encoder_config, batch_size, sequence_length, training):
    """FLOPs of one step on a batch (see FLOPS_FORMULA)."""
    tokens = batch_size * sequence_length
    attention = 4 * encoder_config["num_layers"] * encoder_config["hidden_dim"] * sequence_length * tokens
    dense = 2 * non_embedding_parameters(encoder_config) * tokens
    return 3 * (dense + attention) if training else dense + attention


def row_peak(worker, peak_tflops, cpu_peak):
    """The peak FLOP/s a worker's rows are divided by for MFU, and where it comes from."""
    if peak_tflops is not None:
        return peak_tflops * 1e12, "--peak-tflops"
    if worker["device_kind"] == "cpu":
        return cpu_peak, "measured CPU float32 matmul"
    if worker.get("vendor_peak_flops"):
        return worker["vendor_peak_flops"], f"vendor dense bf16 peak of {worker['device_kind']}"
    return None, f"unknown peak for {worker['device_kind']} (pass --peak-tflops)"


def peak_settings(peak_tflops, cpu_peaks):
    """The peaks of this run, for the JSON settings and the printed note."""
    if peak_tflops is not None:
        return {"flops": peak_tflops * 1e12, "description": f"{peak_tflops} TFLOP/s from --peak-tflops"}
    return {
        "cpu_flops": max(cpu_peaks),
        "cpu_flops_measured": cpu_peaks,
        "description": (
            f"CPU rows: {max(cpu_peaks) / 1e12:.3f} TFLOP/s, the best float32 2048x2048 NumPy matmul "
            "measured before and after the models in this run (all cores); accelerator rows: the "
            "vendor dense bf16 peak (keras_bert_app.training.throughput.PEAK_FLOPS)"
        ),
    }


def vendor_peak(device_kind):
    """The vendor dense bf16 peak FLOP/s of a known accelerator; None on CPU or when unknown."""
    if device_kind == "cpu":
        return None
    from keras_bert_app.training.throughput import peak_flops

    return peak_flops(device_kind)
