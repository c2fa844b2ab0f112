"""BERT (Devlin et al. 2018) end to end in Keras 3.

The model side imports only keras and numpy; the text side (tokenizer,
data, export, convert) imports TensorFlow when first used.
"""

import importlib

from keras_bert_app import errors, presets, versions

__version__ = "0.1.0"

# One line naming the versions found and needed, before any graph hits an undefined op.
versions.check()

# public name -> module that defines it (imported on first use)
_PUBLIC = {
    # model side: keras + numpy only
    "BertEncoder": "keras_bert_app.models.bert_encoder",
    "BertPretrainer": "keras_bert_app.models.bert_pretrainer",
    "ElectraPretrainer": "keras_bert_app.models.electra_pretrainer",
    "LeftToRightPretrainer": "keras_bert_app.models.left_to_right_pretrainer",
    "ElectraDiscriminator": "keras_bert_app.models.electra_discriminator",
    "BertClassifier": "keras_bert_app.models.bert_classifier",
    "BertQuestionAnswerer": "keras_bert_app.models.bert_question_answerer",
    "BertMultipleChoice": "keras_bert_app.models.bert_multiple_choice",
    "BertTokenClassifier": "keras_bert_app.models.bert_token_classifier",
    "BertFeatureExtractor": "keras_bert_app.models.bert_feature_extractor",
    # text side: imports TensorFlow on first use
    "BertTokenizer": "keras_bert_app.preprocessing.bert_tokenizer",
    "BertPreprocessor": "keras_bert_app.preprocessing.bert_preprocessor",
    "SentencePieceTokenizer": "keras_bert_app.preprocessing.sentencepiece_tokenizer",
    "tokenizer_from_preset": "keras_bert_app.preprocessing.preset_tokenizer",
    "pretraining_dataset": "keras_bert_app.data.pretraining_records",
    "dynamic_pretraining_dataset": "keras_bert_app.data.dynamic_pretraining",
    "electra_masking": "keras_bert_app.data.electra_masking",
    "create_optimizer": "keras_bert_app.training.optimizer",
    "create_distribution": "keras_bert_app.training.distribution",
    # stage functions: typed keyword arguments, return their result, raise keras_bert_app.errors
    "build_vocabulary": "keras_bert_app.preprocessing.vocabulary_training",
    "train_vocabulary": "keras_bert_app.preprocessing.vocabulary_training",
    "create_pretraining_data": "keras_bert_app.data.create_pretraining_data",
    "pretrain": "keras_bert_app.training.pretrain",
    "finetune": "keras_bert_app.training.finetune",
    "FinetuneResult": "keras_bert_app.training.finetune",
    "distill": "keras_bert_app.training.distill",
    "DistillResult": "keras_bert_app.training.distill",
    "DistillationLoss": "keras_bert_app.training.distillation_loss",
    "predict": "keras_bert_app.training.predict",
    "evaluate": "keras_bert_app.training.predict",
    "extract_features": "keras_bert_app.training.extract_features",
    "evaluate_squad": "keras_bert_app.evaluation.squad_evaluate",
    "convert_checkpoint": "keras_bert_app.convert.checkpoint",
    "export_for_serving": "keras_bert_app.export.serving",
    "quickstart": "keras_bert_app.demo.quickstart",
    "study_objectives": "keras_bert_app.demo.objectives_study",
    "study_distill": "keras_bert_app.demo.distill_study",
    # tasks: one class per downstream task, chosen by name
    "get_task": "keras_bert_app.tasks.registry",
    "TASKS": "keras_bert_app.tasks.registry",
}


def __getattr__(name):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'keras_bert_app' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_PUBLIC))


__all__ = ["errors", "presets", *_PUBLIC]
