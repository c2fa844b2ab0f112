"""BERT's optimizer: AdamW (or LAMB) with warmup + linear decay and clipping."""

import keras

from keras_bert_app import errors
from keras_bert_app.models.schedules import WarmupLinearDecay

# LayerNorm (gamma, beta) and bias variables get no weight decay, as in BERT.
NO_DECAY_NAMES = ("gamma", "beta", "bias")
OPTIMIZER_NAMES = ("adamw", "lamb")


def create_optimizer(
    learning_rate,
    total_steps,
    warmup_steps,
    weight_decay=0.01,
    name="adamw",
    clipnorm_global=1.0,
    accumulation_steps=None,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-6,
    decay_from_warmup=False,
):
    """The optimizer of BERT (Devlin et al. 2018, appendix A.2).

    AdamW with β1 0.9, β2 0.999, ε 1e-6 and decoupled weight decay 0.01 that
    skips LayerNorm and bias variables; the learning rate warms up linearly
    for `warmup_steps` and decays linearly to 0 at `total_steps`; gradients
    are clipped to global norm 1.0. `name="lamb"` gives LAMB (You et al.
    2019) for large batches with the same schedule, decay and clipping.

    Args:
        learning_rate: float. Peak learning rate (1e-4 pretraining; 2e-5 to
            5e-5 fine-tuning).
        total_steps: int. Optimizer updates of the whole run.
        warmup_steps: int. Updates of linear warmup.
        weight_decay: float. Decoupled weight decay rate.
        name: str. "adamw" or "lamb".
        clipnorm_global: float or None. Clip gradients to this global norm.
        accumulation_steps: int or None. Average the gradients of this many
            batches per update (an effective batch `accumulation_steps` times
            larger). Step counts stay in updates.
        beta_1: float. First-moment decay.
        beta_2: float. Second-moment decay.
        epsilon: float. Denominator epsilon. Keras adds it to the root of
            the *uncorrected* second moment ("epsilon hat"), so at step t it
            weighs 1/sqrt(1 - beta_2**t) more than torch's epsilon: BERT's
            1e-6 suits pretraining; fine-tuning uses 1e-8, as HF's Trainer.
        decay_from_warmup: bool. Decay linearly from the peak at the end of
            warmup (HF's `get_linear_schedule_with_warmup`) rather than from
            step 0 (the original BERT's `optimization.py`).

    Returns:
        A `keras.optimizers.Optimizer`.

    Example:
    ```python
    optimizer = create_optimizer(2e-5, total_steps=1000, warmup_steps=100)
    classifier.compile(optimizer=optimizer, loss=..., metrics=[...])
    ```
    """
    if name not in OPTIMIZER_NAMES:
        raise errors.ArgumentError("name", f"Unknown optimizer {name!r}: expected one of {list(OPTIMIZER_NAMES)}.")
    if accumulation_steps is not None and accumulation_steps < 1:
        raise errors.ArgumentError("accumulation_steps", f"accumulation_steps must be >= 1; got {accumulation_steps}.")
    if accumulation_steps == 1:
        accumulation_steps = None
    # Keras feeds the schedule the batch counter, not the update counter, when
    # it accumulates gradients: count the schedule in batches then.
    per_update = accumulation_steps or 1
    schedule = WarmupLinearDecay(
        learning_rate,
        total_steps=total_steps * per_update,
        warmup_steps=warmup_steps * per_update,
        decay_from_warmup=decay_from_warmup,
    )
    optimizer_class = keras.optimizers.AdamW if name == "adamw" else keras.optimizers.Lamb
    optimizer = optimizer_class(
        learning_rate=schedule,
        weight_decay=weight_decay,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        global_clipnorm=clipnorm_global,
        gradient_accumulation_steps=accumulation_steps,
    )
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_NAMES))
    return optimizer


def set_mixed_precision(enabled):
    """Use `mixed_bfloat16` (bf16 compute, float32 variables) or `float32`.

    Call before building the model. bfloat16 keeps float32's exponent range,
    so no loss scaling is needed.
    """
    keras.config.set_dtype_policy("mixed_bfloat16" if enabled else "float32")
