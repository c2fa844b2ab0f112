"""BERT's input embeddings: token + segment + position, LayerNorm, dropout."""

import keras
from keras import ops

from keras_bert_app.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="keras_bert_app")
class BertEmbeddings(keras.layers.Layer):
    """Sum of token, segment and learned position embeddings (Devlin et al. 2018, fig. 2).

    Args:
        vocabulary_size: int. Number of WordPiece ids.
        hidden_dim: int. Embedding width H.
        max_sequence_length: int. Number of learned positions.
        num_segments: int. Number of segment (token type) ids.
        dropout: float. Dropout rate after the LayerNorm.
        layer_norm_epsilon: float. LayerNorm epsilon (1e-12 in BERT).
        initializer_range: float. Stddev of the truncated-normal init.

    Call args:
        token_ids: int tensor [batch, seq].
        segment_ids: int tensor [batch, seq].

    Returns:
        float tensor [batch, seq, hidden_dim].
    """

    def __init__(
        self,
        vocabulary_size,
        hidden_dim,
        max_sequence_length=512,
        num_segments=2,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        initializer = truncated_normal(initializer_range)
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size,
            hidden_dim,
            embeddings_initializer=initializer,
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.segment_embedding = keras.layers.Embedding(
            num_segments,
            hidden_dim,
            embeddings_initializer=initializer,
            dtype=self.dtype_policy,
            name="segment_embedding",
        )
        self.position_initializer = initializer
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, token_ids_shape, segment_ids_shape=None):
        self.token_embedding.build(token_ids_shape)
        self.segment_embedding.build(token_ids_shape)
        # (max_sequence_length, hidden_dim)
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_sequence_length, self.hidden_dim),
            initializer=self.position_initializer,
        )
        self.layer_norm.build((None, None, self.hidden_dim))
        self.built = True

    def call(self, token_ids, segment_ids, training=None):
        sequence_length = ops.shape(token_ids)[1]
        # (seq, hidden) broadcast over the batch.
        positions = ops.cast(
            ops.convert_to_tensor(self.position_embeddings)[:sequence_length], self.compute_dtype
        )
        embeddings = (
            self.token_embedding(token_ids)
            + self.segment_embedding(segment_ids)
            + positions[None, :, :]
        )
        embeddings = self.layer_norm(embeddings)
        return self.dropout_layer(embeddings, training=training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return tuple(token_ids_shape) + (self.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "hidden_dim": self.hidden_dim,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config
