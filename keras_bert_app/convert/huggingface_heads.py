"""Hugging Face BERT task checkpoints: their heads and label names, in and out.

The four task classes hold the encoder under `bert.` (token classification
and question answering without a pooler) and one linear layer, PyTorch's
[out, in] against our Dense [in, out]:

    BertForSequenceClassification  classifier.*  [num_labels, hidden]  -> BertClassifier       logits
    BertForTokenClassification     classifier.*  [num_labels, hidden]  -> BertTokenClassifier  token_logits
    BertForQuestionAnswering       qa_outputs.*  [2, hidden]: start, end -> BertQuestionAnswerer span_logits
    BertForMultipleChoice          classifier.*  [1, hidden]           -> BertMultipleChoice   choice_score

Label names come from `config.json`'s `id2label` (transformers writes
`LABEL_0`, `LABEL_1`, ... when none were given); one label or
`problem_type: "regression"` is a regressor (`BertClassifier` with one
output). The model is given, never built here (`convert.task_checkpoint`
builds it). ELECTRA and ALBERT task classes are not read here: their
converters keep the encoder.
"""

import collections
import pathlib
import warnings

from keras_bert_app.convert import huggingface, weight_map
from keras_bert_app.convert.weight_map import ConversionError, Mapping

# architecture: the HF class; model_class: ours; source, target: the head's HF and Keras layer names; pooler: the
# HF class has one.
TaskHead = collections.namedtuple("TaskHead", ["architecture", "model_class", "source", "target", "pooler"])
TASK_HEADS = {
    head.architecture: head
    for head in (
        TaskHead("BertForSequenceClassification", "BertClassifier", "classifier", "logits", True),
        TaskHead("BertForTokenClassification", "BertTokenClassifier", "classifier", "token_logits", False),
        TaskHead("BertForQuestionAnswering", "BertQuestionAnswerer", "qa_outputs", "span_logits", False),
        TaskHead("BertForMultipleChoice", "BertMultipleChoice", "classifier", "choice_score", True),
    )
}
PREFIX = "bert."
REGRESSION = "regression"  # HF's `problem_type` of a regressor
DEFAULT_LABEL = "LABEL_{}"  # transformers' name of label i when none is given


def task_head(source):
    """The `TaskHead` of an HF BERT task checkpoint (a folder or its weights file), or None for other folders.

    ELECTRA's and ALBERT's task classes give None with a warning: their converters read the encoder alone.
    """
    source = pathlib.Path(source)
    path = (source.parent if source.is_file() else source) / huggingface.CONFIG_FILE
    if not path.is_file():
        return None
    config = huggingface._read_json(path)
    if not isinstance(config, dict):
        return None
    architecture = str((config.get("architectures") or [""])[0])
    if config.get("model_type") == "bert":
        return TASK_HEADS.get(architecture)
    if architecture.endswith(tuple(name.removeprefix("Bert") for name in TASK_HEADS)):
        warnings.warn(f"{path}: a {architecture}; its task head is not converted (BERT's task classes only): "
                      "the preset holds its encoder.", stacklevel=3)
    return None


def read_labels(source):
    """`(label names or None for a regressor, True when they are transformers' defaults LABEL_0, ...)`.

    Raises:
        ConversionError: `id2label` keys that are not 0..n-1, or a
            multi-output regression (ours regresses one score).
    """
    source = pathlib.Path(source)
    path = (source.parent if source.is_file() else source) / huggingface.CONFIG_FILE
    config = huggingface._read_json(path)
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


def head_mappings(head):
    """`Mapping`s of the task head's linear layer to our Dense layer."""
    return [Mapping(f"{head.source}.weight", f"{head.target}/kernel", weight_map.TRANSPOSED),
            Mapping(f"{head.source}.bias", f"{head.target}/bias", weight_map.SAME)]


def load_head_weights(model, source, head):
    """Fill the task head of `model` (whose encoder `huggingface.load_weights` fills) from the checkpoint.

    Raises:
        ConversionError: a missing head tensor, one whose shape does not fit
            the model, or top-level tensors of another head.
    """
    tensors, source_name = huggingface.read_tensors(source)
    mappings = head_mappings(head)
    names = [name for name in tensors if not name.startswith((PREFIX, "cls."))]
    weight_map.check_unused(names, {mapping.source for mapping in mappings}, source_name)
    weight_map.load_mapped(model, mappings, tensors.get, source_name)


def save(model, folder, vocabulary_path, lowercase, label_names=None):
    """Write one of our task models as the matching HF task class, with `id2label`/`label2id` and `num_labels`.

    A regressor (`num_classes` 1) gets `problem_type: "regression"`; token
    classification and question answering get no pooler (transformers'
    classes have none).
    """
    head = next((head for head in TASK_HEADS.values() if head.model_class == type(model).__name__), None)
    if head is None:
        raise ConversionError(f"{type(model).__name__} has no Hugging Face task class; expected one of "
                              f"{sorted(head.model_class for head in TASK_HEADS.values())}.")
    encoder = model.encoder
    weight_map.check_vocabulary(vocabulary_path, encoder.vocabulary_size)
    mappings = huggingface.encoder_mappings(encoder.num_layers, PREFIX)
    if not head.pooler:
        mappings = huggingface.without_pooler(mappings, {"pooler"})
    tensors = weight_map.export_mapped(model, mappings + head_mappings(head))
    config = {**huggingface.hf_config(encoder, head.architecture), **_label_config(model, label_names)}
    if hasattr(model, "dropout"):
        config["classifier_dropout"] = model.dropout
    return huggingface.write_folder(folder, tensors, config, vocabulary_path, lowercase)


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

