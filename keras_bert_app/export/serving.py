"""`export_for_serving`: a SavedModel that TF Serving loads and that takes raw text.

Two stages, the same on every backend that Keras can export from:
1. the Keras model alone goes through Keras' own SavedModel export
   (`model.export(..., format="tf_saved_model")`, via jax2tf on JAX) with a
   static sequence length;
2. that SavedModel is wrapped, in TensorFlow, with the BERT preprocessing
   (tokenizer + packer, TF ops) and the task's output processing, and saved as
   `EXPORT_BASE/<version>/` with the signatures `serving_default` (raw
   strings) and `serve_token_ids` (already-tokenized ids).

```python
import keras_bert_app as kba

# a run folder: its task picks the head
kba.export_for_serving("runs/topics/preset", "serving/topics")
kba.export_for_serving(
    classifier, "serving/topics", preprocessor, label_names=["sport", "business"]
)
```

Length buckets (default; `bucketing=False` turns them off): the graph cuts
each request batch to its last real token rounded up to a bucket length
(`data.bucketing`, at most S), runs the model there, and pads the
per-position outputs back to S (0 / -1 / "" at padding positions). The model
is exported once with an open sequence axis, and
`assets.extra/tf_serving_warmup_requests` holds a request of each length.

The SavedModel needs the TensorFlow Text op library (`FastWordpieceTokenizer`,
`RegexSplitWithOffsets`, `NormalizeUTF8`): TF Serving's standard build links
it; in Python, `import tensorflow_text` before `tf.saved_model.load`.
"""

import os
import pathlib
from typing import Optional, Sequence, Union

from keras_bert_app import errors
from keras_bert_app.export.saved_model_writer import METADATA_FILE, WARMUP_FILE, WARMUP_TEXTS, write_saved_model

__all__ = ["METADATA_FILE", "WARMUP_FILE", "WARMUP_TEXTS", "export_for_serving", "next_version", "task_of",
           "write_saved_model"]

# Servable models without a fine-tuned task: class name -> serving task.
ENCODER_TASKS = {
    "BertEncoder": "features",
    "BertFeatureExtractor": "features",
    "BertPretrainer": "masked_lm",
}
# What the heads take when neither the call nor the run says.
SERVING_DEFAULTS = {"text_pair": False, "max_query_length": 64, "max_answer_length": 30}
DEFAULT_SEQUENCE_LENGTH = 128


def task_of(model, task=None):
    """The serving task of a model ("classification", "question_answering", ...).

    A task model's `keras_bert_app.tasks` class names it (a classifier with
    `num_classes=1` is "regression"); encoders serve "features", a
    `BertPretrainer` "masked_lm".

    Args:
        model: the Keras model.
        task: its `Task`, or None to look it up by the model's class.
    """
    from keras_bert_app.tasks.registry import TASKS, task_for_model

    task = task or task_for_model(model)
    serving_task = task.serving_task(model) if task is not None else ENCODER_TASKS.get(type(model).__name__)
    if serving_task is None:
        servable = [t.MODEL_CLASS_NAME for t in TASKS.values() if t.SERVING_TASK] + list(ENCODER_TASKS)
        raise errors.ArgumentError(
            "model",
            f"export_for_serving: cannot export a {type(model).__name__}; expected one of "
            f"{', '.join(dict.fromkeys(servable))}.",
        )
    return serving_task


def next_version(export_base):
    """The next free TF Serving version number under `export_base` (1 when empty)."""
    base = pathlib.Path(export_base)
    numbers = [int(p.name) for p in base.iterdir() if p.name.isdigit()] if base.is_dir() else []
    return max(numbers, default=0) + 1


def export_for_serving(
    model: Union["keras.Model", str, os.PathLike],
    export_base: Union[str, os.PathLike],
    preprocessor: Optional["BertPreprocessor"] = None,
    version: Optional[int] = None,
    label_names: Optional[Sequence[str]] = None,
    text_pair: Optional[bool] = None,
    warmup_texts: Sequence[str] = WARMUP_TEXTS,
    max_query_length: Optional[int] = None,
    max_answer_length: Optional[int] = None,
    top_k: int = 5,
    max_predictions: int = 20,
    *,
    head: str = "auto",
    sequence_length: Optional[int] = None,
    bucketing: bool = True,
    format: str = "tf_saved_model",
    quantize: Optional[str] = None,
    with_tokenizer: bool = False,
) -> pathlib.Path:
    """Write `export_base/<version>/`, a SavedModel for TF Serving.

    `model` is a Keras model, or a folder: a fine-tuned run's `preset/` (its
    task chooses the head and gives the run's sequence length, label names,
    text pair and question-answering settings) or an encoder preset (see
    `head`). The inputs and outputs of `serving_default` depend on the model:

    - `BertClassifier`: `text` (or `text_a`, `text_b`) -> `probabilities`,
      `label_id` (+ `label`), or `score` for regression (`num_classes=1`);
    - `BertEncoder`/`BertFeatureExtractor`: `text` -> `pooled_output`,
      `sequence_output`;
    - `BertQuestionAnswerer`: `question`, `context` -> logits and the best
      span (see `QuestionAnsweringHead`);
    - `BertTokenClassifier`: `text` -> per-token and per-word tags with
      character offsets (see `TokenClassificationHead`);
    - `BertPretrainer`: `text` with `[MASK]`s -> the top-k tokens at each
      mask (see `MaskedLMServingHead`).

    Args:
        model: one of the models above, or a run or preset folder (str or path, or
            the `convert.resolve.ResolvedPreset` of one: not read again).
        export_base: str or path. The model's base folder in TF Serving's layout.
        preprocessor: `BertPreprocessor` whose tokenizer matches the model's
            vocabulary; its `sequence_length` is the served length. Needed
            with a model; for a folder, None builds the folder's tokenizer at
            `sequence_length`.
        version: int. Defaults to the next free number.
        label_names: list of str, the class or tag names in id order (a
            classifier's `label`, a tagger's `tags` outputs); default: the run's.
        text_pair: bool. Serve `text_a` + `text_b` (classifier and features);
            None: the run's (a pair task), else False.
        warmup_texts: strings for the warmup requests of text models.
        max_query_length: int. Question pieces kept (question answering);
            None: the run's, else 64.
        max_answer_length: int. Longest answer in pieces (question
            answering); None: the run's, else 30.
        top_k: int. Tokens returned per `[MASK]` (masked LM).
        max_predictions: int. `[MASK]`s predicted per text (masked LM).
        head: "auto", "features" or "masked_lm": for an encoder preset folder,
            serve its features or (with a `pretrain` run's heads) the masked
            LM; "auto" picks masked_lm when the heads are there.
        sequence_length: int. For a folder: the served length (None: the
            run's, else 128 or the encoder's max_sequence_length when shorter).
        bucketing: bool. Run the model on each request batch at its longest
            input rounded up to a bucket length (8, 12, 16, 24, 32, 48, 64,
            96, 128, ..., up to S; `data.bucketing`), so a short request
            costs a short request's compute; the outputs keep their [-1, S]
            shapes. False: every batch runs at S.
        format: str. "tf_saved_model" (default), "onnx", "openvino" or
            "litert" (`export.runtime_export`: token ids in; the task's
            `serve_token_ids` outputs, of its strings a classifier's `label`
            only; the extra of that name).
        quantize: None or "int8" (ONNX only): int8 weights through ONNX
            Runtime's dynamic quantization.
        with_tokenizer: bool (ONNX only). Also write
            `model_with_tokenizer.onnx`, raw strings in (`text`), through
            onnxruntime-extensions' `BertTokenizer` op (WordPiece
            vocabularies only).

    Returns:
        pathlib.Path of the written version folder.

    Raises:
        keras_bert_app.errors.ArgumentError: a model that cannot be served,
            settings that do not fit it, the PyTorch backend.
        keras_bert_app.errors.OutputExistsError: the version folder exists.
    """
    import keras

    from keras_bert_app.export.runtime_export import check_runtime

    errors.check_type("bucketing", bucketing, bool)
    check_runtime(format)
    if format != "onnx" and (quantize is not None or with_tokenizer):
        raise errors.ArgumentError(
            "format", f"export: quantize and with_tokenizer apply to --format onnx, not {format}."
        )
    if quantize is not None:
        errors.check_choice("quantize", quantize, ("int8",))
    task = None
    if isinstance(model, (str, os.PathLike)):
        model, preprocessor, task, label_names = _from_folder(model, preprocessor, head, sequence_length, label_names)
    elif preprocessor is None:
        raise errors.ArgumentError("preprocessor", "export_for_serving: a model needs a preprocessor (a BertPreprocessor).")
    elif head != "auto" or sequence_length is not None:
        raise errors.ArgumentError("head", "export_for_serving: head and sequence_length apply to a folder, not a model.")
    task = task or _task_for(model)
    if task is not None:
        task.sequence_length = preprocessor.sequence_length  # the task as served (a fresh copy of the run's)
    serving_task = task_of(model, task)
    settings = {**SERVING_DEFAULTS, **(task.serving_defaults() if task is not None else {})}
    given = {"text_pair": text_pair, "max_query_length": max_query_length, "max_answer_length": max_answer_length}
    settings.update({name: value for name, value in given.items() if value is not None})
    encoder = model if type(model).__name__ == "BertEncoder" else model.encoder
    vocabulary_size = preprocessor.tokenizer.vocabulary_size()
    if vocabulary_size != encoder.vocabulary_size:
        raise errors.ArgumentError(
            "preprocessor",
            f"export_for_serving: the preprocessor's vocabulary has {vocabulary_size} "
            f"tokens but the model's token embedding has {encoder.vocabulary_size} rows.",
        )
    if preprocessor.sequence_length > encoder.max_sequence_length:
        raise errors.ArgumentError(
            "preprocessor", f"export_for_serving: the preprocessor's sequence_length {preprocessor.sequence_length} "
            f"is longer than the model's max_sequence_length {encoder.max_sequence_length}.",
        )
    if label_names is not None:
        classes = model.num_classes if serving_task in ("classification", "token_classification") else None
        if classes is None or len(label_names) != classes:
            expected = classes or "none (not a classifier or tagger)"
            raise errors.ArgumentError(
                "label_names", f"export_for_serving: expected {expected} label names, got {len(label_names)}."
            )
    if settings["text_pair"] and serving_task not in ("classification", "regression", "features"):
        raise errors.ArgumentError(
            "text_pair", f"export_for_serving: text_pair applies to classifiers and features, not {serving_task}."
        )
    if (settings["text_pair"] or serving_task == "question_answering") and encoder.num_segments < 2:
        raise errors.ArgumentError("model", f"export_for_serving: {serving_task} with two segments needs an encoder "
                                   f"with 2 segment types; this one has {encoder.num_segments} (type_vocab_size).")
    if keras.config.backend() not in ("tensorflow", "jax"):
        raise errors.ArgumentError(
            "model",
            f"export_for_serving: Keras cannot export a SavedModel from the "
            f"{keras.config.backend()} backend; save the model (`save_to_preset`) and "
            "export it with KERAS_BACKEND=tensorflow or jax (weights are backend-neutral).",
        )
    if task is not None:
        serving_head = task.serving_head(model, preprocessor, label_names=label_names, **settings)
    else:
        serving_head = _encoder_head(serving_task, preprocessor, settings["text_pair"], top_k, max_predictions)
    version = next_version(export_base) if version is None else errors.check_int("version", version, minimum=0)
    target = pathlib.Path(export_base).expanduser() / str(version)
    if target.exists():
        raise errors.OutputExistsError(f"export_for_serving: {target} exists; choose another --version.")
    serving_head.set_bucketing(bucketing)
    if format != "tf_saved_model":
        from keras_bert_app.export.runtime_export import write_runtime_export

        if with_tokenizer:
            from keras_bert_app.export.onnx_tokenizer import check_tokenizer

            check_tokenizer(preprocessor, settings["text_pair"])
        return write_runtime_export(model, serving_head, target, format, quantize, with_tokenizer)
    return write_saved_model(model, serving_head, target, warmup_texts)


def _from_folder(folder, preprocessor, head, sequence_length, label_names):
    """`(model, preprocessor, task or None, label names)` of a run or preset folder."""
    from keras_bert_app.convert import resolve
    from keras_bert_app.convert.local_preset import preset_folder
    from keras_bert_app.export.preset_loading import load_for_serving
    from keras_bert_app.models.sequence_length import sequence_length_for
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
    from keras_bert_app.tasks.base import check_preset
    from keras_bert_app.tasks.registry import task_from_entry

    check_preset("model", folder)
    # A run folder's preset/; a foreign checkpoint converted. Resolved once: the loaders below take it as it is.
    folder = resolve.resolve_preset(preset_folder(folder))
    model, entry = load_for_serving(folder, head)
    task = task_from_entry(entry) if entry.get("class_name") else None
    if preprocessor is None:
        if sequence_length is not None:
            errors.check_int("sequence_length", sequence_length, minimum=3)
        run_length = entry.get("data", {}).get("sequence_length")  # how the finetune run packed its input
        length = sequence_length_for(folder, sequence_length, run_length or DEFAULT_SEQUENCE_LENGTH)
        preprocessor = BertPreprocessor.from_preset(folder, sequence_length=length)
    if label_names is None:
        label_names = entry.get("label_names")
    return model, preprocessor, task, label_names


def _task_for(model):
    from keras_bert_app.tasks.registry import task_for_model

    return task_for_model(model)


def _encoder_head(serving_task, preprocessor, text_pair, top_k, max_predictions):
    if serving_task == "masked_lm":
        from keras_bert_app.export.masked_lm_serving_head import MaskedLMServingHead

        return MaskedLMServingHead(preprocessor, top_k, max_predictions)
    from keras_bert_app.export.sequence_head import SequenceHead

    return SequenceHead(serving_task, preprocessor, None, text_pair)
