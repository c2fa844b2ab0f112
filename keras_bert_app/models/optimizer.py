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
    optimizer_class = FusedAdamW if name == "adamw" else keras.optimizers.Lamb
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


# Variable dtypes the fused update takes (float32 variables: mixed precision included).
_FUSED_DTYPES = ("float32", "float64")


@keras.saving.register_keras_serializable(package="keras_bert_app")
class FusedAdamW(keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` whose Adam update is one fused kernel per variable on TensorFlow.

    Keras writes Adam's update as about ten array operations per variable.
    Where a TensorFlow step runs op by op (fine-tuning on a CPU, whose
    length buckets leave XLA off: `models.xla`), each is a pass over the
    variable, and tracing them for every variable is a large part of the
    first step. TensorFlow's `ResourceApplyAdam` kernel does the same
    update in one pass: m += (g - m)(1 - β1), v += (g² - v)(1 - β2),
    w -= α m / (√v + ε) with α = lr √(1 - β2^t) / (1 - β1^t), the formula
    Keras' `Adam.update_step` writes (ε added to the root of the
    uncorrected v). Clipping, gradient accumulation and the schedule are
    AdamW's own; the decoupled weight decay is Keras' TensorFlow one (the
    same variables, matched by their full names, and formula).

    The step's scalars (the schedule's learning rate, β powers, ε) are
    computed once per step for the update and once for the weight decay,
    not once per variable as Keras does, in one loop without a
    `tf.distribute` update per variable.

    Measured on MiniLM-L6 (22.7M parameters, 2 CPU cores, no XLA): an
    update took 0.052 s against 0.092 s, and its first trace 1.4 s against
    2.5 s; with the scalars once per step, the whole first training step
    (trace, graph optimisation, run) took 3.5 s instead of 4.4 s. JAX,
    PyTorch, AMSGrad, other dtypes and variables of a `tf.distribute`
    strategy (or an update under one) take Keras' own update.

    Global-norm clipping on TensorFlow takes the norm of an embedding's
    dense gradient (the rows of a repeated id summed before squaring, as
    JAX, PyTorch and HF do), where Keras squares an IndexedSlices' rows one
    per occurrence; and on the fused path it skips the scaling when the
    scale is exactly 1 (see `_clip_gradients`).

    The kernel rounds differently from Keras' ops (1e-6 to 1e-5 relative
    after a few steps), so it is used only where it pays: `BertTask.compile` sets
    `fused` False for an XLA-compiled step, which fuses Keras' ops itself
    (pretraining on TensorFlow, JAX), keeping those runs as they were.

    Attributes:
        fused: bool. Use the kernel where it can (default True).
    """

    fused = True

    def update_step(self, gradient, variable, learning_rate):
        if not self._fused(variable):
            return super().update_step(gradient, variable, learning_rate)
        self._fused_update(gradient, variable, learning_rate, {})

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        # One loop and one set of step scalars for all variables, in place of a
        # tf.distribute update (and the step's powers) per variable: a third of
        # the optimizer's first trace.
        variables = [_tf_variable(variable) for variable in trainable_variables]
        if type(self).update_step is not FusedAdamW.update_step or not all(map(self._fused, variables)):
            return super()._backend_update_step(grads, trainable_variables, learning_rate)
        scalars = {}
        for gradient, variable in zip(grads, variables):
            self._fused_update(gradient, variable, learning_rate, scalars)

    def _clip_gradients(self, grads):
        # Keras' global-norm clipping, with two differences on TensorFlow.
        # An embedding's IndexedSlices gradient: Keras squares its rows as
        # given, one per occurrence of an id, so a batch that repeats a token
        # gets a smaller norm than the dense gradient has (and than JAX,
        # PyTorch, HF's `clip_grad_norm_` or the original BERT's one-hot
        # embeddings on TPU take), and it makes the [vocabulary, hidden] array
        # twice (for the norm, for the scaling). Here the rows of each id are
        # summed first (the dense gradient's rows), squared and scaled, and
        # `_fused_update` makes the array once (under XLA or a strategy, the
        # slices are made dense first). And on the fused path the scaling
        # runs only when it changes something: the scale is exactly 1
        # whenever the norm is within the clip norm (1.0: most fine-tuning
        # steps), and multiplying every gradient by 1 is a pass over all of
        # them for nothing.
        if not (self.global_clipnorm and self.global_clipnorm > 0 and self.clipnorm is None
                and keras.config.backend() == "tensorflow"):
            return super()._clip_gradients(grads)
        import tensorflow as tf

        if not self._fused_backend() or _in_xla_context():
            # XLA needs static shapes (a `tf.unique` would be a compile per batch): the slices made dense, which
            # XLA fuses with the norm and the scaling; a `tf.distribute` update takes them dense too.
            return super()._clip_gradients(
                [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
            )

        given = [_deduplicated(g) if isinstance(g, tf.IndexedSlices) else g for g in grads if g is not None]
        # l2_loss is sum(x**2) / 2 in one op and one pass, where square then sum is two ops and a temporary the
        # size of the gradient (the dense ones are 11M floats in MiniLM-L6).
        halves = [tf.nn.l2_loss(g.values if isinstance(g, tf.IndexedSlices) else g) for g in given]
        norm = tf.sqrt(2.0 * tf.add_n(halves)) if halves else tf.constant(0.0)
        # keras.optimizers' clip_by_global_norm: NaN for a non-finite norm, else min(1, clip / norm).
        scale = self.global_clipnorm * tf.minimum(1.0 / norm, 1.0 / self.global_clipnorm) + (norm - norm)

        # Only the values are scaled; the slices' indices and shapes stay as they are, static.
        values = [g.values if isinstance(g, tf.IndexedSlices) else g for g in given]
        values = _scaled_unless_one(values, scale)
        clipped = iter(
            tf.IndexedSlices(value, g.indices, g.dense_shape) if isinstance(g, tf.IndexedSlices) else value
            for g, value in zip(given, values)
        )
        return [None if g is None else next(clipped) for g in grads]

    def _apply_weight_decay(self, variables):
        # Keras evaluates the learning-rate schedule once per variable here;
        # the fused path evaluates it once per step.
        if self.weight_decay is None or not all(self._fused(_tf_variable(variable)) for variable in variables):
            return super()._apply_weight_decay(variables)
        import tensorflow as tf

        # w * (1 - rate) assigned: one pass over the variable (the product's
        # buffer becomes the variable's), where w - w * rate is two.
        factors = {}
        for variable in map(_tf_variable, variables):
            if self._use_weight_decay(variable):  # the tf.Variable's full name, as Keras' TensorFlow optimizer matches
                dtype = variable.dtype
                if dtype not in factors:
                    factors[dtype] = 1 - tf.cast(self.weight_decay, dtype) * tf.cast(self.learning_rate, dtype)
                variable.assign(variable * factors[dtype])

    def _fused_update(self, gradient, variable, learning_rate, scalars):
        """`ResourceApplyAdam` on `variable`; `scalars` caches the step's scalars per dtype."""
        import tensorflow as tf

        dtype = variable.dtype
        if dtype not in scalars:
            step = tf.cast(self.iterations + 1, dtype)
            beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
            scalars[dtype] = dict(
                beta1_power=tf.pow(beta_1, step), beta2_power=tf.pow(beta_2, step),
                lr=tf.cast(learning_rate, dtype), beta1=beta_1, beta2=beta_2, epsilon=tf.cast(self.epsilon, dtype),
            )
        index = self._get_variable_index(variable)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=self._momentums[index].value.handle,
            v=self._velocities[index].value.handle,
            grad=tf.cast(tf.convert_to_tensor(gradient), dtype),  # IndexedSlices (embeddings) made dense
            **scalars[dtype],
        )

    def _fused_backend(self):
        """Whether this update can take the fused path at all: TensorFlow, no AMSGrad, no strategy."""
        if not self.fused or keras.config.backend() != "tensorflow" or self.amsgrad:
            return False
        import tensorflow as tf

        return not tf.distribute.has_strategy()

    def _fused(self, variable):
        if not self._fused_backend():
            return False
        import tensorflow as tf

        return (
            isinstance(variable, tf.Variable)
            and not isinstance(variable, tf.distribute.DistributedValues)  # mirrored: every replica's copy
            and tf.as_dtype(variable.dtype).name in _FUSED_DTYPES
        )


def _in_xla_context():
    """Whether the graph being built is compiled by XLA (a `jit_compile=True` function, a TPU)."""
    import tensorflow as tf
    from tensorflow.python.ops import control_flow_util

    return tf.inside_function() and control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def _scaled_unless_one(values, scale):
    """Each of `values` times `scale`, or as it is where `scale` is exactly 1 (no pass over it).

    In a graph, a `Switch` per value sends it to the product or past it and
    a `Merge` takes whichever ran: what a `tf.cond` becomes when TensorFlow
    lowers it to run, built directly. The cond's branch functions, with a
    capture and an output per gradient, took 0.1-0.2 s of MiniLM-L6's first
    training step to trace (2 CPU cores).
    """
    import tensorflow as tf

    if not values:
        return values
    as_is = tf.equal(scale, 1.0)
    if not tf.inside_function():
        return values if bool(as_is) else [value * tf.cast(scale, value.dtype) for value in values]
    merged = []
    for value in values:
        to_scale, unscaled = tf.raw_ops.Switch(data=value, pred=as_is)
        merged.append(tf.raw_ops.Merge(inputs=[unscaled, to_scale * tf.cast(scale, value.dtype)]).output)
    return merged


def _deduplicated(slices):
    """An IndexedSlices with each row index once, its rows summed (the rows of the dense gradient it stands for)."""
    import tensorflow as tf

    indices, positions = tf.unique(slices.indices)
    values = tf.math.unsorted_segment_sum(slices.values, positions, tf.shape(indices)[0])
    return tf.IndexedSlices(values, indices, slices.dense_shape)


def _tf_variable(variable):
    """The `tf.Variable` of a Keras variable (a `tf.Variable` as it is)."""
    return variable.value if isinstance(variable, keras.Variable) else variable


def set_mixed_precision(enabled):
    """Use `mixed_bfloat16` (bf16 compute, float32 variables) or `float32`.

    Call before building the model. bfloat16 keeps float32's exponent range,
    so no loss scaling is needed.
    """
    keras.config.set_dtype_policy("mixed_bfloat16" if enabled else "float32")
