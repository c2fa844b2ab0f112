"""BERT's optimizer: AdamW (or LAMB) with warmup + linear decay and clipping."""

import keras
from keras import ops

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
    learning_rate_multipliers=None,
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
        learning_rate_multipliers: dict `{variable.path: factor}` or None
            (layer-wise decay: `models.layerwise_lr_decay`). AdamW only.

    Returns:
        A `BertAdamW`, or `keras.optimizers.Lamb`.

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
    if name == "lamb":
        optimizer = keras.optimizers.Lamb(
            learning_rate=schedule, weight_decay=weight_decay, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
            global_clipnorm=clipnorm_global, gradient_accumulation_steps=accumulation_steps,
        )
        optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_NAMES))
        return optimizer
    return BertAdamW(
        learning_rate=schedule,
        weight_decay=weight_decay,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        global_clipnorm=clipnorm_global,
        gradient_accumulation_steps=accumulation_steps,
        learning_rate_multipliers=learning_rate_multipliers,
    )


@keras.saving.register_keras_serializable(package="keras_bert_app")
class BertAdamW(keras.optimizers.AdamW):
    """AdamW as BERT, HF and ELECTRA train: decoupled weight decay, HF's clipping, a learning rate per variable.

    A `keras.optimizers.AdamW` whose decay and rates are per variable. Keras'
    Adam update (`update_step`, with its "epsilon hat": epsilon added
    to the root of the uncorrected second moment), plus:

    - decoupled weight decay `w -= w * weight_decay * lr` before the update
      (AdamW, Loshchilov & Hutter 2019), skipped for the variables whose
      name contains one of `no_decay_names` (LayerNorm's gamma and beta,
      biases: BERT's `exclude_from_weight_decay`);
    - each variable's rate times its factor in `learning_rate_multipliers`
      (layer-wise learning-rate decay, `models.layerwise_lr_decay`), weight
      decay included, as ELECTRA's `AdamWeightDecayOptimizer` decays with
      the layer's own rate;
    - global-norm clipping of the dense gradients: on TensorFlow an
      embedding's gradient comes as slices with one row per occurrence of an
      id, and Keras would square those rows one by one; made dense first,
      each id's row counts once, as in JAX, PyTorch, HF's
      `clip_grad_norm_` and the original BERT.

    Built only on Keras' public extension points (`build`, `update_step`,
    `apply`), so it runs on TensorFlow (`tf.distribute`
    included), JAX and PyTorch. On TensorFlow, outside a strategy, the Adam
    part of the update of a dense gradient is TensorFlow's own Adam kernel
    (`tf.raw_ops.ResourceApplyAdam`: the same formula, epsilon hat
    included): one op and one pass over the weights per variable instead of
    a dozen, in the graph to trace and at every step.

    Args:
        learning_rate: float or a `LearningRateSchedule`.
        weight_decay: float. Decoupled weight decay rate (0.01 in BERT).
        no_decay_names: sequence of str. Variables whose name contains one
            of these get no weight decay.
        learning_rate_multipliers: dict `{variable.path: factor}`; other
            variables learn at the full rate.
        **kwargs: `keras.optimizers.AdamW` arguments (`beta_1`, `beta_2`,
            `epsilon`, `global_clipnorm`, `gradient_accumulation_steps`, ...).

    Attributes:
        decoupled_weight_decay: float. The decay rate (Keras' `weight_decay`
            attribute is None: its one-rate decay would apply it twice).
    """

    def __init__(self, learning_rate=0.001, weight_decay=0.01, no_decay_names=NO_DECAY_NAMES,
                 learning_rate_multipliers=None, **kwargs):
        if kwargs.get("amsgrad"):
            raise errors.ArgumentError("amsgrad", "BertAdamW has no AMSGrad variant (BERT, HF and ELECTRA use none).")
        super().__init__(learning_rate=learning_rate, weight_decay=float(weight_decay or 0.0), **kwargs)
        # Applied in `update_step` with each variable's own rate; Keras' own decay (one rate for all) is off.
        self.decoupled_weight_decay = self.weight_decay
        self.weight_decay = None
        self.no_decay_names = tuple(no_decay_names)
        self.learning_rate_multipliers = {str(path): float(factor) for path, factor in
                                          (learning_rate_multipliers or {}).items()}
        self.momentums, self.velocities = [], []
        self._slots_by_key = {}
        self._step_scalars = {}

    def build(self, variables):
        if self.built:
            return
        # Adam's own `build` keeps its two slots in private attributes `update_step` would have to read: ours are
        # made here instead, in its order and with its names, so checkpoints of either read into the other.
        keras.optimizers.Optimizer.build(self, variables)
        self.momentums, self.velocities = self.add_optimizer_variables(variables, ["momentum", "velocity"])
        paths = [variable.path for variable in variables]
        unknown = sorted(set(self.learning_rate_multipliers) - set(paths))
        if unknown:
            raise ValueError(f"learning_rate_multipliers name variables the optimizer does not train: {unknown[:3]}.")
        for variable, momentum, velocity in zip(variables, self.momentums, self.velocities):
            decays = bool(self.decoupled_weight_decay) and not any(name in variable.name for name in self.no_decay_names)
            slots = (self.learning_rate_multipliers.get(variable.path, 1.0), decays, momentum, velocity)
            for key in _keys(variable):
                self._slots_by_key[key] = slots

    def apply(self, grads, trainable_variables=None):
        # `apply_gradients` and Keras' trainers come through here, once per update of all the variables;
        # `update_step`'s scalars are made anew for each, and not kept (graph tensors, JAX tracers) after it.
        self._step_scalars = {}
        try:
            return self._apply(grads, trainable_variables)
        finally:
            self._step_scalars = {}

    def _apply(self, grads, trainable_variables):
        if self.global_clipnorm and keras.config.backend() == "tensorflow":
            import tensorflow as tf

            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        return super().apply(grads, trainable_variables)

    def update_step(self, gradient, variable, learning_rate):
        """Keras' Adam update ("epsilon hat" included) after the decoupled decay, at the variable's own rate.

        The step's scalars (Adam's bias-corrected rate, the decay times the
        rate; per rate factor) are made once per update of all the variables,
        not once per variable as `keras.optimizers.Adam` makes them; on
        TensorFlow a dense gradient goes through TensorFlow's Adam kernel. The
        same update, with hundreds of ops fewer to trace, compile and run.
        """
        factor, decays, momentum, velocity = self._slots_by_key[id(variable)]
        scalars = self._scalars(learning_rate, factor, variable)
        if keras.backend.standardize_dtype(gradient.dtype) != keras.backend.standardize_dtype(variable.dtype):
            gradient = ops.cast(gradient, variable.dtype)
        if decays:
            self.assign_sub(variable, variable * scalars["decay"])
        if _tensorflow_dense(gradient):
            import tensorflow as tf

            tf.raw_ops.ResourceApplyAdam(
                var=variable.handle, m=momentum.value.handle, v=velocity.value.handle,
                beta1_power=scalars["beta_1_power"], beta2_power=scalars["beta_2_power"], lr=scalars["rate"],
                beta1=scalars["beta_1"], beta2=scalars["beta_2"], epsilon=scalars["epsilon"], grad=gradient)
            return
        alpha = scalars["alpha"]
        self.assign_add(momentum, ops.multiply(ops.subtract(gradient, momentum), 1 - self.beta_1))
        self.assign_add(velocity, ops.multiply(ops.subtract(ops.square(gradient), velocity), 1 - self.beta_2))
        self.assign_sub(variable, ops.divide(ops.multiply(momentum, alpha), ops.add(ops.sqrt(velocity), self.epsilon)))

    def _scalars(self, learning_rate, factor, variable):
        """This update's scalars at the variable's rate factor (the rate, Adam's bias-corrected rate "alpha",
        the decay times the rate, the betas' powers), made once per factor, dtype and device within one `apply`."""
        dtype = variable.dtype
        key = (factor, str(dtype), getattr(variable, "device", None))
        if key not in self._step_scalars:
            rate = ops.cast(learning_rate, dtype)
            if factor != 1.0:
                rate = rate * factor
            step = ops.cast(self.iterations + 1, dtype)
            beta_1, beta_2 = ops.cast(self.beta_1, dtype), ops.cast(self.beta_2, dtype)
            beta_1_power, beta_2_power = ops.power(beta_1, step), ops.power(beta_2, step)
            self._step_scalars[key] = {
                "rate": rate, "alpha": rate * ops.sqrt(1 - beta_2_power) / (1 - beta_1_power),
                "decay": ops.cast(self.decoupled_weight_decay, dtype) * rate, "beta_1": beta_1, "beta_2": beta_2,
                "beta_1_power": beta_1_power, "beta_2_power": beta_2_power, "epsilon": ops.cast(self.epsilon, dtype),
            }
        return self._step_scalars[key]

    def get_config(self):
        config = super().get_config()
        config.update(
            weight_decay=self.decoupled_weight_decay,
            no_decay_names=list(self.no_decay_names),
            learning_rate_multipliers=dict(self.learning_rate_multipliers),
        )
        return config


def _tensorflow_dense(gradient):
    """Whether TensorFlow's Adam kernel can update with this gradient: a dense one, on TensorFlow, outside a
    `tf.distribute` strategy (whose updates go to each replica's copy of the variable and of its slots)."""
    if keras.config.backend() != "tensorflow":
        return False
    import tensorflow as tf

    return isinstance(gradient, tf.Tensor) and not tf.distribute.has_strategy()


def _keys(variable):
    """The objects `update_step` may be given for a Keras `variable`: itself, and on TensorFlow its
    `tf.Variable` and, under a `tf.distribute` strategy, each replica's copy."""
    keys = {id(variable)}
    if keras.config.backend() == "tensorflow":
        import tensorflow as tf

        value = variable.value
        keys.add(id(value))
        keys.update(id(local) for local in tf.distribute.get_strategy().experimental_local_results(value))
    return keys


def set_mixed_precision(enabled):
    """Use `mixed_bfloat16` (bf16 compute, float32 variables) or `float32`.

    Call before building the model. bfloat16 keeps float32's exponent range,
    so no loss scaling is needed.
    """
    keras.config.set_dtype_policy("mixed_bfloat16" if enabled else "float32")
