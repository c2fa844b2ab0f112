"""Masking: counts, candidates, 80/10/10 and whole words, against the
original's formulas computed here in plain Python."""

import numpy as np

from keras_bert_app.data.masking import continuation_flags
from keras_bert_app.data.masking import mask_batch

CLS, SEP, MASK = 1, 2, 3
VOCABULARY_SIZE = 1000


def packed_batch(rng, batch_size=400, seq_length=64):
    num_tokens = rng.integers(5, seq_length + 1, batch_size)
    token_ids = np.zeros((batch_size, seq_length), dtype=np.int32)
    for row, length in enumerate(num_tokens):
        split = int(rng.integers(2, length - 2))
        token_ids[row, :length] = rng.integers(10, VOCABULARY_SIZE, length)
        token_ids[row, [0]] = CLS
        token_ids[row, [split, length - 1]] = SEP
    return token_ids, num_tokens


def expected_count(num_tokens, prob, max_predictions):
    return min(max_predictions, max(1, int(round(num_tokens * prob))))


def test_counts_positions_and_labels():
    rng = np.random.default_rng(0)
    token_ids, num_tokens = packed_batch(rng)
    masked, positions, labels, weights = mask_batch(
        token_ids, num_tokens, rng, (CLS, SEP), MASK, VOCABULARY_SIZE, 0.15, 7
    )
    assert masked.shape == token_ids.shape
    assert positions.shape == labels.shape == weights.shape == (len(token_ids), 7)
    for row in range(len(token_ids)):
        count = expected_count(int(num_tokens[row]), 0.15, 7)
        assert weights[row].tolist() == [1.0] * count + [0.0] * (7 - count)
        chosen = positions[row, :count]
        assert (np.diff(chosen) > 0).all()
        assert (chosen < num_tokens[row]).all()
        assert not np.isin(token_ids[row, chosen], (CLS, SEP)).any()
        assert (positions[row, count:] == 0).all() and (labels[row, count:] == 0).all()
        assert (labels[row, :count] == token_ids[row, chosen]).all()
        untouched = np.ones(token_ids.shape[1], bool)
        untouched[chosen] = False
        assert (masked[row, untouched] == token_ids[row, untouched]).all()


def test_replacement_split_80_10_10():
    rng = np.random.default_rng(1)
    token_ids, num_tokens = packed_batch(rng, batch_size=3000)
    masked, positions, labels, weights = mask_batch(
        token_ids, num_tokens, rng, (CLS, SEP), MASK, VOCABULARY_SIZE, 0.15, 20
    )
    valid = weights > 0
    rows = np.broadcast_to(np.arange(len(token_ids))[:, None], positions.shape)
    replaced = masked[rows[valid], positions[valid]]
    originals = labels[valid]
    is_mask = replaced == MASK
    is_kept = ~is_mask & (replaced == originals)
    is_random = ~is_mask & ~is_kept
    assert abs(is_mask.mean() - 0.8) < 0.02
    assert abs(is_kept.mean() - 0.1 - 0.1 / VOCABULARY_SIZE) < 0.02
    assert abs(is_random.mean() - 0.1) < 0.02
    # Random replacements come from the whole vocabulary, uniformly.
    assert replaced[is_random].min() < 100 and replaced[is_random].max() > 900


def test_masked_prob_above_candidates_masks_all_candidates():
    token_ids = np.array([[CLS, 11, SEP, 12, SEP, 0]], dtype=np.int32)
    masked, positions, _, weights = mask_batch(
        token_ids, np.array([5]), np.random.default_rng(0), (CLS, SEP), MASK, VOCABULARY_SIZE, 0.9, 5
    )
    assert positions[0, : int(weights.sum())].tolist() == [1, 3]


def test_whole_word_masking_never_splits_a_word():
    vocabulary = ["[PAD]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(40)] + [f"##p{i}" for i in range(40)]
    is_continuation = continuation_flags(vocabulary)
    assert is_continuation.sum() == 40 and not is_continuation[:44].any()
    rng = np.random.default_rng(2)
    token_ids, num_tokens = packed_batch(rng, batch_size=500)
    token_ids = np.where(token_ids >= 10, 4 + token_ids % 80, token_ids).astype(np.int32)
    masked, positions, labels, weights = mask_batch(
        token_ids, num_tokens, rng, (CLS, SEP), MASK, len(vocabulary), 0.15, 20, is_continuation
    )
    total_masked = 0
    for row in range(len(token_ids)):
        count = int(weights[row].sum())
        total_masked += count
        assert count <= expected_count(int(num_tokens[row]), 0.15, 20)
        chosen = set(positions[row, :count].tolist())
        # Words: a non-## token (or a token after a special) and its ## pieces.
        length = int(num_tokens[row])
        word = []
        for position in range(length + 1):
            token = token_ids[row, position] if position < length else CLS
            special = token in (CLS, SEP)
            if word and (special or not is_continuation[token] or word[-1] != position - 1):
                assert len(chosen & set(word)) in (0, len(word)), (row, word, chosen)
                word = []
            if not special:
                word.append(position)
    assert total_masked > 0.8 * sum(expected_count(int(n), 0.15, 20) for n in num_tokens)
