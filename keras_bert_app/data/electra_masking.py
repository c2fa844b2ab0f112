"""ELECTRA's corruption of the masked positions: `[MASK]` or kept, no random tokens.

ELECTRA's official code (`pretrain_helpers.mask`) draws the masked
positions as BERT does but puts `[MASK]` at 85% of them and keeps the other
15% (no random tokens: the generator fills them). This module re-corrupts
batches that already carry masked positions: only the tokens at the
positions are drawn again, each batch statelessly from `(seed, batch
index)`, so a resumed run reads the same data.
"""

ELECTRA_MASK_PROBABILITY = 0.85


def electra_masking(
    dataset,
    mask_token_id,
    mask_probability=ELECTRA_MASK_PROBABILITY,
    random_probability=0.0,
    vocabulary_size=None,
    seed=12345,
):
    """Re-draw the tokens at the masked positions of pretraining batches, ELECTRA's way.

    Args:
        dataset: `tf.data.Dataset` of `(x, y, sample_weight)` batches as
            `pretraining_dataset` and `dynamic_pretraining_dataset` give:
            `x["token_ids"]`, `x["mask_positions"]`, `y["mlm"]` (the original
            tokens there) and `sample_weight["mlm"]` (1 for a real position).
        mask_token_id: int. Id of `[MASK]`.
        mask_probability: float. Share of the positions that get `[MASK]`
            (0.85 in ELECTRA; 0.8 in BERT).
        random_probability: float. Share that gets a random token (0 in
            ELECTRA; 0.1 in BERT); the rest keep their original token.
        vocabulary_size: int or None. Random tokens are drawn from
            `[0, vocabulary_size)`; required when `random_probability > 0`.
        seed: int. Seed of the draws.

    Returns:
        The dataset with `x["token_ids"]` re-corrupted; everything else as it was.

    Raises:
        ValueError: probabilities outside [0, 1] or summing above 1, or no
            `vocabulary_size` for random tokens.
    """
    import tensorflow as tf

    if not (0 <= mask_probability <= 1 and 0 <= random_probability <= 1):
        raise ValueError(
            f"mask_probability and random_probability must be in [0, 1]; got {mask_probability}, {random_probability}."
        )
    if mask_probability + random_probability > 1 + 1e-9:
        raise ValueError(
            f"mask_probability + random_probability must be at most 1; got {mask_probability + random_probability}."
        )
    if random_probability > 0 and vocabulary_size is None:
        raise ValueError("random tokens need the vocabulary_size.")

    def corrupt(index, batch):
        x, y, sample_weight = batch
        token_ids = x["token_ids"]
        positions = tf.cast(x["mask_positions"], tf.int32)
        originals = tf.cast(y["mlm"], token_ids.dtype)
        real = sample_weight["mlm"] > 0
        shape = tf.shape(positions)
        draw_seed = tf.stack([tf.constant(seed, tf.int64), tf.cast(index, tf.int64)])
        draws = tf.random.stateless_uniform(shape, seed=draw_seed)
        replacements = tf.where(draws < mask_probability, tf.cast(mask_token_id, token_ids.dtype), originals)
        if random_probability > 0:
            random_ids = tf.random.stateless_uniform(
                shape, seed=draw_seed + [0, 1 << 40], maxval=vocabulary_size, dtype=tf.int32
            )
            is_random = (draws >= mask_probability) & (draws < mask_probability + random_probability)
            replacements = tf.where(is_random, tf.cast(random_ids, token_ids.dtype), replacements)
        rows = tf.broadcast_to(tf.range(shape[0])[:, None], shape)
        indices = tf.stack([tf.boolean_mask(rows, real), tf.boolean_mask(positions, real)], axis=-1)
        token_ids = tf.tensor_scatter_nd_update(token_ids, indices, tf.boolean_mask(replacements, real))
        return {**x, "token_ids": token_ids}, y, sample_weight

    return dataset.enumerate().map(corrupt, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
