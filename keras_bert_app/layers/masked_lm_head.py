"""The masked-LM head: transform the masked positions, score them against the vocabulary."""

import keras
from keras import ops

from keras_bert_app.layers.activations import get_activation
from keras_bert_app.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="keras_bert_app")
class MaskedLMHead(keras.layers.Layer):
    """BERT's masked language model head (Devlin et al. 2018, section 3.1).

    Gathers the hidden states at `mask_positions` first (the vocabulary
    projection runs only there), then `dense -> activation -> LayerNorm`,
    scored against the tied token embeddings plus an output bias.

    Args:
        token_embedding: `keras.layers.Embedding`. The encoder's token
            embedding; its matrix [vocabulary_size, hidden_dim] is the output
            projection.
        activation: str. Activation of the transform ("gelu" exact,
            "gelu_approximate" for the original TF code).
        layer_norm_epsilon: float. Epsilon of the transform's LayerNorm.
        initializer_range: float. Stddev of the transform's truncated-normal init.

    Call args:
        sequence_output: float tensor [batch, seq, H]. H may differ from
            the embedding width (factorized embeddings, an ELECTRA
            generator): the transform `dense` maps H to the embedding width.
        mask_positions: int tensor [batch, max_predictions]: indices into
            `seq`; or None: every position (a left-to-right LM's next-token
            predictions, `LeftToRightPretrainer`).

    Returns:
        float32 logits [batch, max_predictions, vocabulary_size] (None
        positions: [batch, seq, vocabulary_size]).

    Sublayers and variables (the original checkpoint names):
    `dense` (`cls/predictions/transform/dense`), `layer_norm`
    (`cls/predictions/transform/LayerNorm`), `output_bias`
    (`cls/predictions/output_bias`, shape [vocabulary_size]).
    """

    def __init__(
        self,
        token_embedding,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.token_embedding = token_embedding
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.vocabulary_size = token_embedding.input_dim
        self.hidden_dim = token_embedding.output_dim
        self.dense = keras.layers.Dense(
            self.hidden_dim,
            activation=get_activation(activation),
            kernel_initializer=truncated_normal(initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )

    def build(self, sequence_output_shape, mask_positions_shape=None):
        # The transform reads the encoder's width H and writes the embedding width E (equal in BERT).
        self.dense.build((None, None, sequence_output_shape[-1]))
        self.layer_norm.build((None, None, self.hidden_dim))
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocabulary_size,), initializer="zeros"
        )
        self.built = True

    def call(self, sequence_output, mask_positions=None):
        masked_states = sequence_output
        if mask_positions is not None:
            mask_positions = ops.cast(mask_positions, "int32")
            # (batch, max_predictions, hidden_dim)
            masked_states = ops.take_along_axis(
                sequence_output, ops.expand_dims(mask_positions, axis=-1), axis=1
            )
        transformed = self.layer_norm(self.dense(masked_states))
        embeddings = ops.cast(self.token_embedding.embeddings, transformed.dtype)
        # (batch, max_predictions, vocabulary_size)
        logits = ops.matmul(transformed, ops.transpose(embeddings))
        return ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")

    def compute_output_shape(self, sequence_output_shape, mask_positions_shape=None):
        if mask_positions_shape is None:
            return (*sequence_output_shape[:-1], self.vocabulary_size)
        return (*mask_positions_shape, self.vocabulary_size)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "token_embedding": keras.saving.serialize_keras_object(self.token_embedding),
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["token_embedding"] = keras.saving.deserialize_keras_object(config["token_embedding"])
        return cls(**config)
