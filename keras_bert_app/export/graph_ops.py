"""TF ops shared by the serving heads: offsets, positions, spans (all batched)."""

import tensorflow as tf

from keras_bert_app.preprocessing import offsets

# Padding of int outputs (offsets, positions, ids) past the real entries.
PADDING = -1


def char_offsets(text, byte_offsets, width):
    """The first `width` UTF-8 byte offsets of each row -> code point offsets.

    Args:
        text: tf.string [batch], valid UTF-8 (see `bert_normalization.valid_utf8`).
        byte_offsets: int64 ragged [batch, (tokens)], offsets into `text`.
        width: int. Tokens kept per row.

    Returns:
        int64 ragged [batch, (min(tokens, width))].
    """
    return offsets.byte_to_char_offsets(text, byte_offsets[:, :width])


def pad_rows(ragged, width, value=PADDING, first=None):
    """Ragged [batch, (n)] -> dense [batch, width], `value` past each row.

    Args:
        ragged: RaggedTensor [batch, (n)].
        width: int. The dense width (longer rows are cut).
        value: the padding value.
        first: a scalar put before every row (e.g. the `[CLS]` slot), or None.
    """
    if first is not None:
        batch = ragged.nrows()
        head = tf.RaggedTensor.from_row_lengths(
            tf.fill([batch], tf.cast(first, ragged.dtype)), tf.ones([batch], tf.int64)
        )
        ragged = tf.concat([head, ragged], axis=1)
    return ragged.to_tensor(tf.cast(value, ragged.dtype), shape=[None, width])


def token_positions(token_ids, token_id, width):
    """Where `token_id` sits in each row, the first `width` of them.

    Args:
        token_ids: int [batch, seq].
        token_id: int. The token to find (e.g. the `[MASK]` id).
        width: int. Positions kept per row.

    Returns:
        int32 [batch, width]: positions in increasing order, then -1.
    """
    sequence_length = tf.shape(token_ids)[1]
    positions = tf.range(sequence_length)[tf.newaxis, :]  # (1, seq)
    found = tf.where(tf.equal(token_ids, token_id), positions, sequence_length)
    found = tf.sort(found, axis=1)  # (batch, seq): found positions first
    filler = tf.fill([tf.shape(token_ids)[0], width], sequence_length)
    found = tf.concat([found, filler], axis=1)[:, :width]  # (batch, width)
    return tf.where(found < sequence_length, found, PADDING)


def best_spans(start_logits, end_logits, candidate_mask, max_answer_length):
    """The highest-scoring valid answer span of each row (exhaustive search).

    A span (i, j) is valid when both i and j are candidates (context
    tokens), j >= i and j - i + 1 <= max_answer_length; its score is
    start_logits[i] + end_logits[j]. On a tie the smallest i, then j, wins.

    Args:
        start_logits, end_logits: float32 [batch, seq].
        candidate_mask: bool [batch, seq].
        max_answer_length: int. Longest span, in tokens.

    Returns:
        (start, end, score, found): int32 [batch] positions (end inclusive;
        0 when there is no valid span), float32 [batch] scores (0 when
        none), bool [batch].
    """
    sequence_length = tf.shape(start_logits)[1]
    position = tf.range(sequence_length)
    length = position[tf.newaxis, :] - position[:, tf.newaxis]  # (seq, seq): j - i
    band = (length >= 0) & (length < max_answer_length)
    valid = (
        band[tf.newaxis]
        & candidate_mask[:, :, tf.newaxis]
        & candidate_mask[:, tf.newaxis, :]
    )  # (batch, seq, seq)
    scores = start_logits[:, :, tf.newaxis] + end_logits[:, tf.newaxis, :]
    scores = tf.where(valid, scores, tf.constant(float("-inf"), scores.dtype))
    flat = tf.reshape(scores, [tf.shape(scores)[0], -1])  # (batch, seq * seq)
    best = tf.argmax(flat, axis=1, output_type=tf.int32)
    found = tf.reduce_any(tf.reshape(valid, tf.shape(flat)), axis=1)
    start = tf.where(found, best // sequence_length, 0)
    end = tf.where(found, best % sequence_length, 0)
    score = tf.where(found, tf.gather(flat, best, batch_dims=1), 0.0)
    return start, end, score, found


def bucket_length(padding_mask, lengths):
    """The length a batch is cut to: its last real position, rounded up to one of `lengths`.

    `round_up` as graph ops over a constant list: the smallest of `lengths`
    (increasing, the last one the full width) at or past the batch's last
    position with a nonzero `padding_mask` (an empty batch, or one without
    real tokens, gets the shortest).

    Args:
        padding_mask: int [batch, seq].
        lengths: increasing ints, the last one `seq`.

    Returns:
        int32 scalar.
    """
    lengths = tf.constant(lengths, tf.int32)
    positions = tf.range(1, tf.shape(padding_mask)[1] + 1)[tf.newaxis, :]  # (1, seq)
    last = tf.reduce_max(tf.where(tf.not_equal(padding_mask, 0), positions, 0))  # lowest int when batch is 0
    index = tf.searchsorted(lengths, tf.maximum(last, 1)[tf.newaxis], side="left")[0]
    return tf.gather(lengths, tf.minimum(index, tf.size(lengths) - 1))


def pad_positions(values, padding_mask, value=0):
    """A per-position output [batch, length, ...] -> [batch, seq, ...], `value` wherever `padding_mask` is 0.

    Args:
        values: [batch, length, ...] with length <= seq.
        padding_mask: int [batch, seq].
        value: the filler at padding positions.
    """
    values = tf.convert_to_tensor(values)  # a JAX or torch model run eagerly gives NumPy arrays
    sequence_length = padding_mask.shape[1]
    missing = tf.shape(padding_mask)[1] - tf.shape(values)[1]
    rank = values.shape.rank
    inner = values.shape[2:].as_list()
    values = tf.pad(values, [[0, 0], [0, missing]] + [[0, 0]] * (rank - 2), constant_values=tf.cast(value, values.dtype))
    values = tf.ensure_shape(values, [None, sequence_length] + inner)
    real = tf.reshape(tf.not_equal(padding_mask, 0), tf.concat([tf.shape(padding_mask), [1] * (rank - 2)], 0))
    return tf.where(real, values, tf.cast(value, values.dtype))
