"""Token offsets: from normalised words back to the raw text, and bytes to characters."""

import tensorflow as tf

from keras_bert_app.preprocessing import bert_normalization


def byte_to_char_offsets(strings, byte_offsets):
    """UTF-8 byte offsets into `strings` -> code point (character) offsets.

    Python's `str` indexes code points, so `text[char_start:char_end]` is the
    span that `text.encode()[byte_start:byte_end]` is. An offset inside a
    character counts that character as started (it rounds up).

    Args:
        strings: a str, a list of str, or a tf.string tensor `[batch]` (or a
            scalar), the strings the offsets point into.
        byte_offsets: int offsets, ragged `[batch, (tokens)]` (or 1-D for a
            scalar string), e.g. the starts or ends of
            `BertTokenizer.tokenize_with_offsets`.

    Returns:
        int64 offsets of the same shape (`tf.RaggedTensor` or `tf.Tensor`).

    Example:
    ```python
    ids, starts, ends = tokenizer.tokenize_with_offsets(["naïve café"])
    byte_to_char_offsets(["naïve café"], starts)   # [[0, 6]]
    ```
    """
    strings = tf.convert_to_tensor(strings, dtype=tf.string)
    if strings.shape.rank == 0:
        offsets = tf.RaggedTensor.from_tensor(tf.convert_to_tensor(byte_offsets)[tf.newaxis])
        return byte_to_char_offsets(strings[tf.newaxis], offsets).flat_values
    if not isinstance(byte_offsets, tf.RaggedTensor):
        byte_offsets = tf.ragged.constant(byte_offsets) if isinstance(byte_offsets, list) else (
            tf.RaggedTensor.from_tensor(tf.convert_to_tensor(byte_offsets))
        )
    byte_offsets = tf.cast(byte_offsets, tf.int64)
    strings = tf.strings.unicode_transcode(
        strings, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    _, char_starts = tf.strings.unicode_decode_with_offsets(strings, "UTF-8")  # [batch, (chars)]
    # Past-the-end padding keeps each row sorted.
    padding = tf.int64.max
    char_starts = char_starts.to_tensor(padding)
    dense = byte_offsets.to_tensor(0)
    char_offsets = tf.searchsorted(char_starts, dense, side="left", out_type=tf.int64)
    return tf.RaggedTensor.from_tensor(char_offsets, lengths=byte_offsets.row_lengths())


def normalized_to_raw_offsets(raw, normalized, starts, ends, lowercase):
    """Offsets inside normalised words -> offsets inside the raw words.

    Normalisation keeps every byte in place for most words (printable
    ASCII, or nothing changed); the others are mapped character by
    character: a piece starts at the raw character whose normalised form
    holds its first byte, and ends after the one that holds its last.

    Args:
        raw: tf.string [words], words as split from the input text.
        normalized: tf.string [words], `bert_normalization.normalize(raw)`.
        starts, ends: int64 ragged [words, (pieces)], byte offsets of the
            word pieces inside `normalized`.
        lowercase: bool, as given to `normalize`.

    Returns:
        (starts, ends), the same pieces' byte offsets inside `raw`.
    """
    aligned = tf.equal(raw, normalized)
    if lowercase:
        aligned |= tf.strings.regex_full_match(raw, bert_normalization.PRINTABLE_ASCII)
    moved_words = tf.where(~aligned)[:, 0]
    moved_pieces = tf.where(~tf.gather(aligned, starts.value_rowids()))
    chars = tf.strings.unicode_split(tf.gather(raw, moved_words), "UTF-8")  # [moved, (chars)]
    raw_bytes = tf.cast(tf.strings.length(chars.flat_values), tf.int64)
    normal_bytes = tf.strings.length(
        bert_normalization.normalize(chars.flat_values, lowercase)
    )
    # Positions along all moved words laid end to end.
    raw_end = tf.cumsum(raw_bytes)
    normal_end = tf.cumsum(tf.cast(normal_bytes, tf.int64))
    zero = tf.zeros([1], tf.int64)
    raw_base = tf.gather(tf.concat([zero, raw_end], 0), chars.row_starts())
    normal_base = tf.gather(tf.concat([zero, normal_end], 0), chars.row_starts())
    moved_starts = tf.gather(starts, moved_words)
    rows = moved_starts.value_rowids()
    first_char = tf.gather(chars.row_starts(), rows)
    last_char = tf.gather(chars.row_limits(), rows) - 1
    piece_start = tf.gather(normal_base, rows) + moved_starts.flat_values
    piece_end = tf.gather(normal_base, rows) + tf.gather(ends, moved_words).flat_values
    start_char = tf.searchsorted(normal_end, piece_start, side="right", out_type=tf.int64)
    end_char = tf.searchsorted(normal_end, piece_end - 1, side="right", out_type=tf.int64)
    start_char = tf.clip_by_value(start_char, first_char, last_char)
    end_char = tf.clip_by_value(end_char, first_char, last_char)
    raw_start = tf.gather(raw_end - raw_bytes, start_char) - tf.gather(raw_base, rows)
    raw_stop = tf.gather(raw_end, end_char) - tf.gather(raw_base, rows)
    starts = starts.with_flat_values(
        tf.tensor_scatter_nd_update(starts.flat_values, moved_pieces, raw_start)
    )
    ends = ends.with_flat_values(
        tf.tensor_scatter_nd_update(ends.flat_values, moved_pieces, raw_stop)
    )
    return starts, ends
