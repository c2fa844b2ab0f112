"""BERT's post-LN Transformer encoder block."""

import keras
from keras import ops

from keras_bert_app.layers.activations import get_activation
from keras_bert_app.layers.initializers import truncated_normal
from keras_bert_app.layers.self_attention import SelfAttention, SequenceLayer


@keras.saving.register_keras_serializable(package="keras_bert_app")
class TransformerBlock(SequenceLayer):
    """Self-attention and feed-forward sublayers, each as LayerNorm(x + dropout(f(x))).

    Args:
        num_heads: int. Number of attention heads.
        hidden_dim: int. Model width H.
        intermediate_dim: int. Feed-forward width (4H in BERT).
        activation: str. Feed-forward activation: "gelu" (exact erf, as HF
            and keras-hub checkpoints), "gelu_approximate" (tanh, as the
            original TF code), or any Keras activation name.
        dropout: float. Dropout on sublayer outputs and attention probabilities.
        layer_norm_epsilon: float. LayerNorm epsilon.
        initializer_range: float. Stddev of the truncated-normal kernel init.
        fused_attention: bool. See `SelfAttention`'s `fused`.
        causal: bool. Causal self-attention (`SelfAttention`'s `causal`).

    Call args:
        hidden_states: float tensor [batch, seq, hidden_dim].
        padding_mask: tensor [batch, seq]; 0 marks padding.
        with_first: bool. Also return the first position's output, computed
            apart: what a classifier uses of the last block (see
            `_call_with_first`).

    Returns:
        float tensor [batch, seq, hidden_dim]; with `with_first`, also
        [batch, 1, hidden_dim].
    """

    # Whether `with_first` computes the first position apart (True) or takes the whole output's first row. A model
    # that uses both outputs (pretraining: masked LM and next sentence) sets it False on its encoder's last block:
    # there the first position apart is work done twice. Read when a step is traced; not part of the config.
    first_apart = True

    def __init__(
        self,
        num_heads,
        hidden_dim,
        intermediate_dim,
        activation="gelu",
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        fused_attention=False,
        causal=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.fused_attention = bool(fused_attention)
        self.causal = bool(causal)
        kernel_initializer = truncated_normal(initializer_range)
        self.attention = SelfAttention(
            num_heads,
            hidden_dim,
            dropout=dropout,
            initializer_range=initializer_range,
            fused=fused_attention,
            causal=causal,
            dtype=self.dtype_policy,
            name="attention",
        )
        self.attention_dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="attention_layer_norm"
        )
        self.intermediate_dense = keras.layers.Dense(
            intermediate_dim,
            activation=get_activation(activation),
            kernel_initializer=kernel_initializer,
            dtype=self.dtype_policy,
            name="intermediate",
        )
        self.output_dense = keras.layers.Dense(
            hidden_dim,
            kernel_initializer=kernel_initializer,
            dtype=self.dtype_policy,
            name="output",
        )
        self.output_dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="output_layer_norm"
        )

    def build(self, hidden_states_shape, padding_mask_shape=None):
        self.attention.build(hidden_states_shape)
        self.attention_layer_norm.build(hidden_states_shape)
        self.intermediate_dense.build(hidden_states_shape)
        self.output_dense.build(tuple(hidden_states_shape[:-1]) + (self.intermediate_dim,))
        self.output_layer_norm.build(hidden_states_shape)
        self.built = True

    def call(self, hidden_states, padding_mask=None, training=None, with_first=False):
        if with_first:
            return self._call_with_first(hidden_states, padding_mask, training)
        attended = self.attention(hidden_states, padding_mask=padding_mask, training=training)
        attended = self.attention_dropout(attended, training=training)
        hidden_states = self.attention_layer_norm(hidden_states + attended)
        return self.output_layer_norm(hidden_states + self._feed_forward(hidden_states, training))

    def _feed_forward(self, hidden_states, training, keep=None):
        """The feed-forward sublayer's output, dropped (by Keras' dropout, or by the mask `keep`)."""
        # The feed-forward sublayer acts on each position alone: run it on (batch * seq, hidden), where a Dense
        # is one matmul. On (batch, seq, hidden) TensorFlow's Dense is a `tensordot` of ~20 graph nodes, its
        # gradient more, all of which a traced step has to build.
        shape = ops.shape(hidden_states)
        feed_forward = self.output_dense(self.intermediate_dense(ops.reshape(hidden_states, (-1, self.hidden_dim))))
        feed_forward = ops.reshape(feed_forward, shape)
        if keep is not None:
            return feed_forward * keep
        return self.output_dropout(feed_forward, training=training)

    def _call_with_first(self, hidden_states, padding_mask, training):
        """`call`'s output and, computed apart, its first position's: ([b, s, h], [b, 1, h]).

        A classifier reads the last block at [CLS] alone: computed apart, from
        every position's keys and values, it needs no other queries, LayerNorms
        or feed-forward rows, and a traced function drops the unused
        whole-sequence path (TF Model Garden's `output_range` cut). Dropout
        draws each mask once, as `call` does, and the first position takes
        its first row, so a model using both outputs sees one dropout.
        """
        if not self.first_apart:
            outputs = self.call(hidden_states, padding_mask=padding_mask, training=training)
            return outputs, outputs[:, :1]
        attended, first_attended = self.attention(
            hidden_states, padding_mask=padding_mask, training=training, with_first=True
        )
        keep_attended = keep_output = None
        if training and self.dropout > 0:
            ones = ops.ones(ops.shape(hidden_states), self.compute_dtype)
            keep_attended = self.attention_dropout(ones, training=training)
            keep_output = self.output_dropout(ones, training=training)  # drawn in `call`'s order
        outputs = []
        for hidden, attended, keep_a, keep_o in (
            (hidden_states, attended, keep_attended, keep_output),
            (hidden_states[:, :1, :], first_attended, _first(keep_attended), _first(keep_output)),
        ):
            if keep_a is not None:
                attended = attended * keep_a
            hidden = self.attention_layer_norm(hidden + attended)
            outputs.append(self.output_layer_norm(hidden + self._feed_forward(hidden, training, keep_o)))
        return tuple(outputs)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "hidden_dim": self.hidden_dim,
                "intermediate_dim": self.intermediate_dim,
                "activation": self.activation,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
                "fused_attention": self.fused_attention,
                "causal": self.causal,
            }
        )
        return config


def _first(keep):
    """The first position's rows of a dropout mask [batch, seq, ...] (None: no dropout)."""
    return None if keep is None else keep[:, :1]
