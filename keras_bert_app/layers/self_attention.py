"""Multi-head self-attention with a key padding mask (Vaswani et al. 2017, as in BERT), optionally causal."""

import math

import keras
from keras import ops

from keras_bert_app.layers.initializers import truncated_normal

# Added to the scores of padded keys; exp() of it is 0 in float32.
MASKED_SCORE = -1e9


class SequenceLayer(keras.layers.Layer):
    """A layer from hidden states `[batch, seq, hidden]` (and a padding mask) to hidden states of the same shape;
    with `with_first`, also the first position's `[batch, 1, hidden]` (the `[CLS]` row computed apart)."""

    def compute_output_shape(self, hidden_states_shape, padding_mask_shape=None):
        return tuple(hidden_states_shape)

    def compute_output_spec(self, hidden_states, padding_mask=None, training=None, with_first=False):
        output = keras.KerasTensor(hidden_states.shape, dtype=self.compute_dtype)
        if not with_first:
            return output
        return output, keras.KerasTensor((hidden_states.shape[0], 1) + tuple(hidden_states.shape[2:]), self.compute_dtype)


@keras.saving.register_keras_serializable(package="keras_bert_app")
class SelfAttention(SequenceLayer):
    """Scaled dot-product self-attention over `num_heads` heads.

    Scores and softmax are computed in float32 (also under mixed precision);
    dropout is applied to the attention probabilities, as in BERT.

    With `fused=True`, inference (and training without attention dropout)
    calls `keras.ops.dot_product_attention`, the backend's fused kernel where
    it has one: the same function, up to rounding. A fused kernel has no
    dropout on the probabilities, so training with `dropout > 0` keeps the
    explicit path.

    Args:
        num_heads: int. Number of heads A; `hidden_dim` must divide by it.
        hidden_dim: int. Model width H.
        dropout: float. Dropout on the attention probabilities.
        initializer_range: float. Stddev of the truncated-normal kernel init.
        fused: bool. Use the backend's fused attention where dropout allows.
        causal: bool. Each position attends to itself and the positions on
            its left only (a left-to-right language model, the "LTR"
            baseline of Devlin et al. 2018, section 5.1).

    Call args:
        hidden_states: float tensor [batch, seq, hidden_dim].
        padding_mask: bool/int tensor [batch, seq]; 0 marks padded keys.
        with_first: bool. Also return the output at the first position,
            computed apart (see `TransformerBlock`).

    Returns:
        float tensor [batch, seq, hidden_dim]; with `with_first`, also
        [batch, 1, hidden_dim].
    """

    def __init__(self, num_heads, hidden_dim, dropout=0.1, initializer_range=0.02, fused=False, causal=False,
                 **kwargs):
        super().__init__(**kwargs)
        if hidden_dim % num_heads:
            raise ValueError(
                f"hidden_dim must be divisible by num_heads: got hidden_dim={hidden_dim}, "
                f"num_heads={num_heads}."
            )
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.head_dim = hidden_dim // num_heads
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.fused = bool(fused)
        self.causal = bool(causal)
        kernel_initializer = truncated_normal(initializer_range)

        def projection(name):
            # (batch, seq, hidden) -> (batch, seq, heads, head_dim)
            return keras.layers.EinsumDense(
                "bsh,hnd->bsnd",
                output_shape=(None, num_heads, self.head_dim),
                bias_axes="nd",
                kernel_initializer=kernel_initializer,
                dtype=self.dtype_policy,
                name=name,
            )

        self.query_dense = projection("query")
        self.key_dense = projection("key")
        self.value_dense = projection("value")
        # (batch, seq, heads, head_dim) -> (batch, seq, hidden)
        self.output_dense = keras.layers.EinsumDense(
            "bsnd,ndh->bsh",
            output_shape=(None, hidden_dim),
            bias_axes="h",
            kernel_initializer=kernel_initializer,
            dtype=self.dtype_policy,
            name="attention_output",
        )
        self.probabilities_dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, hidden_states_shape, padding_mask_shape=None):
        for dense in (self.query_dense, self.key_dense, self.value_dense):
            dense.build(hidden_states_shape)
        self.output_dense.build((None, None, self.num_heads, self.head_dim))
        self.built = True

    def call(self, hidden_states, padding_mask=None, training=None, with_first=False):
        query = self.query_dense(hidden_states)  # (batch, seq, heads, head_dim)
        key = self.key_dense(hidden_states)
        value = self.value_dense(hidden_states)
        key_mask = self._key_mask(hidden_states, padding_mask)
        if with_first:
            return self._call_with_first(hidden_states, query, key, value, key_mask, training)
        if self.fused and not (training and self.dropout > 0):
            context = ops.dot_product_attention(
                query, key, value, mask=key_mask, scale=1.0 / math.sqrt(self.head_dim),
                flash_attention=_flash_attention_setting(),
            )  # (batch, q, heads, head_dim)
            return self.output_dense(context)
        probabilities = self._probabilities(query, key, key_mask)
        probabilities = self.probabilities_dropout(probabilities, training=training)
        context = ops.einsum("bnqk,bknd->bqnd", probabilities, value)  # (batch, q, heads, head_dim)
        return self.output_dense(context)

    def _key_mask(self, hidden_states, padding_mask):
        """Which keys each query sees: bool (batch, 1, 1, k), causal (batch or 1, 1, q, k), or None (all)."""
        key_mask = None
        if padding_mask is not None:
            key_mask = ops.cast(padding_mask, "bool")[:, None, None, :]  # (batch, 1, 1, k)
        if not self.causal:
            return key_mask
        length = ops.shape(hidden_states)[1]
        positions = ops.arange(length)
        left = (positions[None, :] <= positions[:, None])[None, None, :, :]  # (1, 1, q, k): key <= query
        return left if key_mask is None else ops.logical_and(key_mask, left)

    def _probabilities(self, query, key, key_mask):
        """softmax(q kᵀ / √d) over the unmasked keys, (batch, heads, q, k), in the compute dtype."""
        scores = ops.einsum("bqnd,bknd->bnqk", query, key)  # (batch, heads, q, k)
        scores = ops.cast(scores, "float32") / math.sqrt(self.head_dim)
        if key_mask is not None:
            scores = ops.where(key_mask, scores, MASKED_SCORE)
        return ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)

    def _call_with_first(self, hidden_states, query, key, value, key_mask, training):
        """The output at every position and, computed apart, at the first alone: ([b, s, h], [b, 1, h]).

        Where only the first ([CLS]) is used, a traced function drops the
        unused whole-sequence path (`TransformerBlock` adds the feed-forward
        sublayer). Dropout draws one mask, as `call` does, and the first
        position takes its first row.
        """
        keep = None
        if training and self.dropout > 0:
            shape = ops.shape(hidden_states)
            keep = self.probabilities_dropout(
                ops.ones((shape[0], self.num_heads, shape[1], shape[1]), self.compute_dtype), training=training
            )

        def attend(query, key_mask, keep):
            if self.fused and not (training and self.dropout > 0):
                return self.output_dense(ops.dot_product_attention(
                    query, key, value, mask=key_mask, scale=1.0 / math.sqrt(self.head_dim),
                    flash_attention=_flash_attention_setting(),
                ))
            probabilities = self._probabilities(query, key, key_mask)
            if keep is not None:
                probabilities = probabilities * keep
            return self.output_dense(ops.einsum("bnqk,bknd->bqnd", probabilities, value))

        first_query = self.query_dense(hidden_states[:, :1, :])  # not query[:, :1]: that would keep every query
        first_mask = key_mask if key_mask is None or not self.causal else key_mask[:, :, :1, :]
        return attend(query, key_mask, keep), attend(first_query, first_mask, None if keep is None else keep[:, :, :1, :])

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "hidden_dim": self.hidden_dim,
                "dropout": self.dropout,
                "initializer_range": self.initializer_range,
                "fused": self.fused,
                "causal": self.causal,
            }
        )
        return config


def _flash_attention_setting():
    """`flash_attention` for `ops.dot_product_attention`: None lets the backend decide.

    Except on TPUs under JAX: there Keras' splash-attention kernel takes one
    mask for the whole batch (the first example's), which is wrong for
    per-example padding, so the fused call keeps JAX's own attention.
    """
    if keras.config.backend() == "jax":
        import jax

        if jax.devices()[0].platform == "tpu":
            return False
    return None
