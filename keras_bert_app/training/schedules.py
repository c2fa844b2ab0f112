"""BERT's learning-rate schedule, kept at this import path (defined in `keras_bert_app.models.schedules`)."""

from keras_bert_app.models.schedules import WarmupLinearDecay

__all__ = ["WarmupLinearDecay"]
