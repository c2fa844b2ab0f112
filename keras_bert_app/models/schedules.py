"""BERT's learning-rate schedule: linear warmup, then linear decay to zero."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_app")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup from 0 to `peak_learning_rate`, then linear decay to 0.

    As in the original BERT `optimization.py`: the decay line runs from
    `peak_learning_rate` at step 0 to 0 at `total_steps`, and the warmup line
    `peak_learning_rate * step / warmup_steps` replaces it while
    `step < warmup_steps`. Past `total_steps` the rate stays 0.

    With `decay_from_warmup=True` the decay line instead runs from
    `peak_learning_rate` at `warmup_steps` to 0 at `total_steps`, as
    HF transformers' `get_linear_schedule_with_warmup` (the `Trainer`'s
    default): the peak is reached and then decays, rather than dropping to
    `peak * (1 - warmup_steps / total_steps)` at the end of warmup.

    Args:
        peak_learning_rate: float. The rate reached at the end of warmup
            (1e-4 for BERT pretraining).
        total_steps: int. Steps of the whole run (the decay reaches 0 there).
        warmup_steps: int. Steps of linear warmup (10,000 in the paper).
        decay_from_warmup: bool. Decay from the peak at the end of warmup
            (HF's shape) instead of from step 0 (the original BERT's).

    Example:
    ```python
    schedule = WarmupLinearDecay(1e-4, total_steps=1_000_000, warmup_steps=10_000)
    float(schedule(5_000))  # 5e-05
    ```
    """

    def __init__(self, peak_learning_rate, total_steps, warmup_steps, decay_from_warmup=False):
        if total_steps <= 0:
            raise ValueError(f"total_steps must be positive; got {total_steps}.")
        if not 0 <= warmup_steps <= total_steps:
            raise ValueError(
                f"warmup_steps must be in [0, total_steps={total_steps}]; got {warmup_steps}."
            )
        self.peak_learning_rate = peak_learning_rate
        self.total_steps = total_steps
        self.warmup_steps = warmup_steps
        self.decay_from_warmup = bool(decay_from_warmup)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        peak = ops.cast(self.peak_learning_rate, "float32")
        start = float(self.warmup_steps) if self.decay_from_warmup else 0.0
        span = max(float(self.total_steps) - start, 1.0)
        decayed = peak * ops.maximum((float(self.total_steps) - step) / span, 0.0)
        if self.warmup_steps == 0:
            return decayed
        warmup = peak * step / float(self.warmup_steps)
        return ops.where(step < float(self.warmup_steps), warmup, decayed)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "total_steps": self.total_steps,
            "warmup_steps": self.warmup_steps,
            "decay_from_warmup": self.decay_from_warmup,
        }
