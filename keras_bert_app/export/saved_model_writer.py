"""The TF Serving SavedModel of `export_for_serving`: the model inside a serving head's signatures.

`write_saved_model(model, head, target)` traces the model once (on
TensorFlow its own graph; on JAX and PyTorch Keras' own export, reloaded),
wraps it in the head's `serving_default` (raw strings in) and
`serve_token_ids` signatures, and writes `assets.extra/` (the metadata and
TF Serving's warmup requests) before moving the folder into place whole.
"""

import json
import pathlib
import shutil
import tempfile
import warnings

from keras_bert_app.export.warmup import bucket_warmup_inputs, write_warmup_requests
from keras_bert_app.extras import MissingExtraError

METADATA_FILE = "keras_bert_app.json"
WARMUP_FILE = "tf_serving_warmup_requests"
WARMUP_TEXTS = (
    "BERT reads the whole sentence at once.",
    "",
    "The quick brown fox jumps over the lazy dog, twice!",
)


def write_saved_model(model, head, target, warmup_texts=WARMUP_TEXTS):
    """Export `model` with `head` around it to the version folder `target` (written last, whole)."""
    import keras

    preprocessor = head.preprocessor
    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        serve, state = _core(model, head, scratch)
        partial = scratch / "serving"
        _wrap_and_save(serve, state, partial, head, scratch)
        metadata = {
            "task": head.task,
            "model_class": type(model).__name__,
            "sequence_length": preprocessor.sequence_length,
            "bucket_lengths": list(head.bucket_lengths),
            "inputs": list(head.input_names),
            "text_pair": False,
            "label_names": None,
            **head.metadata(),
            "lowercase": preprocessor.tokenizer.lowercase,
            "special_tokens_in_strings": head.tokenizer.special_tokens_in_strings,
            "exported_from_backend": keras.config.backend(),
            "op_libraries": _op_libraries(),
        }
        extra = partial / "assets.extra"
        extra.mkdir(parents=True, exist_ok=True)
        (extra / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n")
        requests = head.warmup_inputs(list(warmup_texts)) + bucket_warmup_inputs(head)
        try:
            write_warmup_requests(extra / WARMUP_FILE, requests)  # (TF Serving replays them on load)
        except MissingExtraError as error:  # the export serves as well; only its first requests compile
            warnings.warn(f"{error} Exported without it: TF Serving compiles each length on its first request.")
        target.parent.mkdir(parents=True, exist_ok=True)
        # Move into place last: a half-written export never looks complete.
        shutil.move(str(partial), str(target))
    return target


def _core(model, head, scratch):
    """The model as a TF function of its int inputs (raw outputs out), and the TF state it reads.

    On TensorFlow the model's own graph goes into the serving functions:
    one trace, one save, its variables tracked as they are. On JAX and
    PyTorch, Keras exports the model first (jax2tf, ...) and the reloaded
    SavedModel's `serve` is wrapped (`_export_core`).
    """
    import keras
    import tensorflow as tf

    if keras.config.backend() == "tensorflow":
        spec = {name: tf.TensorSpec(shape, tf.int32) for name, shape in _core_shapes(head).items()}
        serve = tf.function(lambda inputs: head.core_outputs(model, inputs), input_signature=[spec], autograph=False)
        # The tf.Variables themselves: a Keras variable would save as a second copy that TF1-style
        # loaders (TF Serving, saved_model_cli run) restore while the graph reads the first.
        return serve, [variable.value for variable in model.variables]
    core_dir = scratch / "core"
    _export_core(model, core_dir, head)
    core = tf.saved_model.load(str(core_dir))
    return core.serve, core


def _core_shapes(head):
    """`{input name: (None, width)}` of the model's int inputs; width None (open) with buckets."""
    from keras_bert_app.export.serving_head import INPUT_NAMES

    # With buckets the sequence axis is open (jax2tf: one symbolic length, at most S).
    width = None if head.bucketing else head.sequence_length
    widths = {name: width for name in INPUT_NAMES}
    widths.update(head.core_input_widths())
    return {name: (None, width) for name, width in widths.items()}


def _export_core(model, core_dir, head):
    """Keras' own SavedModel export of the model, ids in, raw outputs out."""
    import keras
    import tensorflow as tf

    widths = {name: shape[1] for name, shape in _core_shapes(head).items()}
    spec = {name: keras.InputSpec(shape=(None, width), dtype="int32") for name, width in widths.items()}
    options = {}
    if keras.config.backend() == "jax" and head.bucketing:
        shapes = {name: f"(batch, {'s' if width is None else width})" for name, width in widths.items()}
        options["jax2tf_kwargs"] = {
            "polymorphic_shapes": [shapes], "polymorphic_constraints": (f"s <= {head.sequence_length}",)
        }
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serve", lambda inputs: head.core_outputs(model, inputs), input_signature=[spec], **options)
    # (jax2tf's custom gradients of a symbolic length cannot be saved; serving needs none.)
    archive.write_out(
        str(core_dir), verbose=False, options=tf.saved_model.SaveOptions(experimental_custom_gradients=False)
    )


def _op_libraries():
    import tensorflow as tf
    import tensorflow_text

    return {"tensorflow": tf.__version__, "tensorflow_text": tensorflow_text.__version__}


def _wrap_and_save(serve, state, target, head, scratch):
    import tensorflow as tf

    module = tf.Module()
    module.core = state
    module.vocabulary = tf.saved_model.Asset(_vocabulary_file(head.preprocessor, scratch))
    module.sequence_length = tf.Variable(head.sequence_length, trainable=False, name="sequence_length")
    # (Not the preprocessor: a Keras layer, saving it would trace each of its tf.functions again, for
    # nothing. Its graphs hold what they read: vocabularies as constants, a SentencePiece model as its op.)
    head.attach(module, serve)

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
