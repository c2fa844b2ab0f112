"""Training throughput in the log: tokens per second and model FLOPs utilization."""

import os
import time

import keras

# Dense bf16/fp16 peak FLOP/s per device (vendor figures), by device-kind substring.
PEAK_FLOPS = {
    "H100": 989e12, "H200": 989e12,  # H200: same compute as the H100 (more, faster memory)
    "A100": 312e12, "L4": 121e12, "A10G": 125e12, "T4": 65e12, "V100": 125e12,
    "TPU v2": 45e12 / 2, "TPU v3": 123e12 / 2, "TPU v4": 275e12, "TPU v5 lite": 197e12, "TPU v5e": 197e12,
    "TPU v5p": 459e12,
}
# A CPU core with two AVX2 FMA units does 2 x 8 x 2 = 32 float32 FLOP per cycle.
CPU_FLOPS_PER_CYCLE = 32


def bert_training_flops(num_layers, hidden_dim, intermediate_dim, vocabulary_size, sequence_length,
                        num_predictions):
    """FLOPs of one training step on one sequence (forward + backward = 3 x forward).

    Per token and layer: q/k/v/output projections 8H², feed-forward 4HI,
    attention scores and weighted sum 4SH; per prediction the MLM head
    2H² + 2HV (it runs only at the masked positions). Embedding lookups,
    LayerNorms, softmax and the pooler/NSP head are left out (< 1%).
    """
    per_token = num_layers * (8 * hidden_dim**2 + 4 * hidden_dim * intermediate_dim
                              + 4 * sequence_length * hidden_dim)
    per_prediction = 2 * hidden_dim**2 + 2 * hidden_dim * vocabulary_size
    return 3 * (sequence_length * per_token + num_predictions * per_prediction)


def peak_flops(device_kind=None, num_devices=1):
    """Peak FLOP/s of the devices training runs on, or None when unknown.

    Args:
        device_kind: str or None. e.g. "NVIDIA A100-SXM4-40GB", "TPU v4",
            "cpu"; None detects the first accelerator the backend sees.
        num_devices: int. Devices used (replicas).
    """
    device_kind = device_kind or _detect_device_kind()
    for key, flops in PEAK_FLOPS.items():
        if key.lower() in device_kind.lower():
            return flops * num_devices
    if device_kind.lower() == "cpu":
        return _cpu_peak_flops()
    return None


def _detect_device_kind():
    if keras.backend.backend() == "torch":  # Keras 3.15 has no distribution library on torch: list_devices fails
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    devices = keras.distribution.list_devices()
    if devices and not devices[0].lower().startswith("cpu"):
        if keras.backend.backend() == "jax":
            import jax

            return jax.devices()[0].device_kind
        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            gpus = tf.config.list_physical_devices("GPU")
            if gpus:
                return tf.config.experimental.get_device_details(gpus[0]).get("device_name", "gpu")
        return devices[0]
    return "cpu"


def _cpu_peak_flops():
    """A rough float32 peak for this CPU: cores x clock x 32 FLOP per cycle."""
    megahertz = 2500.0
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            speeds = [float(line.split(":")[1]) for line in file if line.startswith("cpu MHz")]
        megahertz = max(speeds) if speeds else megahertz
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return cores * megahertz * 1e6 * CPU_FLOPS_PER_CYCLE


class ThroughputCallback(keras.callbacks.Callback):
    """Adds `tokens_per_second` and `mfu` to the logs of every epoch.

    Measured from the second batch of each epoch to its end (compilation is
    not counted); tokens are `batch_size x sequence_length` per batch,
    padding included.

    Args:
        batch_size: int. Global batch size.
        sequence_length: int. Tokens per sequence.
        flops_per_sequence: float. Training FLOPs of one sequence
            (`bert_training_flops`).
        peak_flops: float or None. Peak FLOP/s of all devices; None leaves
            `mfu` out.
        print_fn: callable or None. Prints a one-line summary per epoch.
    """

    def __init__(self, batch_size, sequence_length, flops_per_sequence, peak_flops=None, print_fn=print):
        super().__init__()
        self.batch_size = batch_size
        self.sequence_length = sequence_length
        self.flops_per_sequence = flops_per_sequence
        self.peak_flops = peak_flops
        self.print_fn = print_fn

    def on_epoch_begin(self, epoch, logs=None):
        self._start = None
        self._batches = 0

    def on_train_batch_end(self, batch, logs=None):
        if self._start is None:
            self._start = time.perf_counter()
        else:
            self._batches += 1

    def on_epoch_end(self, epoch, logs=None):
        if logs is None or not self._batches:
            return
        seconds = time.perf_counter() - self._start
        sequences_per_second = self._batches * self.batch_size / seconds
        logs["tokens_per_second"] = sequences_per_second * self.sequence_length
        message = f"throughput: {logs['tokens_per_second']:,.0f} tokens/s"
        if self.peak_flops:
            logs["mfu"] = sequences_per_second * self.flops_per_sequence / self.peak_flops
            message += f", MFU {100 * logs['mfu']:.1f}%"
        if self.print_fn:
            self.print_fn(message)


class StepTimes(keras.callbacks.Callback):
    """The first training step's seconds, and the examples per second of the steps after it.

    The first step holds one-time costs (tracing, compiling, building the
    optimizer state); the steps after it are the throughput a longer run
    gets. Epoch ends (validation) are left out of the time.

    Args:
        batch_size: int. Examples of a full batch (a last, partial batch of
            an epoch is counted as `examples_per_epoch` says).
        examples_per_epoch: int. Training examples of one epoch.
    """

    def __init__(self, batch_size, examples_per_epoch):
        super().__init__()
        self.batch_size = batch_size
        self.examples_per_epoch = examples_per_epoch
        self.first_step_seconds = None
        self.later_seconds = 0.0
        self.later_examples = 0
        self._started = None

    def on_train_batch_begin(self, batch, logs=None):
        self._started = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        seconds = time.perf_counter() - self._started
        examples = min(self.batch_size, self.examples_per_epoch - batch * self.batch_size)
        if self.first_step_seconds is None:
            self.first_step_seconds = seconds
        else:
            self.later_seconds += seconds
            self.later_examples += examples

    def summary(self):
        """{"first_step_seconds", "examples_per_second_after_first_step"} (None where no such step ran)."""
        rate = self.later_examples / self.later_seconds if self.later_seconds > 0 else None
        return {
            "first_step_seconds": None if self.first_step_seconds is None else round(self.first_step_seconds, 3),
            "examples_per_second_after_first_step": None if rate is None else round(rate, 2),
        }
