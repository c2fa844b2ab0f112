"""Hugging Face task checkpoints (BERT, ELECTRA, ALBERT) to our fine-tuned task presets, and those presets back out.

In:  `...ForSequenceClassification`, `...ForTokenClassification`,
     `...ForQuestionAnswering` or `...ForMultipleChoice` -> the preset a
     `finetune` run writes (`classify`, `ner`, `squad`, `swag`), with the
     label names and the "data" `predict` reads its input with. What a
     checkpoint cannot tell takes the command line's defaults (`DATA_OPTIONS`).
Out: a fine-tuned classifier, tagger, question answerer or multiple-choice
     preset -> the family's HF task class (`huggingface_heads.save`).

A stage beside `checkpoint.convert_checkpoint` (layer 3): it builds our models.
"""

import warnings

from keras_bert_app import presets
from keras_bert_app.convert import family, huggingface, huggingface_heads
from keras_bert_app.convert.weight_map import ConversionError

# Our task (registry name) of each model class, and the options a checkpoint cannot tell.
DATA_OPTIONS = {
    "BertClassifier": ("classify", {"text_column": "text", "label_column": "label"}),
    "BertTokenClassifier": ("ner", {}),
    "BertQuestionAnswerer": ("squad", {"version": "1.1"}),
    "BertMultipleChoice": ("swag", {}),
}
LABELLED = ("BertClassifier", "BertTokenClassifier")  # the heads with label names (`id2label`)


def import_task(source, output, config, head):
    """Write the HF task checkpoint `source` (its `huggingface_heads.TaskHead` is `head`) as a fine-tuned preset.

    `config` is our preset config of the checkpoint (`huggingface.read_config`);
    the vocabulary and tokenizer entries are written by the caller.

    Label names that are transformers' defaults (`LABEL_0`, ...: the
    checkpoint names none) are kept as they are, with a warning.

    Returns:
        True (the task head was converted).
    """
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.tasks.registry import get_task

    name, options = DATA_OPTIONS[head.model_class]
    label_names, default_names = None, False
    if head.model_class in LABELLED:
        label_names, default_names = huggingface_heads.read_labels(source)
        if label_names is None and head.model_class != "BertClassifier":
            raise ConversionError(f"{source}: a {head.architecture} with one label; expected at least 2 tags.")
        options = {**options, "regression": True} if label_names is None else options
    task = get_task(name)(**options)
    task.label_names = label_names
    task.sequence_length = min(task.DEFAULTS["sequence_length"], config["encoder"]["max_sequence_length"])
    encoder = BertEncoder(**config["encoder"])
    pooling = {} if head.pooling is None else {"pooling": head.pooling}
    model = task.model_class()(encoder, **task.model_arguments(), **pooling)
    huggingface.load_weights(encoder, source)
    huggingface_heads.load_head_weights(model, source, head)
    model.save_to_preset(output, label_names=label_names)
    entry = {**presets.read_config(output)["task"], "data": task.spec()}
    presets.write_config_entry(output, "task", entry)
    if default_names:
        warnings.warn(f"{source}: id2label holds transformers' default names {label_names[0]}..{label_names[-1]} "
                      "(the checkpoint names no labels); predictions use them. Rename them in the preset's "
                      "config.json (task, label_names).", stacklevel=3)
    return True


def export_task(preset, resolved, output):
    """Write a fine-tuned task preset (its "task" entry names the model class) as the family's HF task class."""
    from keras_bert_app.tasks.registry import task_from_entry

    entry = resolved.config["task"]
    model = task_from_entry(entry).model_class().from_preset(preset)
    kind = family.family(resolved.config)
    tokenizer = resolved.config.get("tokenizer", {})
    path = resolved.sentencepiece_model_path if kind == family.ALBERT else resolved.vocabulary_path
    return huggingface_heads.save(model, output, path, tokenizer.get("lowercase", True), entry.get("label_names"),
                                  kind, tokenizer.get("strip_accents", True))

