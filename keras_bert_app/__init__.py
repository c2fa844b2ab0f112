"""BERT (Devlin et al. 2018) end to end in Keras 3.

The model side imports only keras and numpy; the text side (tokenizer,
data, export, convert) imports TensorFlow when first used.
"""

import importlib

from keras_bert_app import presets

__version__ = "0.1.0"

# public name -> module that defines it (imported on first use)
_PUBLIC = {
    "BertEncoder": "keras_bert_app.models.bert_encoder",
}


def __getattr__(name):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'keras_bert_app' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_PUBLIC))


__all__ = ["presets", *_PUBLIC]
