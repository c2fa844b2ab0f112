"""Hugging Face task checkpoints of BERT, ELECTRA and ALBERT: their heads and label names, in and out.

Each task class holds the encoder under its prefix (`bert.`, `electra.`,
`albert.`; with a pooler only where the head reads it, never for ELECTRA)
and its head, PyTorch's [out, in] against our Dense [in, out]:

    ...ForSequenceClassification  classifier  -> BertClassifier  logits (pooling "pooler")
        ELECTRA's: classifier.dense, classifier.out_proj on the raw [CLS] -> classifier_dense, logits (pooling "cls")
    ...ForTokenClassification     classifier  -> BertTokenClassifier  token_logits
    ...ForQuestionAnswering       qa_outputs [2, hidden]: start, end -> BertQuestionAnswerer  span_logits
    ...ForMultipleChoice          classifier [1, hidden] -> BertMultipleChoice  choice_score (pooling "pooler")
        ELECTRA's: sequence_summary.summary, classifier -> choice_summary, choice_score (pooling "cls")

Label names come from `config.json`'s `id2label`; one label or
`problem_type: "regression"` is a regressor (`BertClassifier` with one
output). The model is given, never built here (`convert.task_checkpoint`).
"""

import collections
import pathlib
import warnings

from keras_bert_app import errors
from keras_bert_app.convert import huggingface, tables, weight_map
from keras_bert_app.convert.family import ALBERT, BERT, ELECTRA
from keras_bert_app.convert.weight_map import ConversionError

# architecture: the HF class; model_class: ours; rows: the head's table rows (`tables`); pooler: the HF class
# has one; pooling: our head's (`models.sentence_head`), None for heads on every position.
TaskHead = collections.namedtuple("TaskHead", ["architecture", "model_class", "family", "rows", "pooler", "pooling"])


def _dense(ours, theirs):
    return ("dense", ours, None, theirs, None)


def _task_heads():
    for family, stem in ((BERT, "Bert"), (ELECTRA, "Electra"), (ALBERT, "Albert")):
        electra = family == ELECTRA
        pooling = "cls" if electra else "pooler"
        classifier = [_dense("classifier_dense", "classifier.dense"), _dense("logits", "classifier.out_proj")] \
            if electra else [_dense("logits", "classifier")]
        choice = [_dense("choice_summary", "sequence_summary.summary")] if electra else []
        yield TaskHead(f"{stem}ForSequenceClassification", "BertClassifier", family, classifier, not electra, pooling)
        yield TaskHead(f"{stem}ForTokenClassification", "BertTokenClassifier", family,
                       [_dense("token_logits", "classifier")], False, None)
        yield TaskHead(f"{stem}ForQuestionAnswering", "BertQuestionAnswerer", family,
                       [_dense("span_logits", "qa_outputs")], False, None)
        yield TaskHead(f"{stem}ForMultipleChoice", "BertMultipleChoice", family,
                       choice + [_dense("choice_score", "classifier")], not electra, pooling)


TASK_HEADS = {head.architecture: head for head in _task_heads()}
REGRESSION = "regression"  # HF's `problem_type` of a regressor
DEFAULT_LABEL = "LABEL_{}"  # transformers' name of label i when none is given
# The config field of the head's dropout, per family (ELECTRA's multiple choice: `summary_last_dropout`).
DROPOUT_FIELDS = {BERT: "classifier_dropout", ELECTRA: "classifier_dropout", ALBERT: "classifier_dropout_prob"}


def task_head(source):
    """The `TaskHead` of an HF task checkpoint (a folder or its weights file), or None for other folders."""
    source = pathlib.Path(source)
    path = (source.parent if source.is_file() else source) / huggingface.CONFIG_FILE
    config = huggingface.read_json(path) if path.is_file() else None
    if not isinstance(config, dict):
        return None
    head = TASK_HEADS.get(str((config.get("architectures") or [""])[0]))
    return head if head is not None and head.family == huggingface.checkpoint_family(source) else None


def check_task_head(source, model_class, task_name):
    """Raise `errors.ArgumentError` when the HF checkpoint `source` is a task class of another head than `model_class`
    (the task `task_name` asked for); an encoder or pretraining checkpoint passes."""
    head = task_head(source)
    if head is not None and head.model_class != model_class:
        expected = [other.architecture for other in TASK_HEADS.values() if other.model_class == model_class]
        raise errors.ArgumentError("preset", f"{source}: its task class is {head.architecture} (our {head.model_class}); "
                                   f"expected one of {expected} or an encoder checkpoint for the {task_name} task.")


def read_labels(source):
    """`(label names or None for a regressor, True when they are transformers' defaults LABEL_0, ...)`.

    Raises:
        ConversionError: `id2label` keys that are not 0..n-1, or a
            multi-output regression (ours regresses one score).
    """
    source = pathlib.Path(source)
    path = (source.parent if source.is_file() else source) / huggingface.CONFIG_FILE
    config = huggingface.read_json(path)
    id2label = config.get("id2label") or {str(index): DEFAULT_LABEL.format(index)
                                         for index in range(int(config.get("num_labels", 2)))}
    try:
        ids = sorted(int(key) for key in id2label)
    except ValueError:
        ids = None
    if ids != list(range(len(id2label))):
        raise ConversionError(f"{path}: field 'id2label' has keys {sorted(id2label)}; expected 0..{len(id2label) - 1}.")
    names = [str(id2label[str(index)]) for index in ids]
    problem_type = config.get("problem_type")
    if problem_type == REGRESSION or len(names) == 1:
        if len(names) != 1:
            raise ConversionError(f"{path}: a regression with {len(names)} outputs (num_labels); expected 1 "
                                  "(BertClassifier regresses one score).")
        return None, False
    if problem_type == "multi_label_classification":
        warnings.warn(f"{path}: a multi-label classifier (sigmoid per label); ours predicts the argmax label "
                      "(the logits are the same).", stacklevel=3)
    return names, names == [DEFAULT_LABEL.format(index) for index in range(len(names))]


def load_head_weights(model, source, head):
    """Fill the task head of `model` (whose encoder `huggingface.load_weights` fills) from the checkpoint.

    Raises:
        ConversionError: a missing head tensor, one whose shape does not fit
            the model, or top-level tensors of another head.
    """
    tensors, source_name = huggingface.read_tensors(source)
    mappings = tables.mappings(head.rows, "huggingface")
    names = [name for name in tensors if not name.startswith((huggingface.FAMILIES[head.family].prefix, "cls."))]
    weight_map.check_unused(names, {mapping.source for mapping in mappings}, source_name)
    weight_map.load_mapped(model, mappings, tensors.get, source_name)


def save(model, folder, tokenizer_path, lowercase, label_names=None, family=BERT, strip_accents=True):
    """Write one of our task models as the family's HF task class, with `id2label`/`label2id` and `num_labels`.

    A regressor (`num_classes` 1) gets `problem_type: "regression"`. Raises
    ConversionError for a model the family has no class for (an ELECTRA
    classifier on the pooler, a BERT one on the raw [CLS]).
    """
    name = type(model).__name__
    heads = [head for head in TASK_HEADS.values() if head.model_class == name and head.family == family]
    if not heads:
        raise ConversionError(f"{name} has no Hugging Face task class; expected one of "
                              f"{sorted({head.model_class for head in TASK_HEADS.values()})}.")
    head = heads[0]
    if head.pooling is not None and model.pooling != head.pooling:
        raise ConversionError(f"a {family} {name} with pooling {model.pooling!r} has no Hugging Face task class; "
                              f"expected pooling {head.pooling!r} ({head.architecture}).")
    encoder = model.encoder
    prefix = huggingface.FAMILIES[family].prefix
    skip = huggingface.no_projection(encoder) | (set() if head.pooler else {"pooler"})
    mappings = huggingface.encoder_mappings(encoder.num_groups or encoder.num_layers, prefix, family=family, skip=skip)
    tensors = weight_map.export_mapped(model, mappings + tables.mappings(head.rows, "huggingface"))
    config = {**huggingface.hf_config(encoder, head.architecture, family), **_label_config(model, label_names)}
    if hasattr(model, "dropout"):
        multiple_choice = family == ELECTRA and name == "BertMultipleChoice"
        config["summary_last_dropout" if multiple_choice else DROPOUT_FIELDS[family]] = model.dropout
    return huggingface.write_folder(folder, tensors, config, tokenizer_path, lowercase, family, strip_accents)


def _label_config(model, label_names):
    """`id2label`, `label2id` (and `problem_type`) of a classifier or tagger; `{}` for the other heads."""
    num_classes = getattr(model, "num_classes", None)
    if num_classes is None:
        return {}
    if num_classes == 1:
        label_names, problem_type = [DEFAULT_LABEL.format(0)], {"problem_type": REGRESSION}
    else:
        label_names = [str(name) for name in label_names or [DEFAULT_LABEL.format(i) for i in range(num_classes)]]
        problem_type = {}  # transformers infers single-label classification from integer labels
    if len(label_names) != num_classes:
        raise ConversionError(f"{len(label_names)} label names for {num_classes} classes; expected one a class.")
    label2id = {name: index for index, name in enumerate(label_names)}
    return {"id2label": dict(enumerate(label_names)), "label2id": label2id, **problem_type}
