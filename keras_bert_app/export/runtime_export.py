"""Exports for other runtimes than TF Serving: ONNX (ONNX Runtime), OpenVINO, LiteRT.

Each goes through Keras' own `model.export(format=...)` on a small Keras
model around the task model: token ids in (`token_ids`, `segment_ids`,
`padding_mask`, int32 [batch, seq], both axes open), the SavedModel's
outputs out (`probabilities` + `label_id` for a classifier, `score` for
regression, `pooled_output` + `sequence_output` for features). The version
folder holds the model file and `keras_bert_app.json` (task, inputs,
outputs, label names, sequence length, opset).

```python
# Not run here: it needs a fine-tuned run folder.
import keras_bert_app as kba

kba.export_for_serving("runs/topics/preset", "serving/topics_onnx", format="onnx")
```
"""

import json

from keras_bert_app import errors

FORMATS = ("tf_saved_model", "onnx", "openvino", "litert")
# format -> (the extra that installs it, the modules it imports, the file written)
RUNTIMES = {
    "onnx": ("onnx", ("onnx", "onnxruntime", "tf2onnx"), "model.onnx"),
    "openvino": ("openvino", ("openvino",), "model.xml"),
    "litert": ("litert", ("ai_edge_litert",), "model.tflite"),
}
# Serving tasks whose outputs these formats reproduce, and the output names in Keras' flattening order.
OUTPUTS = {
    "classification": ("probabilities", "label_id"),
    "regression": ("score",),
    "features": ("pooled_output", "sequence_output"),
    # The SavedModel's `serve_token_ids` outputs, less its strings (`tags`, `top_k_tokens`): ids and positions.
    "token_classification": ("tag_ids", "probabilities"),
    "masked_lm": ("mask_positions", "top_k_ids", "top_k_probabilities"),
    "question_answering": ("start_logits", "end_logits", "answer_start_position", "answer_end_position", "score",
                           "null_score"),
}
# What raw strings in (`--with-tokenizer`) serves: one text, or a pair, packed as the classifiers pack it.
TOKENIZER_TASKS = ("classification", "regression", "features")
METADATA_FILE = "keras_bert_app.json"


# Why a format is refused (checked with Keras 3.15.1, TensorFlow 2.21.0, ai-edge-litert 2.3.0).
UNSUPPORTED = {
    "litert": "Keras' LiteRT export of a BERT model needs a Select TensorFlow op (FlexStridedSlice, the "
    "attention mask's new axes), which ai-edge-litert's interpreter cannot run (no Flex delegate in its pip "
    "package: google-ai-edge/LiteRT#6458); serve "
    "with --format onnx or tf_saved_model",
}


# ONNX and OpenVINO were checked on Keras 3.15.1 and fail on the Keras 3.11.3 floor (CI's floor job); the
# versions between were not checked, so they are refused too.
NEWEST_CHECKED_KERAS = (3, 15)


def check_runtime(format):
    """Raise `ArgumentError` (one line) for an unknown or unsupported format or a missing extra."""
    import importlib.util

    errors.check_choice("format", format, FORMATS)
    if format == "tf_saved_model":
        return
    if format in UNSUPPORTED:
        raise errors.ArgumentError("format", f"export --format {format}: {UNSUPPORTED[format]}.")
    import keras

    found = tuple(int(part) for part in keras.__version__.split(".")[:2])
    if found < NEWEST_CHECKED_KERAS:
        raise errors.ArgumentError(
            "format", f"export --format {format} needs Keras {'.'.join(map(str, NEWEST_CHECKED_KERAS))} or newer "
            f"(found {keras.__version__}): at the Keras 3.11 / TensorFlow 2.20 floor its ONNX export leaves "
            "exact GELU's Erfc to tf2onnx and its OpenVINO export imports the removed openvino.runtime."
        )
    extra, modules, _ = RUNTIMES[format]
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        raise errors.ArgumentError(
            "format", f"export --format {format} needs {', '.join(missing)}: pip install 'keras-bert-app[{extra}]'."
        )


def serving_model(model, serving_task, head=None):
    """A Keras model: the three int32 id inputs -> the task's served outputs (a dict).

    A classifier's `label_id` is `top_k`'s index, not `argmax`'s: on
    TensorFlow `keras.ops.argmax` adds a `Bitcast` (its -0.0 handling) that
    neither tf2onnx nor OpenVINO converts. A token classifier's `tag_ids` are
    -1 and its `probabilities` 0 at padding; question answering and the
    masked LM give the SavedModel's `serve_token_ids` outputs, the span
    search and the `[MASK]` search in `keras.ops` (`head` gives
    `max_answer_length`, `top_k`, `max_predictions` and the special ids).
    """
    import keras

    if serving_task not in OUTPUTS:
        raise errors.ArgumentError(
            "format", f"export: the {serving_task} task exports as a SavedModel only; ONNX, OpenVINO and "
            f"LiteRT exports serve {', '.join(OUTPUTS)}.",
        )
    from keras_bert_app.export.serving_head import INPUT_NAMES

    inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}
    if serving_task == "masked_lm":
        return keras.Model(inputs, _masked_lm_outputs(model, inputs, head), name="masked_lm_serving")
    raw = model(inputs, training=False)
    if serving_task == "features":
        outputs = {"pooled_output": raw["pooled_output"], "sequence_output": raw["sequence_output"]}
    elif serving_task == "regression":
        outputs = {"score": raw[:, 0]}
    elif serving_task == "token_classification":
        outputs = _token_outputs(raw, inputs["padding_mask"])
    elif serving_task == "question_answering":
        outputs = _question_answering_outputs(raw, inputs, head.tokenizer.sep_token_id, head.max_answer_length)
    else:
        outputs = {
            "probabilities": keras.ops.softmax(raw, axis=-1),
            "label_id": keras.ops.cast(keras.ops.top_k(raw, k=1)[1][:, 0], "int32"),
        }
    return keras.Model(inputs, outputs, name=f"{serving_task}_serving")


def _first_index(values):
    """The index of each row's largest value along the last axis (the first on a tie), as `top_k` gives it."""
    import keras

    return keras.ops.cast(keras.ops.top_k(values, k=1)[1][..., 0], "int32")


def _token_outputs(logits, padding_mask):
    import keras
    from keras import ops

    real = ops.not_equal(padding_mask, 0)
    logits = ops.cast(logits, "float32")
    return {
        "tag_ids": ops.where(real, _first_index(logits), -1),
        "probabilities": ops.where(real[:, :, None], keras.ops.softmax(logits, axis=-1), 0.0),
    }


def _question_answering_outputs(raw, inputs, sep_id, max_answer_length):
    """`graph_ops.best_spans` in `keras.ops`: the best (i, j), i <= j < i + max_answer_length, both context
    pieces (segment 1, real, not `[SEP]`); positions and score 0 when there is none."""
    return _span_search_layer(sep_id, max_answer_length)(
        raw["start_logits"], raw["end_logits"], inputs["token_ids"], inputs["segment_ids"], inputs["padding_mask"])


def _masked_lm_outputs(model, inputs, head):
    """The `[MASK]`s' positions (the first `max_predictions`, -1 past them) and the masked LM's `top_k` tokens at
    each, as the SavedModel's `serve_token_ids` gives them (ids -1 and probabilities 0 past the masks)."""
    from keras import ops

    positions = _mask_positions_layer(head.tokenizer.mask_token_id, head.max_predictions)(inputs["token_ids"])
    logits = model({**inputs, "mask_positions": ops.maximum(positions, 0)}, training=False)["mlm"]
    probabilities, ids = ops.top_k(ops.softmax(ops.cast(logits, "float32"), axis=-1), k=head.top_k)
    real = ops.greater_equal(positions, 0)[:, :, None]
    return {"mask_positions": positions, "top_k_ids": ops.where(real, ops.cast(ids, "int32"), -1),
            "top_k_probabilities": ops.where(real, probabilities, 0.0)}


def _mask_positions_layer(mask_id, max_predictions):
    """`graph_ops.token_positions` as a layer: the first `max_predictions` positions of `mask_id`, -1 past them."""
    import keras
    from keras import ops

    class MaskPositions(keras.layers.Layer):
        def call(self, token_ids):
            length = ops.shape(token_ids)[1]
            earlier_first = ops.where(ops.equal(token_ids, mask_id), length - ops.arange(length, dtype="int32"), 0)
            earlier_first = ops.pad(earlier_first, [[0, 0], [0, max_predictions]])  # top_k needs k <= width
            keys, positions = ops.top_k(earlier_first, k=max_predictions)
            return ops.where(keys > 0, ops.cast(positions, "int32"), -1)

    return MaskPositions(name="mask_positions")


NO_SPAN = -1e30  # the score of an invalid (start, end): below any pair of float32 logits


def _span_search_layer(sep_id, max_answer_length):
    """A layer (the search needs the sequence length as a value, which a functional model's symbols lack)."""
    import keras
    from keras import ops

    class SpanSearch(keras.layers.Layer):
        def call(self, start_logits, end_logits, token_ids, segment_ids, padding_mask):
            start_logits, end_logits = ops.cast(start_logits, "float32"), ops.cast(end_logits, "float32")
            candidates = (ops.equal(segment_ids, 1) & ops.not_equal(padding_mask, 0)
                          & ops.not_equal(token_ids, sep_id))
            length = ops.shape(start_logits)[1]
            position = ops.arange(length, dtype="int32")
            span = position[None, :] - position[:, None]  # (seq, seq): j - i
            valid = (((span >= 0) & (span < max_answer_length))[None] & candidates[:, :, None]
                     & candidates[:, None, :])
            # A finite floor, not -inf: with -inf, ONNX Runtime served a NaN score for a row without a span.
            scores = ops.where(valid, start_logits[:, :, None] + end_logits[:, None, :], NO_SPAN)
            flat = ops.reshape(scores, (ops.shape(scores)[0], -1))
            best = _first_index(flat)
            found = ops.any(ops.reshape(valid, ops.shape(flat)), axis=1)
            return {
                "start_logits": start_logits,
                "end_logits": end_logits,
                "answer_start_position": ops.where(found, best // length, 0),
                "answer_end_position": ops.where(found, best % length, 0),
                "score": ops.where(found, ops.max(flat, axis=1), 0.0),
                "null_score": start_logits[:, 0] + end_logits[:, 0],
            }

    return SpanSearch(name="span_search")


def input_signature():
    import keras

    from keras_bert_app.export.serving_head import INPUT_NAMES

    return [{name: keras.InputSpec(shape=(None, None), dtype="int32", name=name) for name in INPUT_NAMES}]


def write_runtime_export(model, head, target, format, quantize=None, with_tokenizer=False):
    """Export `model` (ids in, `head.task`'s outputs out) as `format` into the new folder `target`."""
    import pathlib
    import shutil
    import tempfile

    import keras

    from keras_bert_app.export.serving_head import INPUT_NAMES

    if keras.config.backend() != "tensorflow":
        raise errors.ArgumentError(
            "format", f"export --format {format}: run it with KERAS_BACKEND=tensorflow (the weights are "
            f"backend-neutral); this is {keras.config.backend()}.",
        )
    if with_tokenizer and head.task not in TOKENIZER_TASKS:
        raise errors.ArgumentError(
            "with_tokenizer", f"export --with-tokenizer serves {', '.join(TOKENIZER_TASKS)}; the {head.task} "
            "task's ONNX model takes token ids (its SavedModel takes raw strings).",
        )
    wrapped = serving_model(model, head.task, head)
    metadata = {
        "format": format,
        "task": head.task,
        "model_class": type(model).__name__,
        "inputs": list(INPUT_NAMES),
        "outputs": list(OUTPUTS[head.task]),
        "sequence_length": head.sequence_length,
        "label_names": getattr(head, "label_names", None),
        "lowercase": head.tokenizer.lowercase,
        "quantize": quantize,
    }
    with tempfile.TemporaryDirectory() as scratch:
        partial = pathlib.Path(scratch) / "export"
        partial.mkdir()
        if format == "onnx":
            from keras_bert_app.export import onnx_export

            metadata.update(onnx_export.write_onnx(wrapped, partial, head, input_signature(), OUTPUTS[head.task],
                                                   quantize, with_tokenizer))
        else:
            path = partial / RUNTIMES[format][2]
            wrapped.export(str(path), format=format, input_signature=input_signature(), verbose=False)
        (partial / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(partial), str(target))  # whole, or not at all
    return target
