"""Unit masking (`mask_units_batch`): whole words and n-grams of them, the
80/10/10 drawn once per unit, on synthetic word boundaries; n-gram lengths
against ALBERT's p(n) proportional to 1/n."""

import numpy as np

from keras_bert_app.data.masking import _unit_positions
from keras_bert_app.data.masking import mask_units_batch
from keras_bert_app.data.masking import ngram_probabilities

CLS, SEP, MASK = 1, 2, 3
VOCABULARY_SIZE = 5000


def packed_batch(rng, batch_size=600, seq_length=64):
    """[CLS] A [SEP] B [SEP] rows of random tokens, and random word starts (words of 1-4 tokens)."""
    num_tokens = rng.integers(8, seq_length + 1, batch_size)
    token_ids = np.zeros((batch_size, seq_length), dtype=np.int32)
    for row, length in enumerate(num_tokens):
        token_ids[row, :length] = rng.integers(10, VOCABULARY_SIZE, length)
        token_ids[row, [0, int(rng.integers(2, length - 2)), length - 1]] = [CLS, SEP, SEP]
    word_starts = rng.random(token_ids.shape) < 0.45
    return token_ids, num_tokens, word_starts


def units_of(row_tokens, row_starts, length):
    """Word spans [start, end) of a row: a word starts at a flag or after a special token."""
    spans, start = [], None
    for position in range(length + 1):
        special = position == length or row_tokens[position] in (CLS, SEP)
        if start is not None and (special or row_starts[position]):
            spans.append((start, position))
            start = None
        if not special and start is None:
            start = position
    return spans


def test_whole_words_only_and_one_decision_per_word():
    rng = np.random.default_rng(0)
    token_ids, num_tokens, word_starts = packed_batch(rng)
    masked, positions, labels, weights = mask_units_batch(
        token_ids, num_tokens, word_starts, rng, (CLS, SEP), MASK, VOCABULARY_SIZE, 0.15, 12
    )
    decisions = {"mask": 0, "keep": 0, "random": 0}
    for row in range(len(token_ids)):
        count = int(weights[row].sum())
        expected = min(12, max(1, round(int(num_tokens[row]) * 0.15)))
        assert count <= expected and (weights[row, :count] == 1).all() and (weights[row, count:] == 0).all()
        chosen = positions[row, :count]
        assert (np.diff(chosen) > 0).all()
        assert (labels[row, :count] == token_ids[row, chosen]).all()
        chosen = set(chosen.tolist())
        for start, end in units_of(token_ids[row], word_starts[row], int(num_tokens[row])):
            inside = chosen & set(range(start, end))
            assert len(inside) in (0, end - start), (row, start, end, chosen)
            if inside:
                new, old = masked[row, start:end], token_ids[row, start:end]
                kind = "mask" if (new == MASK).all() else "keep" if (new == old).all() else "random"
                if kind == "random":
                    assert ((new != old) & (new != MASK)).mean() > 0.9
                decisions[kind] += 1
    total = sum(decisions.values())
    assert total > 2000
    for kind, expected in (("mask", 0.8), ("keep", 0.1), ("random", 0.1)):
        assert abs(decisions[kind] / total - expected) < 0.02, decisions


def test_ngrams_are_runs_of_whole_words_within_a_segment():
    rng = np.random.default_rng(1)
    token_ids, num_tokens, word_starts = packed_batch(rng)
    masked, positions, _, weights = mask_units_batch(
        token_ids, num_tokens, word_starts, rng, (CLS, SEP), MASK, VOCABULARY_SIZE, 0.15, 12, max_ngram=3
    )
    for row in range(len(token_ids)):
        chosen = set(positions[row, : int(weights[row].sum())].tolist())
        for start, end in units_of(token_ids[row], word_starts[row], int(num_tokens[row])):
            assert len(chosen & set(range(start, end))) in (0, end - start)
        assert not {int(p) for p in np.flatnonzero(np.isin(token_ids[row], (CLS, SEP)))} & chosen


def test_ngram_lengths_follow_one_over_n():
    rng = np.random.default_rng(0)
    candidates = np.arange(1, 1001)
    lengths = []
    for _ in range(3000):
        # The first unit drawn is never shortened (12 positions of room).
        is_start = rng.random(1000) < 0.6
        positions, units = _unit_positions(candidates, is_start, 12, 3, rng)
        first = np.array(positions)[np.array(units) == 0]
        lengths.append(int(is_start[first - 1].sum()) + (not is_start[first[0] - 1]))
    fractions = np.bincount(lengths, minlength=4)[1:] / len(lengths)
    np.testing.assert_allclose(fractions, ngram_probabilities(3), atol=0.025)
    np.testing.assert_allclose(ngram_probabilities(3), [6 / 11, 3 / 11, 2 / 11])
    np.testing.assert_allclose(ngram_probabilities(1), [1.0])


def test_ngram_masking_without_a_segmenter_keeps_wordpiece_words_whole():
    from keras_bert_app.data.corpus import TokenizedCorpus
    from keras_bert_app.data.pretraining_instances import InstanceMaker

    vocabulary = ["[PAD]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(50)] + [f"##p{i}" for i in range(50)]
    rng = np.random.default_rng(3)
    token_ids = rng.integers(4, len(vocabulary), 4000).astype(np.int32)
    corpus = TokenizedCorpus(token_ids, np.arange(0, 4001, 20), np.arange(0, 201, 10))
    maker = InstanceMaker(vocabulary, max_seq_length=64, max_predictions_per_seq=10, masking="ngram", seed=1)
    is_piece = np.array([token.startswith("##") for token in vocabulary])
    for document in range(corpus.num_documents):
        features, _ = maker.document_instances(corpus, document, 0)
        for row in range(len(features["input_ids"])):
            original = features["input_ids"][row].copy()
            count = int(features["masked_lm_weights"][row].sum())
            chosen = features["masked_lm_positions"][row, :count]
            original[chosen] = features["masked_lm_ids"][row, :count]
            masked = np.zeros(len(original), bool)
            masked[chosen] = True
            # A ## piece is masked exactly when the token before it is (unless that is [CLS]/[SEP]).
            pieces = np.flatnonzero(is_piece[original])
            pieces = pieces[~np.isin(original[pieces - 1], (1, 2))]
            np.testing.assert_array_equal(masked[pieces], masked[pieces - 1])
