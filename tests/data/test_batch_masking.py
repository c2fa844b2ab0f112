"""Masking after batching (`data.batch_masking`) and ELECTRA's plain segments (`data.electra_segments`)."""

import numpy as np
import pytest

from keras_bert_app.data.batch_masking import masked_batches
from keras_bert_app.data.corpus import TokenizedCorpus
from keras_bert_app.data.electra_segments import electra_segments

CLS, SEP, MASK, VOCAB = 1, 2, 3, 50


def packed(num_sequences=40, length=24, seed=0):
    """Sequences `[CLS] ... [SEP] ... [SEP]` of random lengths, token ids >= 10."""
    rng = np.random.default_rng(seed)
    num_tokens = rng.integers(5, length + 1, num_sequences)
    token_ids = np.zeros((num_sequences, length), np.int32)
    for row, n in enumerate(num_tokens):
        token_ids[row, :n] = rng.integers(10, VOCAB, n)
        token_ids[row, [0, n // 2, n - 1]] = [CLS, SEP, SEP]
    return token_ids, (token_ids > 0).astype(np.int32) * (np.arange(length) > 3), num_tokens


def one_epoch(dataset):
    merged = {}
    for x, y, weights in dataset:
        for prefix, part in (("x", x), ("y", y), ("w", weights)):
            for name, value in part.items():
                merged.setdefault(f"{prefix}.{name}", []).append(np.asarray(value))
    return {name: np.concatenate(values) for name, values in merged.items()}


@pytest.mark.parametrize("corruption", [(0.8, 0.1), (0.85, 0.0)])
def test_masks_as_the_original_per_batch_and_anew_every_epoch(corruption):
    token_ids, segment_ids, num_tokens = packed()
    options = dict(max_predictions_per_seq=5, special_token_ids=(CLS, SEP), mask_token_id=MASK,
                   vocabulary_size=VOCAB, mask_probability=corruption[0], random_probability=corruption[1], seed=3)
    dataset = masked_batches(token_ids, segment_ids, num_tokens, 8, **options)
    first, second = one_epoch(dataset), one_epoch(dataset)
    # Every sequence once per epoch, in a new order each epoch; the inputs and their segments kept together.
    originals = {}
    for epoch in (first, second):
        restored = epoch["x.token_ids"].copy()
        positions, labels, weights = epoch["x.mask_positions"], epoch["y.mlm"], epoch["w.mlm"]
        for row in range(len(restored)):
            real = weights[row] > 0
            restored[row, positions[row, real]] = labels[row, real]
        order = [int(np.flatnonzero((token_ids == row).all(1))[0]) for row in restored]
        assert sorted(order) == list(range(len(token_ids)))
        np.testing.assert_array_equal(epoch["x.segment_ids"], segment_ids[order])
        lengths = epoch["x.padding_mask"].sum(1)
        np.testing.assert_array_equal(lengths, num_tokens[order])
        # How many: round(15% of the tokens), at least 1, at most 5; where: sorted, never [CLS]/[SEP]/padding.
        np.testing.assert_array_equal(weights.sum(1), np.minimum(5, np.maximum(1, np.round(lengths * 0.15))))
        for row in range(len(restored)):
            chosen = positions[row, weights[row] > 0]
            assert np.all(np.diff(chosen) > 0) and np.all(chosen < lengths[row])
            assert not np.isin(token_ids[order[row]][chosen], (CLS, SEP)).any()
        masked = epoch["x.token_ids"][np.arange(len(restored))[:, None], positions][weights > 0]
        kept = masked == labels[weights > 0]
        is_mask = masked == MASK
        assert np.all(is_mask | kept | (corruption[1] > 0)), "ELECTRA: [MASK] or the original, never a random token"
        assert 0.6 < is_mask.mean() < 0.97
        originals[len(originals)] = (order, positions)
    assert originals[0][0] != originals[1][0] and not np.array_equal(originals[0][1], originals[1][1])
    # The same seed replays the same epochs.
    replay = one_epoch(masked_batches(token_ids, segment_ids, num_tokens, 8, **options))
    for name in first:
        np.testing.assert_array_equal(first[name], replay[name])


def test_electra_segments_follow_the_reference_packing():
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 20, 300)  # 300 sentences, documents of 10; sentence i is made of token 10 + i
    token_ids = np.repeat(10 + np.arange(300), lengths).astype(np.int32)
    corpus = TokenizedCorpus(token_ids, np.concatenate([[0], np.cumsum(lengths)]), np.arange(0, 301, 10))
    ids, segments, num_tokens = electra_segments(corpus, 48, np.random.default_rng(1), CLS, SEP)
    assert ids.shape[1] == 48 and len(ids) == len(num_tokens) > 30
    one_segment, covered = 0, []
    for row, segment, n in zip(ids, segments, num_tokens):
        assert row[0] == CLS and row[n - 1] == SEP and not row[n:].any() and not segment[n:].any()
        separators = np.flatnonzero(row[:n] == SEP)
        assert len(separators) in (1, 2)
        one_segment += len(separators) == 1
        # Segment 0 up to the first [SEP], 1 after it; no pair label anywhere.
        assert not segment[: separators[0] + 1].any() and segment[separators[0] + 1 : n].all()
        # Consecutive sentences of one document, each segment in order (a short sentence that still fits
        # the first segment joins it after a longer one went to the second, as in the reference).
        sentences = row[(row >= 10)] - 10
        for part in (sentences[segment[row >= 10] == 0], sentences[segment[row >= 10] == 1]):
            assert np.all(np.diff(part) >= 0)
        assert len(set(sentences // 10)) == 1 and set(np.diff(np.unique(sentences))) <= {1}
        covered += np.unique(sentences).tolist()
    assert 0 < one_segment < len(ids)  # some one-segment examples (10% in the reference)
    # No sentence twice; the few missing ones were cut off by the length, as the reference cuts them.
    assert len(covered) == len(set(covered)) > 0.9 * 300
