"""`ServingHead`: what one task adds around the exported Keras model."""

import tensorflow as tf

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")


class ServingHead:
    """Base of the serving heads: text in, the task's named outputs out.

    `export_for_serving` exports the Keras model (ids in, raw outputs out,
    through `core_outputs`), reloads it and calls `attach` with its `serve`
    function; the head's `text_function()` becomes `serving_default` and
    `serve_token_ids` the ids signature. Subclasses set `input_names` and
    implement `serve_text` (or `text_function`), `outputs` and
    `warmup_inputs`.

    Args:
        task: str. The task name recorded in the export's metadata.
        preprocessor: `BertPreprocessor`; its `sequence_length` is served.
    """

    input_names = ("text",)

    def __init__(self, task, preprocessor):
        self.task = task
        self.preprocessor = preprocessor
        self.tokenizer = preprocessor.tokenizer
        self.sequence_length = preprocessor.sequence_length
        self._serve = None

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
        return self.outputs(self._serve(features), features)

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
