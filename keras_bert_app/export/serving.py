"""`export_for_serving`: a SavedModel that TF Serving loads and that takes raw text.

Two stages, the same on every backend that Keras can export from:
1. the Keras model alone goes through Keras' own SavedModel export
   (`model.export(..., format="tf_saved_model")`, via jax2tf on JAX) with a
   static sequence length;
2. that SavedModel is wrapped, in TensorFlow, with the BERT preprocessing
   (tokenizer + packer, TF ops) and the task's output processing, and saved as
   `EXPORT_BASE/<version>/` with the signatures `serving_default` (raw
   strings) and `serve_token_ids` (already-tokenized ids).

The SavedModel needs the TensorFlow Text op library (`FastWordpieceTokenizer`,
`RegexSplitWithOffsets`, `NormalizeUTF8`): TF Serving's standard build links
it; in Python, `import tensorflow_text` before `tf.saved_model.load`.
"""

import json
import pathlib
import shutil
import tempfile

METADATA_FILE = "keras_bert_app.json"
WARMUP_FILE = "tf_serving_warmup_requests"
WARMUP_TEXTS = (
    "BERT reads the whole sentence at once.",
    "",
    "The quick brown fox jumps over the lazy dog, twice!",
)
TASKS = {
    "BertEncoder": "features",
    "BertFeatureExtractor": "features",
    "BertQuestionAnswerer": "question_answering",
    "BertTokenClassifier": "token_classification",
    "BertPretrainer": "masked_lm",
}


def task_of(model):
    """The serving task of a model, from its class (and `num_classes`)."""
    name = type(model).__name__
    if name == "BertClassifier":
        return "regression" if model.num_classes == 1 else "classification"
    if name not in TASKS:
        raise ValueError(
            f"export_for_serving: cannot export a {name}; expected one of "
            f"BertClassifier, {', '.join(TASKS)}."
        )
    return TASKS[name]


def next_version(export_base):
    """The next free TF Serving version number under `export_base` (1 when empty)."""
    base = pathlib.Path(export_base)
    numbers = [int(p.name) for p in base.iterdir() if p.name.isdigit()] if base.is_dir() else []
    return max(numbers, default=0) + 1


def export_for_serving(
    model,
    export_base,
    preprocessor,
    version=None,
    label_names=None,
    text_pair=False,
    warmup_texts=WARMUP_TEXTS,
    max_query_length=64,
    max_answer_length=30,
    top_k=5,
    max_predictions=20,
):
    """Write `export_base/<version>/`, a SavedModel for TF Serving.

    The inputs and outputs of `serving_default` depend on the model:
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
        model: one of the models above.
        export_base: str. The model's base folder in TF Serving's layout.
        preprocessor: `BertPreprocessor` whose tokenizer matches the model's
            vocabulary; its `sequence_length` is the served length.
        version: int. Defaults to the next free number.
        label_names: list of str, the class or tag names in id order (a
            classifier's `label`, a tagger's `tags` outputs).
        text_pair: bool. Serve `text_a` + `text_b` (classifier and features).
        warmup_texts: strings for the warmup requests of text models.
        max_query_length: int. Question pieces kept (question answering).
        max_answer_length: int. Longest answer in pieces (question answering).
        top_k: int. Tokens returned per `[MASK]` (masked LM).
        max_predictions: int. `[MASK]`s predicted per text (masked LM).

    Returns:
        pathlib.Path of the written version folder.
    """
    import keras

    task = task_of(model)
    encoder = model if type(model).__name__ == "BertEncoder" else model.encoder
    vocabulary_size = preprocessor.tokenizer.vocabulary_size()
    if vocabulary_size != encoder.vocabulary_size:
        raise ValueError(
            f"export_for_serving: the preprocessor's vocabulary has {vocabulary_size} "
            f"tokens but the model's token embedding has {encoder.vocabulary_size} rows."
        )
    if label_names is not None:
        classes = model.num_classes if task in ("classification", "token_classification") else None
        if classes is None or len(label_names) != classes:
            expected = classes or "none (not a classifier or tagger)"
            raise ValueError(f"export_for_serving: expected {expected} label names, got {len(label_names)}.")
    if text_pair and task not in ("classification", "regression", "features"):
        raise ValueError(f"export_for_serving: text_pair applies to classifiers and features, not {task}.")
    if keras.config.backend() not in ("tensorflow", "jax"):
        raise ValueError(
            f"export_for_serving: Keras cannot export a SavedModel from the "
            f"{keras.config.backend()} backend; save the model (`save_to_preset`) and "
            "export it with KERAS_BACKEND=tensorflow or jax (weights are backend-neutral)."
        )
    head = _head_for(
        task, preprocessor, label_names, text_pair, max_query_length, max_answer_length, top_k, max_predictions
    )
    version = next_version(export_base) if version is None else int(version)
    target = pathlib.Path(export_base) / str(version)
    if target.exists():
        raise FileExistsError(f"export_for_serving: {target} exists; choose another --version.")
    with tempfile.TemporaryDirectory() as scratch:
        core_dir = pathlib.Path(scratch) / "core"
        _export_core(model, core_dir, head)
        partial = pathlib.Path(scratch) / "serving"
        _wrap_and_save(core_dir, partial, head)
        metadata = {
            "task": task,
            "model_class": type(model).__name__,
            "sequence_length": preprocessor.sequence_length,
            "inputs": list(head.input_names),
            "text_pair": False,
            "label_names": None,
            **head.metadata(),
            "lowercase": preprocessor.tokenizer.lowercase,
            "exported_from_backend": keras.config.backend(),
            "op_libraries": _op_libraries(),
        }
        extra = partial / "assets.extra"
        extra.mkdir(parents=True, exist_ok=True)
        (extra / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n")
        write_warmup_requests(extra / WARMUP_FILE, head.warmup_inputs(list(warmup_texts)))
        target.parent.mkdir(parents=True, exist_ok=True)
        # Move into place last: a half-written export never looks complete.
        shutil.move(str(partial), str(target))
    return target


def _head_for(task, preprocessor, label_names, text_pair, max_query_length, max_answer_length, top_k, max_predictions):
    if task == "question_answering":
        from keras_bert_app.export.question_answering_head import QuestionAnsweringHead

        return QuestionAnsweringHead(preprocessor, max_query_length, max_answer_length)
    if task == "token_classification":
        from keras_bert_app.export.token_classification_head import TokenClassificationHead

        return TokenClassificationHead(preprocessor, label_names)
    if task == "masked_lm":
        from keras_bert_app.export.masked_lm_serving_head import MaskedLMServingHead

        return MaskedLMServingHead(preprocessor, top_k, max_predictions)
    from keras_bert_app.export.sequence_head import SequenceHead

    return SequenceHead(task, preprocessor, label_names, text_pair)


def _export_core(model, core_dir, head):
    """Keras' own SavedModel export of the model, ids in, raw outputs out."""
    import keras

    from keras_bert_app.export.serving_head import INPUT_NAMES

    widths = {name: head.sequence_length for name in INPUT_NAMES}
    widths.update(head.core_input_widths())
    spec = {name: keras.InputSpec(shape=(None, width), dtype="int32") for name, width in widths.items()}
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serve", lambda inputs: head.core_outputs(model, inputs), input_signature=[spec])
    archive.write_out(str(core_dir), verbose=False)


def _op_libraries():
    import tensorflow as tf
    import tensorflow_text

    return {"tensorflow": tf.__version__, "tensorflow_text": tensorflow_text.__version__}


def _wrap_and_save(core_dir, target, head):
    import tensorflow as tf

    core = tf.saved_model.load(str(core_dir))
    module = tf.Module()
    module.core = core
    module.vocabulary = tf.saved_model.Asset(_vocabulary_file(head.preprocessor, core_dir.parent))
    module.sequence_length = tf.Variable(head.sequence_length, trainable=False, name="sequence_length")
    head.attach(module, core.serve)

    ids_spec = tf.TensorSpec([None, head.sequence_length], tf.int32)
    serve_token_ids = tf.function(
        head.serve_token_ids, input_signature=[ids_spec] * 3, autograph=False
    )
    text_spec = tf.TensorSpec([None], tf.string)
    serve_text = tf.function(
        head.text_function(), input_signature=[text_spec] * len(head.input_names), autograph=False
    )
    module.serve_text = serve_text
    module.serve_token_ids = serve_token_ids
    tf.saved_model.save(
        module,
        str(target),
        signatures={"serving_default": serve_text, "serve_token_ids": serve_token_ids},
        # Serving needs no gradients (and jax2tf's custom ones cannot be re-saved).
        options=tf.saved_model.SaveOptions(experimental_custom_gradients=False),
    )


def _vocabulary_file(preprocessor, scratch):
    path = pathlib.Path(scratch) / "vocab.txt"
    path.write_text("\n".join(preprocessor.tokenizer.get_vocabulary()) + "\n", encoding="utf-8")
    return str(path)


def write_warmup_requests(path, requests, signature_name="serving_default"):
    """`assets.extra/tf_serving_warmup_requests`: PredictionLog records TF Serving replays on load.

    Args:
        path: the file to write.
        requests: list of `{input name: list of str}`, one record each.
        signature_name: str. The signature the requests call.
    """
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2, prediction_log_pb2

    with tf.io.TFRecordWriter(str(path)) as writer:
        for inputs in requests:
            request = predict_pb2.PredictRequest()
            request.model_spec.signature_name = signature_name
            for name, values in inputs.items():
                request.inputs[name].CopyFrom(tf.make_tensor_proto(list(values), dtype=tf.string))
            log = prediction_log_pb2.PredictionLog(
                predict_log=prediction_log_pb2.PredictLog(request=request)
            )
            writer.write(log.SerializeToString())
