"""Text preprocessing: BertTokenizer, segment packing, BertPreprocessor, vocabulary training.

These use TensorFlow and tensorflow-text, imported only when a name is used.
"""

import importlib

_LAZY = {
    "BertTokenizer": "keras_bert_app.preprocessing.bert_tokenizer",
    "BertPreprocessor": "keras_bert_app.preprocessing.bert_preprocessor",
    "SentencePieceTokenizer": "keras_bert_app.preprocessing.sentencepiece_tokenizer",
    "tokenizer_from_preset": "keras_bert_app.preprocessing.preset_tokenizer",
    "SegmentPacker": "keras_bert_app.preprocessing.segment_packer",
    "VocabularyError": "keras_bert_app.preprocessing.vocabulary",
    "read_vocabulary": "keras_bert_app.preprocessing.vocabulary",
    "train_vocabulary": "keras_bert_app.preprocessing.vocabulary_training",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
