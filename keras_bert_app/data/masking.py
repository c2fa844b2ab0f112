"""Masked-LM predictions for sequences (BERT paper, section 3.1, A.1).

As in the original `create_pretraining_data.py`: `num_to_predict =
min(max_predictions_per_seq, max(1, round(num_tokens * masked_lm_prob)))`
positions (Python's `round`, counting `[CLS]` and `[SEP]`) are drawn among
the tokens that are not `[CLS]`/`[SEP]`; each is replaced by `[MASK]` with
probability 0.8, by a random vocabulary token with probability 0.1, and kept
with probability 0.1. With whole-word masking, a word and its `##` pieces are
drawn together, and a word that would overshoot `num_to_predict` is skipped.
Positions are drawn for a whole batch of sequences at once (one document's
instances), which is what makes generation fast in NumPy.
"""

import numpy as np


def continuation_flags(vocabulary):
    """Bool array `[vocabulary_size]`: True for `##` word-continuation pieces."""
    return np.array([token.startswith("##") for token in vocabulary], dtype=bool)


def _whole_word_positions(token_ids, candidates, count, is_continuation, rng):
    """Positions of randomly drawn whole words, `count` at most in total."""
    # A word starts at a candidate that is not a `##` piece (or that follows a
    # special token); its pieces are the candidates up to the next start.
    is_start = ~is_continuation[token_ids[candidates]]
    is_start |= np.diff(candidates, prepend=-2) != 1
    word_bounds = np.append(np.flatnonzero(is_start), len(candidates))
    chosen = []
    for word in rng.permutation(len(word_bounds) - 1).tolist():
        if len(chosen) >= count:
            break
        start, end = word_bounds[word], word_bounds[word + 1]
        if len(chosen) + end - start > count:
            continue
        chosen.extend(candidates[start:end].tolist())
    return np.sort(np.array(chosen, dtype=np.int32))


def _whole_word_rows(token_ids, num_tokens, counts, special, is_continuation, rng):
    """Whole-word positions, row by row: `[batch, max_predictions_per_seq]`."""
    positions = np.zeros((len(token_ids), counts.max(initial=0)), dtype=np.int64)
    num_masked = np.zeros(len(token_ids), dtype=np.int64)
    for row in range(len(token_ids)):
        candidates = np.flatnonzero(~special[row, : num_tokens[row]])
        chosen = _whole_word_positions(
            token_ids[row], candidates, counts[row], is_continuation, rng
        )
        positions[row, : len(chosen)] = chosen
        num_masked[row] = len(chosen)
    return positions, num_masked


def mask_batch(
    token_ids,
    num_tokens,
    rng,
    special_token_ids,
    mask_token_id,
    vocabulary_size,
    masked_lm_prob,
    max_predictions_per_seq,
    is_continuation=None,
):
    """Draw the masked positions of a batch of sequences and corrupt them.

    Args:
        token_ids: int array `[batch, seq_length]`. Packed sequences, padded
            after `num_tokens`.
        num_tokens: int array `[batch]`. Length of each sequence.
        rng: `numpy.random.Generator`.
        special_token_ids: sequence of int. Ids never masked (`[CLS]`,
            `[SEP]`).
        mask_token_id: int. Id of `[MASK]`.
        vocabulary_size: int. Random replacements are drawn from
            `[0, vocabulary_size)`, the whole vocabulary as in the original.
        masked_lm_prob: float. Fraction of tokens to predict.
        max_predictions_per_seq: int. Most positions to predict.
        is_continuation: optional bool array `[vocabulary_size]` (see
            `continuation_flags`). When given, whole words are masked.

    Returns:
        `(masked_token_ids, positions, labels, weights)`: the corrupted
        sequences `[batch, seq_length]`; the masked positions, sorted, the
        original ids there and 1.0 weights, each `[batch,
        max_predictions_per_seq]` and 0-padded.
    """
    batch_size, seq_length = token_ids.shape
    columns = np.arange(seq_length)
    special = columns >= num_tokens[:, None]
    for special_token_id in special_token_ids:
        special |= token_ids == special_token_id
    # Python's `round` is half-to-even, as `np.round` is.
    counts = np.round(num_tokens * masked_lm_prob).astype(np.int64)
    counts = np.minimum(max_predictions_per_seq, np.maximum(1, counts))
    counts = np.minimum(counts, seq_length - special.sum(axis=1))
    if is_continuation is None:
        # The `counts` lowest of uniform scores: a uniform random subset.
        scores = rng.random((batch_size, seq_length))
        scores[special] = 2.0
        if max_predictions_per_seq < seq_length:
            # The max_predictions_per_seq lowest, then in order of score.
            lowest = np.argpartition(scores, max_predictions_per_seq - 1, axis=1)
            lowest = lowest[:, :max_predictions_per_seq]
            order = np.take_along_axis(scores, lowest, axis=1).argsort(axis=1)
            positions = np.take_along_axis(lowest, order, axis=1)
        else:
            positions = np.argsort(scores, axis=1)
        num_masked = counts
    else:
        positions, num_masked = _whole_word_rows(
            token_ids, num_tokens, counts, special, is_continuation, rng
        )
    width = max_predictions_per_seq
    padded_positions = np.zeros((batch_size, width), dtype=np.int64)
    padded_positions[:, : positions.shape[1]] = positions[:, :width]
    valid = np.arange(width) < num_masked[:, None]
    # Sort the chosen positions, padding last.
    padded_positions = np.sort(np.where(valid, padded_positions, seq_length), axis=1)
    padded_positions[~valid] = 0
    rows = np.broadcast_to(np.arange(batch_size)[:, None], valid.shape)
    labels = np.where(valid, token_ids[rows, padded_positions], 0)
    draws = rng.random((batch_size, width))
    random_ids = rng.integers(0, vocabulary_size, (batch_size, width))
    replacements = np.where(draws < 0.8, mask_token_id, labels)
    replacements = np.where(draws >= 0.9, random_ids, replacements)
    masked_token_ids = token_ids.copy()
    masked_token_ids[rows[valid], padded_positions[valid]] = replacements[valid]
    return masked_token_ids, padded_positions, labels, valid.astype(np.float32)
