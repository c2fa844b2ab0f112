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

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")
METADATA_FILE = "keras_bert_app.json"
WARMUP_FILE = "tf_serving_warmup_requests"
WARMUP_TEXTS = (
    "BERT reads the whole sentence at once.",
    "",
    "The quick brown fox jumps over the lazy dog, twice!",
)


def task_of(model):
    """The serving task of a model, from its class (and `num_classes`)."""
    name = type(model).__name__
    if name == "BertClassifier":
        return "regression" if model.num_classes == 1 else "classification"
    tasks = {"BertEncoder": "features", "BertFeatureExtractor": "features"}
    if name not in tasks:
        raise ValueError(
            f"export_for_serving: cannot export a {name} yet; expected one of "
            "BertClassifier, BertEncoder, BertFeatureExtractor."
        )
    return tasks[name]


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
):
    """Write `export_base/<version>/`, a SavedModel for TF Serving.

    Args:
        model: a `BertClassifier` (classification or regression) or a
            `BertEncoder`/`BertFeatureExtractor` (features).
        export_base: str. The model's base folder in TF Serving's layout.
        preprocessor: `BertPreprocessor` whose tokenizer matches the model's
            vocabulary; its `sequence_length` is the served length.
        version: int. Defaults to the next free number.
        label_names: list of str for a classifier (adds a `label` output).
        text_pair: bool. Serve `text_a` + `text_b` instead of `text`.
        warmup_texts: strings for `assets.extra/tf_serving_warmup_requests`.

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
    if label_names is not None and (task != "classification" or len(label_names) != model.num_classes):
        expected = model.num_classes if task == "classification" else "none (not a classifier)"
        raise ValueError(
            f"export_for_serving: expected {expected} label names, got {len(label_names)}."
        )
    if keras.config.backend() not in ("tensorflow", "jax"):
        raise ValueError(
            f"export_for_serving: Keras cannot export a SavedModel from the "
            f"{keras.config.backend()} backend; save the model (`save_to_preset`) and "
            "export it with KERAS_BACKEND=tensorflow or jax (weights are backend-neutral)."
        )
    version = next_version(export_base) if version is None else int(version)
    target = pathlib.Path(export_base) / str(version)
    if target.exists():
        raise FileExistsError(f"export_for_serving: {target} exists; choose another --version.")
    sequence_length = preprocessor.sequence_length
    with tempfile.TemporaryDirectory() as scratch:
        core_dir = pathlib.Path(scratch) / "core"
        _export_core(model, core_dir, sequence_length)
        partial = pathlib.Path(scratch) / "serving"
        _wrap_and_save(core_dir, partial, preprocessor, task, label_names, text_pair)
        metadata = {
            "task": task,
            "model_class": type(model).__name__,
            "sequence_length": sequence_length,
            "text_pair": bool(text_pair),
            "label_names": list(label_names) if label_names is not None else None,
            "lowercase": preprocessor.tokenizer.lowercase,
            "exported_from_backend": keras.config.backend(),
            "op_libraries": _op_libraries(),
        }
        extra = partial / "assets.extra"
        extra.mkdir(parents=True, exist_ok=True)
        (extra / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n")
        write_warmup_requests(extra / WARMUP_FILE, warmup_texts, text_pair)
        target.parent.mkdir(parents=True, exist_ok=True)
        # Move into place last: a half-written export never looks complete.
        shutil.move(str(partial), str(target))
    return target


def _export_core(model, core_dir, sequence_length):
    """Keras' own SavedModel export of the model, ids in, raw outputs out."""
    import keras

    spec = {
        name: keras.InputSpec(shape=(None, sequence_length), dtype="int32") for name in INPUT_NAMES
    }
    if type(model).__name__ == "BertEncoder":
        # A signature returns tensors, not the list of every layer's output.
        def serve(inputs):
            outputs = model(inputs, training=False)
            return {"sequence_output": outputs["sequence_output"], "pooled_output": outputs["pooled_output"]}

    else:

        def serve(inputs):
            return model(inputs, training=False)

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serve", serve, input_signature=[spec])
    archive.write_out(str(core_dir), verbose=False)


def _op_libraries():
    import tensorflow as tf
    import tensorflow_text

    return {"tensorflow": tf.__version__, "tensorflow_text": tensorflow_text.__version__}


def _wrap_and_save(core_dir, target, preprocessor, task, label_names, text_pair):
    import tensorflow as tf

    core = tf.saved_model.load(str(core_dir))
    sequence_length = preprocessor.sequence_length
    module = tf.Module()
    module.core = core
    module.vocabulary = tf.saved_model.Asset(_vocabulary_file(preprocessor, core_dir.parent))
    module.sequence_length = tf.Variable(sequence_length, trainable=False, name="sequence_length")
    labels = tf.constant(list(label_names) if label_names is not None else [], tf.string)
    module.label_names = tf.Variable(labels, trainable=False, name="label_names")

    def outputs_for(features):
        features = {name: tf.cast(features[name], tf.int32) for name in INPUT_NAMES}
        raw = core.serve(features)
        return _task_outputs(raw, task, module.label_names if label_names is not None else None)

    ids_spec = tf.TensorSpec([None, sequence_length], tf.int32)

    @tf.function(input_signature=[ids_spec, ids_spec, ids_spec], autograph=False)
    def serve_token_ids(token_ids, segment_ids, padding_mask):
        return outputs_for(
            {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
        )

    text_spec = tf.TensorSpec([None], tf.string)
    if text_pair:

        @tf.function(input_signature=[text_spec, text_spec], autograph=False)
        def serve_text(text_a, text_b):
            tf.debugging.assert_equal(
                tf.shape(text_a), tf.shape(text_b), message="text_a and text_b must have the same batch size"
            )
            return outputs_for(preprocessor((text_a, text_b)))

    else:

        @tf.function(input_signature=[text_spec], autograph=False)
        def serve_text(text):
            return outputs_for(preprocessor(text))

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


def _task_outputs(raw, task, label_names):
    """Named serving outputs from the model's raw outputs."""
    import tensorflow as tf

    if task == "features":
        return {
            "pooled_output": tf.cast(raw["pooled_output"], tf.float32),
            "sequence_output": tf.cast(raw["sequence_output"], tf.float32),
        }
    logits = tf.cast(raw, tf.float32)  # (batch, num_classes)
    if task == "regression":
        return {"score": logits[:, 0]}
    label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
    outputs = {"probabilities": tf.nn.softmax(logits, axis=-1), "label_id": label_id}
    if label_names is not None:
        outputs["label"] = tf.gather(label_names, label_id)
    return outputs


def write_warmup_requests(path, texts, text_pair, signature_name="serving_default"):
    """`assets.extra/tf_serving_warmup_requests`: PredictionLog records TF Serving replays on load."""
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2, prediction_log_pb2

    with tf.io.TFRecordWriter(str(path)) as writer:
        for batch in ([texts[0]], list(texts)):
            request = predict_pb2.PredictRequest()
            request.model_spec.signature_name = signature_name
            if text_pair:
                request.inputs["text_a"].CopyFrom(tf.make_tensor_proto(batch, dtype=tf.string))
                request.inputs["text_b"].CopyFrom(tf.make_tensor_proto(batch[::-1], dtype=tf.string))
            else:
                request.inputs["text"].CopyFrom(tf.make_tensor_proto(batch, dtype=tf.string))
            log = prediction_log_pb2.PredictionLog(
                predict_log=prediction_log_pb2.PredictLog(request=request)
            )
            writer.write(log.SerializeToString())
