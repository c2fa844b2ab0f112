"""`MaskedLMServingHead`: serving a `BertPretrainer`'s masked-LM head on text with `[MASK]`s."""

import tensorflow as tf

from keras_bert_app.export import graph_ops
from keras_bert_app.export.serving_head import ServingHead

WARMUP_TEXTS = (
    "The capital of France is [MASK].",
    "[MASK] reads the whole sentence at [MASK] [MASK].",
    "",
)


class MaskedLMServingHead(ServingHead):
    """The top-k vocabulary tokens at each `[MASK]` of raw text.

    `serving_default(text)`: the text is tokenized with
    `special_tokens_in_strings=True` (a fill-in request holds literal
    `[MASK]`s; the export's metadata records it), and the masked-LM head
    runs at the first `max_predictions` `[MASK]` positions that fit in the
    packed sequence.

    Outputs, [batch, max_predictions] then k = `top_k`:
    `mask_positions` int32 (sequence positions of the `[MASK]`s, -1 past
    them), `top_k_ids` int32 [batch, max_predictions, k] (-1 past them),
    `top_k_tokens` [batch, max_predictions, k] ("" past them) and
    `top_k_probabilities` float32 [batch, max_predictions, k] (softmax over
    the whole vocabulary, 0 past them), most probable first.
    `serve_token_ids` finds the `[MASK]` ids in `token_ids` and returns the
    same outputs.

    Args:
        preprocessor: `BertPreprocessor`.
        top_k: int. Tokens returned per mask.
        max_predictions: int. Masks predicted per text.
    """

    def __init__(self, preprocessor, top_k=5, max_predictions=20):
        super().__init__("masked_lm", preprocessor)
        if not self.tokenizer.special_tokens_in_strings:
            config = {**self.tokenizer.get_config(), "special_tokens_in_strings": True}
            self.tokenizer = type(self.tokenizer).from_config(config)
        vocabulary_size = self.tokenizer.vocabulary_size()
        if not 1 <= int(top_k) <= vocabulary_size:
            raise ValueError(f"export_for_serving: top_k must be between 1 and {vocabulary_size}; got {top_k}.")
        if int(max_predictions) < 1:
            raise ValueError(f"export_for_serving: max_predictions must be >= 1; got {max_predictions}.")
        self.top_k = int(top_k)
        self.max_predictions = int(max_predictions)
        self._tokens = None

    def core_input_widths(self):
        return {"mask_positions": self.max_predictions}

    def core_outputs(self, model, inputs):
        return {"mlm": model(inputs, training=False)["mlm"]}

    def attach(self, module, serve):
        super().attach(module, serve)
        vocabulary = tf.constant(self.tokenizer.get_vocabulary(), tf.string)
        module.vocabulary_tokens = tf.Variable(vocabulary, trainable=False, name="vocabulary_tokens")
        self._tokens = module.vocabulary_tokens

    def serve_text(self, text):
        # (The offsets path: one tokenizer graph in the SavedModel, not two.)
        pieces = self.tokenizer.tokenize_with_offsets(text)[0]  # (batch, (pieces))
        return self.serve_features(self.preprocessor.packer(pieces))

    def serve_features(self, features):
        features = {name: tf.cast(value, tf.int32) for name, value in features.items()}
        positions = graph_ops.token_positions(
            features["token_ids"], self.tokenizer.mask_token_id, self.max_predictions
        )  # (batch, max_predictions), -1 past the masks
        # Padding slots read position 0 ([CLS]); their predictions are dropped.
        features["mask_positions"] = tf.maximum(positions, 0)
        outputs = self.outputs(self.run_core(features), features)
        real = (positions >= 0)[:, :, tf.newaxis]  # (batch, max_predictions, 1)
        return {
            "mask_positions": positions,
            "top_k_ids": tf.where(real, outputs["top_k_ids"], -1),
            "top_k_tokens": tf.where(real, outputs["top_k_tokens"], ""),
            "top_k_probabilities": tf.where(real, outputs["top_k_probabilities"], 0.0),
        }

    def outputs(self, raw, features):
        probabilities = tf.nn.softmax(tf.cast(raw["mlm"], tf.float32), axis=-1)  # (batch, predictions, vocab)
        top = tf.math.top_k(probabilities, k=self.top_k)
        return {
            "top_k_ids": top.indices,
            "top_k_tokens": tf.gather(self._tokens, top.indices),
            "top_k_probabilities": top.values,
        }

    def metadata(self):
        return {"top_k": self.top_k, "max_predictions": self.max_predictions, "mask_token": self.tokenizer.mask_token}

    def length_warmup_input(self, text):
        return {"text": ["[MASK] " + text]}

    def warmup_inputs(self, texts):
        return [{"text": list(WARMUP_TEXTS[:1])}, {"text": list(WARMUP_TEXTS)}]
