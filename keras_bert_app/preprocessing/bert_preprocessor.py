"""`BertPreprocessor`: strings (or string pairs) -> BERT encoder inputs."""

import keras
import tensorflow as tf

from keras_bert_app.preprocessing.preprocessing_layer import PreprocessingLayer
from keras_bert_app.preprocessing.segment_packer import SegmentPacker


@keras.saving.register_keras_serializable(package="keras_bert_app")
class BertPreprocessor(PreprocessingLayer):
    """Tokenize one or two text segments and pack them for `BertEncoder`.

    `[CLS] A [SEP] B [SEP]` with segment ids 0 through the first `[SEP]` and 1
    after, padded to `sequence_length`, truncated as the original BERT does
    (see `SegmentPacker`).

    Literal special tokens in the text follow the tokenizer's
    `special_tokens_in_strings` (by default they are text); the segment ids
    always come from the segments given.

    Works inside `tf.data` under every Keras backend (tf tensors there);
    called eagerly it returns backend tensors.

    Args:
        tokenizer: `BertTokenizer` or `SentencePieceTokenizer` (ALBERT).
        sequence_length: int. The packed length.
        truncate: str. "round_robin" (the original, = "longest_first") or
            "waterfall".

    Call args:
        x: strings (a str, a list of str, a tf.string tensor `[batch]` or a
            scalar), or a tuple `(a, b)` of two of them for sentence pairs.
        y, sample_weight: optional, passed through (so that
            `dataset.map(preprocessor)` works on `(x, y)` datasets).

    Returns:
        `{"token_ids", "segment_ids", "padding_mask"}` `[batch, sequence_length]`,
        or `(that dict, y[, sample_weight])` when `y` is given.

    Example:
    ```python
    preprocessor = keras_bert_app.BertPreprocessor.from_preset(
        "bert_base_uncased", sequence_length=16
    )
    preprocessor((["The cat sat."], ["It was tired."]))["token_ids"]
    ```
    """

    def __init__(self, tokenizer, sequence_length=128, truncate="round_robin", **kwargs):
        super().__init__(**kwargs)
        if isinstance(tokenizer, dict):
            from keras_bert_app.preprocessing import bert_tokenizer, sentencepiece_tokenizer  # noqa: F401 (registered)

            tokenizer = keras.layers.deserialize(tokenizer)
        # === Layers ===
        self.tokenizer = tokenizer
        self.packer = SegmentPacker(
            sequence_length=sequence_length,
            start_value=tokenizer.cls_token_id,
            end_value=tokenizer.sep_token_id,
            pad_value=tokenizer.pad_token_id,
            truncate=truncate,
        )
        # === Config ===
        self.sequence_length = int(sequence_length)
        self.truncate = truncate

    def call(self, x, y=None, sample_weight=None):
        segments = tuple(x) if isinstance(x, (tuple, list)) and _is_pair(x) else (x,)
        with tf.device("cpu"):
            packed = self.packer(tuple(self.tokenizer(segment) for segment in segments))
        if tf.executing_eagerly() and keras.config.backend() != "tensorflow":
            packed = {name: keras.ops.convert_to_tensor(value.numpy()) for name, value in packed.items()}
        return keras.utils.pack_x_y_sample_weight(packed, y, sample_weight)

    @classmethod
    def from_preset(cls, name_or_path, sequence_length=128, truncate="round_robin", **kwargs):
        """The preprocessor of a preset (the tokenizer it names, WordPiece or
        SentencePiece; `kwargs` go to it, e.g. `special_tokens_in_strings=True`)."""
        from keras_bert_app.preprocessing.preset_tokenizer import tokenizer_from_preset

        tokenizer = tokenizer_from_preset(name_or_path, **kwargs)
        return cls(tokenizer, sequence_length=sequence_length, truncate=truncate)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "tokenizer": keras.layers.serialize(self.tokenizer),
                "sequence_length": self.sequence_length,
                "truncate": self.truncate,
            }
        )
        return config


def _is_pair(x):
    """Whether a tuple/list `x` is `(a, b)` segments rather than a list of strings."""
    if isinstance(x, tuple):
        return True
    # A list of two non-str items (tensors, lists of str) is a pair; a list of str is a batch.
    return len(x) == 2 and not any(isinstance(item, (str, bytes)) for item in x)
