"""BERT (Devlin et al. 2018) end to end in Keras 3.

The model side imports only keras and numpy; the text side (tokenizer,
data, export, convert) imports TensorFlow when first used.
"""

import importlib

from keras_bert_app import presets

__version__ = "0.1.0"

# public name -> module that defines it (imported on first use)
_PUBLIC = {
    # model side: keras + numpy only
    "BertEncoder": "keras_bert_app.models.bert_encoder",
    "BertPretrainer": "keras_bert_app.models.bert_pretrainer",
    "BertClassifier": "keras_bert_app.models.bert_classifier",
    "BertQuestionAnswerer": "keras_bert_app.models.bert_question_answerer",
    "BertMultipleChoice": "keras_bert_app.models.bert_multiple_choice",
    "BertTokenClassifier": "keras_bert_app.models.bert_token_classifier",
    "BertFeatureExtractor": "keras_bert_app.models.bert_feature_extractor",
    # text side: imports TensorFlow on first use
    "BertTokenizer": "keras_bert_app.preprocessing.bert_tokenizer",
    "BertPreprocessor": "keras_bert_app.preprocessing.bert_preprocessor",
    "train_vocabulary": "keras_bert_app.preprocessing.vocabulary_training",
    "create_pretraining_data": "keras_bert_app.data.create_pretraining_data",
    "pretraining_dataset": "keras_bert_app.data.pretraining_records",
    "dynamic_pretraining_dataset": "keras_bert_app.data.dynamic_pretraining",
    "export_for_serving": "keras_bert_app.export.serving",
    "create_optimizer": "keras_bert_app.training.optimizer",
    "create_distribution": "keras_bert_app.training.distribution",
}


def __getattr__(name):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'keras_bert_app' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_PUBLIC))


__all__ = ["presets", *_PUBLIC]
