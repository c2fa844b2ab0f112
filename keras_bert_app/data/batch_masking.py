"""Masking after batching: packed sequences, shuffled and masked anew every epoch in a tf.data graph.

The sequences are packed once (ELECTRA's segments, RoBERTa's full
sentences); each epoch draws a new order and each batch its masked
positions with vectorized stateless TensorFlow ops seeded by `(seed, epoch,
batch)`, so a resumed run reads what the first would have. The positions
follow `masking.mask_batch` (token masking); each gets `[MASK]` with
`mask_probability`, a random token with `random_probability`, else keeps
its own (BERT 0.8/0.1, ELECTRA 0.85/0).
"""

from keras_bert_app.data.pretraining_records import features_to_model_inputs


def masked_batches(
    token_ids,
    segment_ids,
    num_tokens,
    batch_size,
    *,
    max_predictions_per_seq,
    special_token_ids,
    mask_token_id,
    vocabulary_size,
    masked_lm_prob=0.15,
    mask_probability=0.8,
    random_probability=0.1,
    seed=12345,
    drop_remainder=False,
):
    """A dataset of masked batches of packed sequences; each pass over it is the next epoch.

    Args:
        token_ids, segment_ids: int arrays `[num_sequences, max_seq_length]`.
        num_tokens: int array `[num_sequences]`: tokens of each (the rest is padding).
        batch_size: int.
        max_predictions_per_seq: int. Masked positions per sequence at most.
        special_token_ids: ids never masked (`[CLS]`, `[SEP]`).
        mask_token_id, vocabulary_size: int. `[MASK]`, and random tokens' range.
        masked_lm_prob, mask_probability, random_probability: float.
        seed: int.
        drop_remainder: bool. Drop a last partial batch.

    Returns:
        `tf.data.Dataset` of `(x, y, sample_weight)` as `pretraining_dataset`
        gives, without `y["nsp"]`.
    """
    import numpy as np
    import tensorflow as tf

    arrays = {
        "input_ids": tf.constant(np.asarray(token_ids, np.int32)),
        "segment_ids": tf.constant(np.asarray(segment_ids, np.int32)),
        "num_tokens": tf.constant(np.asarray(num_tokens, np.int32)),
    }
    num_sequences = int(arrays["input_ids"].shape[0])
    options = dict(
        max_predictions=max_predictions_per_seq, special_token_ids=tuple(special_token_ids),
        mask_token_id=mask_token_id, vocabulary_size=vocabulary_size, masked_lm_prob=masked_lm_prob,
        mask_probability=mask_probability, random_probability=random_probability,
    )
    seed = tf.constant(seed, tf.int64)
    epochs_started = [0]

    def epoch_numbers():  # one Python call per epoch: the next epoch's number
        epochs_started[0] += 1
        yield epochs_started[0] - 1

    def epoch_batches(epoch):
        epoch = tf.cast(epoch, tf.int64)
        order = tf.argsort(tf.random.stateless_uniform([num_sequences], seed=tf.stack([seed, epoch])))
        batches = tf.data.Dataset.from_tensor_slices(order).batch(batch_size, drop_remainder=drop_remainder)
        return batches.enumerate().map(
            lambda index, rows: features_to_model_inputs(
                _mask_rows(arrays, rows, tf.stack([seed, epoch * (1 << 32) + index]), **options)
            ),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )

    dataset = tf.data.Dataset.from_generator(epoch_numbers, output_signature=tf.TensorSpec([], tf.int64))
    return dataset.flat_map(epoch_batches).prefetch(tf.data.AUTOTUNE)


def _mask_rows(arrays, rows, seed, *, max_predictions, special_token_ids, mask_token_id, vocabulary_size,
               masked_lm_prob, mask_probability, random_probability):
    """The original pretraining features of the sequences `rows`, masked with the stateless `seed`."""
    import tensorflow as tf

    token_ids = tf.gather(arrays["input_ids"], rows)
    num_tokens = tf.gather(arrays["num_tokens"], rows)
    batch, length = tf.shape(token_ids)[0], token_ids.shape[1]
    real = tf.range(length)[None, :] < num_tokens[:, None]
    candidate = real
    for special in special_token_ids:
        candidate &= token_ids != special
    # How many to mask: as `masking._special_and_counts` (tf.round is half-to-even, as NumPy's).
    counts = tf.cast(tf.round(tf.cast(num_tokens, tf.float32) * masked_lm_prob), tf.int32)
    counts = tf.minimum(max_predictions, tf.maximum(1, counts))
    counts = tf.minimum(counts, tf.reduce_sum(tf.cast(candidate, tf.int32), axis=1))
    # The `counts` lowest of uniform scores among the candidates: a uniform random subset, then sorted.
    scores = tf.where(candidate, tf.random.stateless_uniform([batch, length], seed=seed), 2.0)
    width = min(max_predictions, length)
    _, lowest = tf.math.top_k(-scores, k=width)
    chosen = tf.range(width)[None, :] < counts[:, None]
    positions = tf.sort(tf.where(chosen, lowest, length), axis=1)
    valid = positions < length
    positions = tf.where(valid, positions, 0)
    labels = tf.where(valid, tf.gather(token_ids, positions, batch_dims=1), 0)
    draws = tf.random.stateless_uniform([batch, width], seed=seed + [0, 1])
    replacements = tf.where(draws < mask_probability, mask_token_id, labels)
    if random_probability > 0:
        random_ids = tf.random.stateless_uniform([batch, width], seed=seed + [0, 2], maxval=vocabulary_size, dtype=tf.int32)
        replacements = tf.where(draws >= 1 - random_probability, random_ids, replacements)
    row_ids = tf.broadcast_to(tf.range(batch)[:, None], [batch, width])
    indices = tf.stack([tf.boolean_mask(row_ids, valid), tf.boolean_mask(positions, valid)], axis=-1)
    masked = tf.tensor_scatter_nd_update(token_ids, indices, tf.boolean_mask(replacements, valid))
    padding = [[0, 0], [0, max_predictions - width]]
    return {
        "input_ids": masked,
        "input_mask": tf.cast(real, tf.int32),
        "segment_ids": tf.gather(arrays["segment_ids"], rows),
        "masked_lm_positions": tf.pad(positions, padding),
        "masked_lm_ids": tf.pad(labels, padding),
        "masked_lm_weights": tf.pad(tf.cast(valid, tf.float32), padding),
    }
