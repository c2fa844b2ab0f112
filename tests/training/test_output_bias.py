"""Output bias from the target frequencies: counting vs np.bincount, softmax(bias) = frequencies."""

import numpy as np
import pytest

from keras_bert_app.training.output_bias import count_masked_targets, unigram_output_bias


def _batches(seed=0, count=5, vocabulary=20):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        ids = rng.integers(0, vocabulary, (4, 3))
        weights = (rng.random((4, 3)) < 0.7).astype("float32")
        yield {}, {"mlm": ids, "nsp": np.zeros(4)}, {"mlm": weights}


def test_counts_only_real_targets_and_stops_at_the_limit():
    reference = np.zeros(20)
    for _, y, weights in _batches():
        reference += np.bincount(y["mlm"][weights["mlm"] > 0], minlength=20)
    np.testing.assert_array_equal(count_masked_targets(_batches(), 20), reference)
    first = next(_batches())
    limited = count_masked_targets(_batches(), 20, max_targets=1)  # stops after the first batch
    np.testing.assert_array_equal(limited, np.bincount(first[1]["mlm"][first[2]["mlm"] > 0], minlength=20))


def test_ids_outside_the_vocabulary_and_no_targets_are_clear_errors():
    with pytest.raises(ValueError, match=r"in \[0, 10\); got ids from 0 to 1[0-9]"):
        count_masked_targets(_batches(), 10)
    empty = [({}, {"mlm": np.ones((2, 3), "int64")}, {"mlm": np.zeros((2, 3))})]
    with pytest.raises(ValueError, match="No masked-LM target"):
        count_masked_targets(empty, 20)


def test_softmax_of_the_bias_is_the_smoothed_frequency():
    counts = np.array([50.0, 30.0, 15.0, 5.0, 0.0])
    bias = unigram_output_bias(counts, smoothing=0.5)
    assert bias.dtype == np.float32 and abs(bias.mean()) < 1e-6
    probabilities = np.exp(bias) / np.exp(bias).sum()
    np.testing.assert_allclose(probabilities, (counts + 0.5) / (counts + 0.5).sum(), rtol=1e-6)
