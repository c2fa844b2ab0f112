"""BERT's optimizer, kept at this import path (`keras_bert_app.create_optimizer`).

It lives in `keras_bert_app.models.optimizer`, beside the models whose
`compile()` defaults use it.
"""

from keras_bert_app.models.optimizer import NO_DECAY_NAMES, OPTIMIZER_NAMES, create_optimizer, set_mixed_precision

__all__ = ["NO_DECAY_NAMES", "OPTIMIZER_NAMES", "create_optimizer", "set_mixed_precision"]
