"""ELECTRA's masking: the same positions, 85% `[MASK]`, 15% kept, no random tokens."""

import numpy as np
import pytest

from keras_bert_app.data.electra_masking import electra_masking

MASK_ID = 4


def _batches(count=40, batch=16, seq=32, predictions=5, seed=0):
    """BERT-corrupted batches (80/10/10 at the positions) with their labels and weights."""
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    originals = rng.integers(10, 1000, size=(count, batch, seq)).astype("int32")
    positions = np.zeros((count, batch, predictions), "int32")
    weights = np.zeros((count, batch, predictions), "float32")
    for b in range(count):
        for row in range(batch):
            real = int(rng.integers(1, predictions + 1))
            positions[b, row, :real] = np.sort(rng.choice(np.arange(1, seq), real, replace=False))
            weights[b, row, :real] = 1
    labels = np.where(weights > 0, np.take_along_axis(originals, positions, axis=2), 0).astype("int32")
    corrupted = originals.copy()
    for b in range(count):
        for row in range(batch):
            for slot in np.flatnonzero(weights[b, row]):
                corrupted[b, row, positions[b, row, slot]] = rng.choice([MASK_ID, 7, labels[b, row, slot]])
    x = {"token_ids": corrupted, "segment_ids": np.zeros_like(corrupted), "padding_mask": np.ones_like(corrupted),
         "mask_positions": positions}
    dataset = tf.data.Dataset.from_tensor_slices((x, {"mlm": labels}, {"mlm": weights}))
    return dataset, originals, positions, weights


def test_positions_get_mask_or_their_original_token_only():
    dataset, originals, positions, weights = _batches()
    masked = electra_masking(dataset, MASK_ID, seed=1)
    mask_count = total = 0
    for b, (x, y, sample_weight) in enumerate(masked):
        tokens = x["token_ids"].numpy()
        expected_outside = originals[b].copy()
        for row in range(tokens.shape[0]):
            for slot in np.flatnonzero(weights[b, row]):
                position = positions[b, row, slot]
                assert tokens[row, position] in (MASK_ID, originals[b, row, position])
                mask_count += tokens[row, position] == MASK_ID
                total += 1
                expected_outside[row, position] = tokens[row, position]
        np.testing.assert_array_equal(tokens, expected_outside)  # nothing else changed
        np.testing.assert_array_equal(x["mask_positions"].numpy(), positions[b])
        np.testing.assert_array_equal(sample_weight["mlm"].numpy(), weights[b])
    assert total > 1000
    assert abs(mask_count / total - 0.85) < 0.03


def test_draws_repeat_for_the_same_seed_and_differ_for_another():
    dataset, *_ = _batches(count=3)

    def tokens(seed):
        return np.stack([x["token_ids"].numpy() for x, _, _ in electra_masking(dataset, MASK_ID, seed=seed)])

    np.testing.assert_array_equal(tokens(5), tokens(5))
    assert not np.array_equal(tokens(5), tokens(6))


def test_bert_proportions_are_an_option():
    dataset, originals, positions, weights = _batches(count=20)
    masked = electra_masking(dataset, MASK_ID, mask_probability=0.8, random_probability=0.1, vocabulary_size=1000, seed=2)
    kinds = np.zeros(3)
    for b, (x, _, _) in enumerate(masked):
        tokens = x["token_ids"].numpy()
        for row, slot in zip(*np.nonzero(weights[b])):
            token, original = tokens[row, positions[b, row, slot]], originals[b, row, positions[b, row, slot]]
            kinds[0 if token == MASK_ID else 2 if token == original else 1] += 1
    np.testing.assert_allclose(kinds / kinds.sum(), [0.8, 0.1, 0.1], atol=0.04)
    with pytest.raises(ValueError, match="vocabulary_size"):
        electra_masking(dataset, MASK_ID, random_probability=0.1)
    with pytest.raises(ValueError, match="at most 1"):
        electra_masking(dataset, MASK_ID, mask_probability=0.95, random_probability=0.1, vocabulary_size=10)
