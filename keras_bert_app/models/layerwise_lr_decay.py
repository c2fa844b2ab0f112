"""Layer-wise learning-rate decay: lower layers of the encoder learn more slowly (ELECTRA's fine-tuning).

ELECTRA (Clark et al. 2020, appendix A) fine-tunes with the learning rate
of each layer decayed by depth. As google-research/electra's
`_get_layer_lrs`: with n Transformer layers, depth 0 is the embeddings
(their tables, LayerNorm and a factorized embedding's projection), depth
i + 1 the layer i (0-based, bottom to top), and depth n + 2 the task head;
a variable at depth k learns at `lr * decay**(n + 2 - k)`. So the
embeddings learn at `decay**(n + 2)`, layer i at `decay**(n + 1 - i)` (the
top layer at `decay**2`), and the head, the pooler and anything else above
the encoder at the full rate.

The factors are a `{variable.path: factor}` table that `BertAdamW` reads
(`learning_rate_multipliers`): Adam divides out any scaling of the gradient,
so the rate itself is scaled, per variable, weight decay included.
"""


from keras_bert_app import errors
from keras_bert_app.models.optimizer import BertAdamW


def layerwise_multipliers(model, decay):
    """`{variable.path: factor}` of the learning rate for the encoder's variables of `model`.

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
        for variable in layer.trainable_weights:
            factors[variable.path] = decay ** (num_layers + 2)
    for index, block in enumerate(encoder.transformer_layers):
        for variable in block.trainable_weights:
            factors[variable.path] = decay ** (num_layers + 1 - index)
    return factors


def with_layerwise_lr_decay(optimizer, model, decay):
    """A `BertAdamW` with the settings of `optimizer` (schedule, decay, clipping, accumulation) and layer-wise decay.

    Args:
        optimizer: a `BertAdamW` (not built yet), e.g. from `create_optimizer`
            or `BertTask.default_optimizer`.
        model: the model it will train (a `BertTask`).
        decay: float in (0, 1]: the factor per layer (0.8 for ELECTRA-Base,
            0.9 for Large in the paper).

    Returns:
        `BertAdamW`.
    """
    multipliers = layerwise_multipliers(model, decay)
    if not isinstance(optimizer, BertAdamW):
        raise errors.ArgumentError(
            "layerwise_lr_decay", f"layer-wise learning-rate decay works with AdamW; got {type(optimizer).__name__}."
        )
    config = {key: value for key, value in optimizer.get_config().items() if key != "name"}
    config["learning_rate_multipliers"] = multipliers
    return BertAdamW.from_config(config)


__all__ = ["layerwise_multipliers", "with_layerwise_lr_decay"]
