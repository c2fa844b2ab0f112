"""`TokenClassificationHead`: serving a `BertTokenClassifier` (NER) on raw text."""

import tensorflow as tf

from keras_bert_app.export import graph_ops
from keras_bert_app.export.serving_head import ServingHead
from keras_bert_app.preprocessing import bert_normalization


class TokenClassificationHead(ServingHead):
    """Per-token and per-word tags with character offsets into the raw text.

    `serving_default(text)` packs `[CLS] pieces [SEP]` (pieces past
    `sequence_length - 2` are dropped) and returns, per position of the
    packed sequence [batch, seq]:
    - `tag_ids` int32 and `probabilities` float32 [batch, seq, tags] for
      every position (`[CLS]`, `[SEP]` included, as the model computes
      them; at padding positions, with length buckets, -1 and 0, and
      `tags` "");
    - `token_start`, `token_end` int64: code point offsets of the piece into
      `text` (end exclusive), -1 at `[CLS]`, `[SEP]` and padding;
      `token_mask` bool: the position holds a piece of the text;
    - `tags`: the tag names of `tag_ids` (only when label names are known).

    and per word [batch, seq - 2] (tagged through its first piece, as in
    training): `word_tag_ids` int32, `word_start`, `word_end` int64 (-1 past
    the words) and, with label names, `word_tags` ("" past the words).
    Invalid UTF-8 is replaced by U+FFFD first; offsets then index that string.

    `serve_token_ids` returns `tag_ids`, `probabilities` (and `tags`).

    Args:
        preprocessor: `BertPreprocessor`.
        label_names: list of str or None, the tags in id order.
    """

    sequence_outputs = (None,)

    def __init__(self, preprocessor, label_names=None):
        super().__init__("token_classification", preprocessor)
        self.label_names = label_names
        self._label_table = None

    def attach(self, module, serve):
        super().attach(module, serve)
        names = list(self.label_names) if self.label_names is not None else []
        module.label_names = tf.Variable(tf.constant(names, tf.string), trainable=False, name="label_names")
        self._label_table = module.label_names if self.label_names is not None else None

    def serve_text(self, text):
        seq = self.sequence_length
        width = seq - 2  # pieces that fit between [CLS] and [SEP]
        text = bert_normalization.valid_utf8(text)
        piece_ids, byte_starts, byte_ends = self.tokenizer.tokenize_with_offsets(text)
        piece_ids = piece_ids[:, :width]
        outputs = self.serve_features(self.preprocessor.packer(piece_ids))
        char_starts = graph_ops.char_offsets(text, byte_starts, width)  # (batch, (pieces))
        char_ends = graph_ops.char_offsets(text, byte_ends, width)
        outputs["token_start"] = graph_ops.pad_rows(char_starts, seq, first=-1)  # (batch, seq)
        outputs["token_end"] = graph_ops.pad_rows(char_ends, seq, first=-1)
        outputs["token_mask"] = outputs["token_start"] >= 0

        # Words: the word of a piece is the last word starting at or before it.
        _, word_starts, _ = bert_normalization.split_words_with_offsets(text, self.tokenizer.lowercase)
        word_starts = word_starts.to_tensor(tf.int64.max)  # (batch, words)
        piece_starts = byte_starts[:, :width].to_tensor(tf.int64.max)  # (batch, pieces)
        is_piece = byte_starts[:, :width].to_tensor(-1) >= 0
        word_of_piece = tf.searchsorted(word_starts, piece_starts, side="right")
        previous = tf.pad(word_of_piece, [[0, 0], [1, 0]], constant_values=-1)[:, :-1]
        following = tf.pad(word_of_piece, [[0, 0], [0, 1]], constant_values=-1)[:, 1:]
        first_piece = is_piece & tf.not_equal(word_of_piece, previous)  # (batch, pieces)
        last_piece = is_piece & tf.not_equal(word_of_piece, following)
        pieces = tf.shape(first_piece)[1]
        piece_tags = outputs["tag_ids"][:, 1 : 1 + pieces]  # (batch, pieces)

        def per_word(values, mask, dtype):
            return graph_ops.pad_rows(tf.ragged.boolean_mask(tf.cast(values, dtype), mask), width)

        outputs["word_tag_ids"] = per_word(piece_tags, first_piece, tf.int32)  # (batch, seq - 2)
        outputs["word_start"] = per_word(char_starts.to_tensor(-1), first_piece, tf.int64)
        outputs["word_end"] = per_word(char_ends.to_tensor(-1), last_piece, tf.int64)
        if self._label_table is not None:
            word_tags = tf.gather(self._label_table, tf.maximum(outputs["word_tag_ids"], 0))
            outputs["word_tags"] = tf.where(outputs["word_tag_ids"] >= 0, word_tags, "")
        return outputs

    def outputs(self, raw, features):
        logits = tf.cast(raw, tf.float32)  # (batch, seq, tags)
        tag_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        probabilities = tf.nn.softmax(logits, axis=-1)
        if self.bucketing:  # padding positions were not computed: fillers
            real = tf.not_equal(features["padding_mask"], 0)  # (batch, seq)
            tag_ids = tf.where(real, tag_ids, graph_ops.PADDING)
            probabilities = tf.where(real[:, :, tf.newaxis], probabilities, 0.0)
        outputs = {"tag_ids": tag_ids, "probabilities": probabilities}
        if self._label_table is not None:
            tags = tf.gather(self._label_table, tf.maximum(tag_ids, 0))
            outputs["tags"] = tf.where(tag_ids >= 0, tags, "")
        return outputs

    def metadata(self):
        return {"label_names": list(self.label_names) if self.label_names is not None else None}
