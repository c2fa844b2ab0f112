"""ELECTRA's discriminator head: for every token, was it replaced?"""

import keras
from keras import ops

from keras_bert_app.layers.activations import get_activation
from keras_bert_app.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="keras_bert_app")
class ReplacedTokenHead(keras.layers.Layer):
    """The replaced-token-detection head of ELECTRA (Clark et al. 2020, section 2).

    `dense (H -> H) -> activation -> dense_prediction (H -> 1)` on every
    position of the encoder's sequence output: one logit per token, positive
    for "replaced by the generator", negative for "original".

    Args:
        hidden_dim: int. The encoder's width H.
        activation: str. Activation after `dense` (the encoder's: "gelu" exact,
            "gelu_approximate" for the original TF code).
        initializer_range: float. Stddev of the truncated-normal init.

    Call args:
        sequence_output: float tensor [batch, seq, H].

    Returns:
        float32 logits [batch, seq].

    Sublayers (HF `discriminator_predictions.*`, Google
    `discriminator_predictions/*`): `dense` (kernel [H, H], bias [H]) and
    `dense_prediction` (kernel [H, 1], bias [1]).
    """

    def __init__(self, hidden_dim, activation="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.activation = activation
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            hidden_dim,
            activation=get_activation(activation),
            kernel_initializer=truncated_normal(initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )
        self.dense_prediction = keras.layers.Dense(
            1,
            kernel_initializer=truncated_normal(initializer_range),
            dtype=self.dtype_policy,
            name="dense_prediction",
        )

    def build(self, sequence_output_shape):
        self.dense.build(sequence_output_shape)
        self.dense_prediction.build((*sequence_output_shape[:-1], self.hidden_dim))
        self.built = True

    def call(self, sequence_output):
        logits = self.dense_prediction(self.dense(sequence_output))
        return ops.cast(ops.squeeze(logits, axis=-1), "float32")

    def compute_output_shape(self, sequence_output_shape):
        return tuple(sequence_output_shape[:-1])

    def get_config(self):
        config = super().get_config()
        config.update({"hidden_dim": self.hidden_dim, "activation": self.activation, "initializer_range": self.initializer_range})
        return config
