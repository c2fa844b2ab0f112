"""Next-token batches for a left-to-right LM, made from masked-LM pretraining batches.

The left-to-right objective (`LeftToRightPretrainer`) reads the same
records and corpora as the masked LM: its transform puts the original
tokens back at the masked positions (no `[MASK]`, no random tokens), drops
`mask_positions`, and labels every position with the token that follows it.
"""


def next_token_batches(dataset):
    """`(x, y, sample_weight)` masked-LM batches -> next-token batches, in tf.data.

    Args:
        dataset: `tf.data.Dataset` of batches as `pretraining_dataset` and
            `dynamic_pretraining_dataset` give: `x` with `token_ids`,
            `segment_ids`, `padding_mask` [batch, seq] and `mask_positions`
            [batch, predictions]; `y["mlm"]` the original tokens there and
            `sample_weight["mlm"]` (1 for a real position).

    Returns:
        A dataset of `(x, {"lm": targets}, {"lm": weights})`: `x` the
        uncorrupted `token_ids`, `segment_ids` and `padding_mask`;
        `targets[:, t]` the token at t + 1 (0 at the last position);
        `weights[:, t]` 1.0 where t + 1 is a real token, else 0.0.
    """
    import tensorflow as tf

    def to_next_token(x, y, sample_weight):
        token_ids, padding_mask = x["token_ids"], x["padding_mask"]
        positions = tf.cast(x["mask_positions"], tf.int32)
        real = sample_weight["mlm"] > 0
        rows = tf.broadcast_to(tf.range(tf.shape(positions)[0])[:, None], tf.shape(positions))
        indices = tf.stack([tf.boolean_mask(rows, real), tf.boolean_mask(positions, real)], axis=-1)
        originals = tf.boolean_mask(tf.cast(y["mlm"], token_ids.dtype), real)
        token_ids = tf.tensor_scatter_nd_update(token_ids, indices, originals)  # (batch, seq), uncorrupted
        last = tf.zeros_like(token_ids[:, :1])
        targets = tf.concat([token_ids[:, 1:], last], axis=1)
        weights = tf.cast(tf.concat([padding_mask[:, 1:], tf.cast(last, padding_mask.dtype)], axis=1), tf.float32)
        inputs = {"token_ids": token_ids, "segment_ids": x["segment_ids"], "padding_mask": padding_mask}
        return inputs, {"lm": targets}, {"lm": weights}

    return dataset.map(to_next_token, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
