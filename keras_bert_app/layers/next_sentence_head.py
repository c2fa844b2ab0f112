"""The next-sentence-prediction head: is segment B the real continuation of A?"""

import keras

from keras_bert_app.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="keras_bert_app")
class NextSentenceHead(keras.layers.Layer):
    """BERT's NSP head (Devlin et al. 2018, section 3.1): dense to 2 logits.

    Label 0 = IsNext (B follows A in the corpus), 1 = random B.

    Args:
        initializer_range: float. Stddev of the truncated-normal init.

    Call args:
        pooled_output: float tensor [batch, hidden_dim] (the encoder's pooler).

    Returns:
        float32 logits [batch, 2].

    Sublayer: `dense` (kernel [hidden_dim, 2], bias [2]); the original
    checkpoint's `cls/seq_relationship/output_weights` is its kernel
    transposed and `output_bias` its bias.
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            2,
            kernel_initializer=truncated_normal(initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )

    def build(self, pooled_output_shape):
        self.dense.build(pooled_output_shape)
        self.built = True

    def call(self, pooled_output):
        return keras.ops.cast(self.dense(pooled_output), "float32")

    def compute_output_shape(self, pooled_output_shape):
        return (pooled_output_shape[0], 2)

    def get_config(self):
        config = super().get_config()
        config.update({"initializer_range": self.initializer_range})
        return config
