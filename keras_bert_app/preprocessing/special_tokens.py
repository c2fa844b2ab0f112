"""Literal special tokens in text: split them out and splice in their ids (TF ops).

With `BertTokenizer(special_tokens_in_strings=True)`, an exact,
case-sensitive `[CLS]`, `[SEP]`, `[MASK]`, `[PAD]` or `[UNK]` in the raw text
is that one token, as in HF `tokenizers`: the text is split around those
literals, the pieces between are tokenized each on its own, and the special
ids are put back in place.
"""

import re

import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert_app.preprocessing.vocabulary import SPECIAL_TOKENS

# RE2: any of the special-token literals, exactly.
SPECIAL_TOKEN_PATTERN = "|".join(re.escape(token) for token in SPECIAL_TOKENS)


def split_around_special_tokens(text):
    """[batch] tf.string -> (pieces, starts, ends) ragged [batch, (pieces)].

    The special-token literals are pieces of their own; the text between
    them makes the other pieces (empty ones are left out). Offsets are UTF-8
    byte offsets into `text`. NUL bytes come back as U+0001 (both are
    dropped by cleaning; regex_split would stop at a NUL).
    """
    text = tf.strings.regex_replace(text, r"\x00", "\x01")
    return tf_text.regex_split_with_offsets(text, SPECIAL_TOKEN_PATTERN, SPECIAL_TOKEN_PATTERN)


def tokenize_around_special_tokens(text, special_token_ids, tokenize):
    """Tokenize `text` with each special-token literal as its own id.

    Args:
        text: tf.string [batch], valid UTF-8.
        special_token_ids: int tensor [5], the ids of `SPECIAL_TOKENS` in
            that order (their dtype is the ids').
        tokenize: strings [n] -> a tuple `(ids,)` or `(ids, starts, ends)` of
            ragged [n, (tokens)], byte offsets into each string.

    Returns:
        The same tuple for `text`, [batch, (tokens)]; a special token's
        offsets span its literal.
    """
    pieces, piece_starts, piece_ends = split_around_special_tokens(text)  # [batch, (pieces)]
    flat = pieces.flat_values  # [pieces]
    matches = tf.equal(flat[:, tf.newaxis], tf.constant(SPECIAL_TOKENS)[tf.newaxis, :])  # [pieces, 5]
    is_special = tf.reduce_any(matches, axis=1)  # [pieces]
    outputs = tokenize(tf.where(is_special, "", flat))  # each [pieces, (tokens)]
    which = tf.argmax(tf.cast(matches, tf.int32), axis=1)  # [pieces]
    one_if_special = tf.cast(is_special, tf.int64)

    def special(values):  # [pieces] -> [pieces, (0 or 1)]
        return tf.RaggedTensor.from_row_lengths(tf.boolean_mask(values, is_special), one_if_special)

    # Each piece is either special or not: appending keeps the order.
    spliced = [tf.concat([outputs[0], special(tf.gather(special_token_ids, which))], axis=1)]
    if len(outputs) == 3:
        starts, ends = outputs[1:]
        base = tf.gather(piece_starts.flat_values, starts.value_rowids())
        starts = starts.with_flat_values(starts.flat_values + base)
        ends = ends.with_flat_values(ends.flat_values + base)
        spliced.append(tf.concat([starts, special(piece_starts.flat_values)], axis=1))
        spliced.append(tf.concat([ends, special(piece_ends.flat_values)], axis=1))
    return tuple(pieces.with_flat_values(x).merge_dims(1, 2) for x in spliced)
