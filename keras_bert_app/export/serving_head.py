"""`ServingHead`: what one task adds around the exported Keras model."""

import tensorflow as tf

from keras_bert_app.export import graph_ops

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")


def served_lengths(sequence_length, bucketing=True):
    """The lengths an export may run the model at: the bucket lengths below S, then S itself.

    `data.bucketing.bucket_lengths(S)` cut at S (an S that is not a bucket
    length is the last length); `(S,)` without bucketing.
    """
    from keras_bert_app.data.bucketing import bucket_lengths

    if not bucketing:
        return (sequence_length,)
    return tuple(length for length in bucket_lengths(sequence_length) if length < sequence_length) + (sequence_length,)


class ServingHead:
    """Base of the serving heads: text in, the task's named outputs out.

    `export_for_serving` exports the Keras model (ids in, raw outputs out,
    through `core_outputs`), reloads it and calls `attach` with its `serve`
    function; the head's `text_function()` becomes `serving_default` and
    `serve_token_ids` the ids signature. Subclasses set `input_names` and
    implement `serve_text` (or `text_function`), `outputs` and
    `warmup_inputs`.

    Length buckets (`set_bucketing`, on by default): `run_core` cuts each
    batch packed at S to its last real position rounded up to one of
    `bucket_lengths`, runs the model there, and pads the per-position raw
    outputs (`sequence_outputs`) back to S with 0 at padding positions.

    Args:
        task: str. The task name recorded in the export's metadata.
        preprocessor: `BertPreprocessor`; its `sequence_length` is served.
    """

    input_names = ("text",)
    # Raw outputs with a sequence axis: names in the model's output dict, or None for a single tensor.
    sequence_outputs = ()

    def __init__(self, task, preprocessor):
        self.task = task
        self.preprocessor = preprocessor
        self.tokenizer = preprocessor.tokenizer
        self.sequence_length = preprocessor.sequence_length
        self.bucket_lengths = served_lengths(self.sequence_length)
        self._serve = None

    def set_bucketing(self, bucketing):
        """Run the model at the batch's bucket length (True) or always at S (False)."""
        self.bucket_lengths = served_lengths(self.sequence_length, bool(bucketing))

    @property
    def bucketing(self):
        return len(self.bucket_lengths) > 1

    def run_core(self, features):
        """The model's raw outputs for int32 features [batch, S]; per-position ones [batch, S, ...]."""
        if not self.bucketing:
            return self._serve(features)
        mask = features["padding_mask"]
        length = graph_ops.bucket_length(mask, self.bucket_lengths)
        cut = {name: value[:, :length] if name in INPUT_NAMES else value for name, value in features.items()}
        raw = self._serve(cut)
        if not isinstance(raw, dict):
            return graph_ops.pad_positions(raw, mask) if None in self.sequence_outputs else raw
        return {
            name: graph_ops.pad_positions(value, mask) if name in self.sequence_outputs else value
            for name, value in raw.items()
        }

    def core_input_widths(self):
        """`{name: width}` of the model's int inputs besides the encoder's three."""
        return {}

    def core_outputs(self, model, inputs):
        """The Keras model's raw outputs (a tensor or a dict of tensors)."""
        return model(inputs, training=False)

    def attach(self, module, serve):
        """Keep the reloaded model's `serve` and track TF state on `module`."""
        self._serve = serve

    def text_function(self):
        """The Python function behind `serving_default` (its argument names are the inputs)."""
        return self.serve_text

    def serve_features(self, features):
        """The encoder inputs (int [batch, seq]) -> the task's outputs."""
        features = {name: tf.cast(value, tf.int32) for name, value in features.items()}
        return self.outputs(self.run_core(features), features)

    def serve_token_ids(self, token_ids, segment_ids, padding_mask):
        return self.serve_features(
            {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
        )

    def outputs(self, raw, features):
        raise NotImplementedError

    def metadata(self):
        """Task settings recorded in `assets.extra/keras_bert_app.json`."""
        return {}

    def warmup_inputs(self, texts):
        """A few `{input name: list of str}` requests built from `texts`."""
        return [{"text": texts[:1]}, {"text": list(texts)}]

    def length_warmup_input(self, text):
        """One request whose packed length is about that of `text` plus 4 (the bucket warmups)."""
        return {name: [text] for name in self.input_names[:1]} | {name: [""] for name in self.input_names[1:]}
