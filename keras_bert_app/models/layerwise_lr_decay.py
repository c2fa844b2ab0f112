"""Layer-wise learning-rate decay: lower layers of the encoder learn more slowly (ELECTRA's fine-tuning).

ELECTRA (Clark et al. 2020, appendix A) fine-tunes with the learning rate
of each layer decayed by depth: with L Transformer layers, layer l
(0-based, bottom to top) learns at `lr * decay**(L - l)`, the embeddings
(tables, their LayerNorm and a factorized embedding's projection) at
`lr * decay**(L + 1)`, and everything above the top layer (the pooler and
the task heads) at the full `lr`. (The official code's depths are offset by
one, giving every encoder rate one more factor of `decay`; here the top
layer and the heads are one `decay` apart.)

Keras 3's AdamW has one learning rate for all variables, and scaling
gradients would not do (Adam divides the scale out), so `LayerwiseDecayAdamW`
scales the rate itself, per variable, in `update_step`, together with the
decoupled weight decay, which it also applies there (it decays by
`weight_decay * lr` of each variable, as the official code). Clipping and
gradient accumulation happen before, as in AdamW. It runs on TensorFlow
(`tf.distribute` included), JAX and PyTorch.
"""

import keras
from keras import ops

from keras_bert_app import errors
from keras_bert_app.models.optimizer import FusedAdamW


def layerwise_multipliers(model, decay):
    """`{id(variable): factor}` of the learning rate for the encoder's variables of `model`.

    Args:
        model: a `BertTask` (its `encoder`) or a `BertEncoder`.
        decay: float in (0, 1].

    Returns:
        dict. Variables not in it (pooler, heads) learn at the full rate.
    """
    errors.check_number("layerwise_lr_decay", decay, minimum=0, maximum=1, minimum_inclusive=False)
    encoder = getattr(model, "encoder", model)
    num_layers = len(encoder.transformer_layers)
    factors = {}
    bottom = [encoder.embeddings] + ([encoder.embedding_projection] if getattr(encoder, "embedding_projection", None) else [])
    for layer in bottom:
        for variable in layer.weights:
            factors[id(variable)] = decay ** (num_layers + 1)
    for index, block in enumerate(encoder.transformer_layers):
        for variable in block.weights:
            factors[id(variable)] = decay ** (num_layers - index)
    return factors


@keras.saving.register_keras_serializable(package="keras_bert_app")
class LayerwiseDecayAdamW(FusedAdamW):
    """AdamW with a learning-rate factor per variable (layer-wise decay).

    Args:
        multipliers: dict `{id(variable): factor}` (`layerwise_multipliers`);
            variables not in it get 1.0. Read when the optimizer is built.
        **kwargs: `keras.optimizers.AdamW` arguments.
    """

    def __init__(self, multipliers=None, **kwargs):
        super().__init__(**kwargs)
        self.multipliers = dict(multipliers or {})

    def build(self, var_list):
        super().build(var_list)
        self._factors = [float(self.multipliers.get(id(variable), 1.0)) for variable in var_list]
        self._decays = [bool(self.weight_decay) and self._use_weight_decay(variable) for variable in var_list]

    def _apply_weight_decay(self, variables):
        """Applied in `update_step`, with each variable's own rate."""

    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        learning_rate = ops.cast(learning_rate, variable.dtype) * self._factors[index]
        if self._decays[index]:
            self.assign_sub(variable, variable * ops.cast(self.weight_decay, variable.dtype) * learning_rate)
        super().update_step(gradient, variable, learning_rate)


def with_layerwise_lr_decay(optimizer, model, decay):
    """A `LayerwiseDecayAdamW` with the settings (schedule, decay, clipping, accumulation) of an AdamW.

    Args:
        optimizer: `keras.optimizers.AdamW` (not built yet), e.g. from
            `create_optimizer` or `BertTask.default_optimizer`.
        model: the model it will train (a `BertTask`).
        decay: float in (0, 1]: the factor per layer (0.8 for ELECTRA-Base,
            0.9 for Large in the paper).

    Returns:
        `LayerwiseDecayAdamW`.
    """
    multipliers = layerwise_multipliers(model, decay)
    if not isinstance(optimizer, keras.optimizers.AdamW) or isinstance(optimizer, LayerwiseDecayAdamW):
        raise errors.ArgumentError(
            "layerwise_lr_decay", f"layer-wise learning-rate decay works with AdamW; got {type(optimizer).__name__}."
        )
    config = optimizer.get_config()
    schedule = optimizer._learning_rate
    if isinstance(schedule, keras.optimizers.schedules.LearningRateSchedule):
        config["learning_rate"] = schedule
    config = {key: value for key, value in config.items() if key != "name"}
    wrapped = LayerwiseDecayAdamW(multipliers=multipliers, **config)
    for attribute in ("_exclude_from_weight_decay", "_exclude_from_weight_decay_pattern"):
        if hasattr(optimizer, attribute):
            setattr(wrapped, attribute, getattr(optimizer, attribute))
    return wrapped
