"""BERT's weight initializer: truncated normal with the model's `initializer_range`."""

import keras


@keras.saving.register_keras_serializable(package="keras_bert_app")
class TruncatedNormal(keras.initializers.TruncatedNormal):
    """Keras' `TruncatedNormal`, under the name models saved by earlier versions of this package refer to."""


def truncated_normal(stddev):
    """BERT's weight initializer (Devlin et al. 2018: truncated normal, stddev `initializer_range`)."""
    return keras.initializers.TruncatedNormal(stddev=stddev)
