"""`SequenceHead`: serving outputs of whole-sequence tasks (classification, regression, features)."""

import tensorflow as tf

from keras_bert_app.export.serving_head import ServingHead


class SequenceHead(ServingHead):
    """Serves a `BertClassifier` or a `BertEncoder`/`BertFeatureExtractor`.

    `serving_default` takes `text` (or `text_a` and `text_b` for a pair
    model) and returns, per task:
    - "classification": `probabilities` [batch, classes], `label_id`
      [batch] and, when label names are known, `label` [batch] strings;
    - "regression": `score` [batch];
    - "features": `pooled_output` [batch, hidden] and `sequence_output`
      [batch, seq, hidden] (with length buckets, 0 at padding positions).

    Args:
        task: str. "classification", "regression" or "features".
        preprocessor: `BertPreprocessor`.
        label_names: list of str or None (classification only).
        text_pair: bool. Serve `text_a` + `text_b`.
    """

    sequence_outputs = ("sequence_output",)

    def __init__(self, task, preprocessor, label_names=None, text_pair=False):
        super().__init__(task, preprocessor)
        self.label_names = label_names
        self.text_pair = bool(text_pair)
        self.input_names = ("text_a", "text_b") if self.text_pair else ("text",)
        self._label_table = None

    def core_outputs(self, model, inputs):
        outputs = model(inputs, training=False)
        if self.task == "features":
            # A signature returns tensors, not the list of every layer's output.
            return {name: outputs[name] for name in ("sequence_output", "pooled_output")}
        return outputs

    def attach(self, module, serve):
        super().attach(module, serve)
        names = list(self.label_names) if self.label_names is not None else []
        module.label_names = tf.Variable(tf.constant(names, tf.string), trainable=False, name="label_names")
        self._label_table = module.label_names if self.label_names is not None else None

    def text_function(self):
        if not self.text_pair:
            return self.serve_text

        def serve_text_pair(text_a, text_b):
            tf.debugging.assert_equal(
                tf.shape(text_a), tf.shape(text_b), message="text_a and text_b must have the same batch size"
            )
            return self.serve_features(self.preprocessor((text_a, text_b)))

        return serve_text_pair

    def serve_text(self, text):
        return self.serve_features(self.preprocessor(text))

    def outputs(self, raw, features):
        if self.task == "features":
            return {
                "pooled_output": tf.cast(raw["pooled_output"], tf.float32),
                "sequence_output": tf.cast(raw["sequence_output"], tf.float32),
            }
        logits = tf.cast(raw, tf.float32)  # (batch, num_classes)
        if self.task == "regression":
            return {"score": logits[:, 0]}
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        outputs = {"probabilities": tf.nn.softmax(logits, axis=-1), "label_id": label_id}
        if self._label_table is not None:
            outputs["label"] = tf.gather(self._label_table, label_id)
        return outputs

    def metadata(self):
        return {
            "text_pair": self.text_pair,
            "label_names": list(self.label_names) if self.label_names is not None else None,
        }

    def warmup_inputs(self, texts):
        if self.text_pair:
            return [{"text_a": texts[:1], "text_b": texts[:1]}, {"text_a": list(texts), "text_b": list(texts)[::-1]}]
        return [{"text": texts[:1]}, {"text": list(texts)}]
