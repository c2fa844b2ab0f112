"""XLA's option, kept at this import path (defined in `keras_bert_app.models.xla`, used by `compile()`)."""

from keras_bert_app.models.xla import XLA_BACKENDS, parse_jit_compile, resolve_jit_compile

__all__ = ["XLA_BACKENDS", "parse_jit_compile", "resolve_jit_compile"]
