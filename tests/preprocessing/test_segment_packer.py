import random

import pytest
import tensorflow as tf

from keras_bert_app.preprocessing.segment_packer import SegmentPacker

CLS, SEP, PAD = 101, 102, 0


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """google-research/bert `_truncate_seq_pair`, verbatim in behaviour."""
    while True:
        total_length = len(tokens_a) + len(tokens_b)
        if total_length <= max_length:
            break
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def original_layout(tokens_a, tokens_b, max_seq_length):
    """The original `convert_single_example` packing (run_classifier.py)."""
    tokens_a, tokens_b = list(tokens_a), list(tokens_b) if tokens_b else None
    if tokens_b:
        truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    elif len(tokens_a) > max_seq_length - 2:
        tokens_a = tokens_a[: max_seq_length - 2]
    tokens = [CLS] + tokens_a + [SEP]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += tokens_b + [SEP]
        segment_ids += [1] * (len(tokens_b) + 1)
    input_mask = [1] * len(tokens)
    padding = max_seq_length - len(tokens)
    return tokens + [PAD] * padding, segment_ids + [0] * padding, input_mask + [0] * padding


def pack(packer, a, b=None):
    segments = (tf.ragged.constant([a], tf.int32),)
    if b is not None:
        segments += (tf.ragged.constant([b], tf.int32),)
    out = packer(segments)
    return (
        out["token_ids"].numpy()[0].tolist(),
        out["segment_ids"].numpy()[0].tolist(),
        out["padding_mask"].numpy()[0].astype(int).tolist(),
    )


@pytest.fixture
def packer():
    return SegmentPacker(8, start_value=CLS, end_value=SEP, pad_value=PAD)


def test_single_segment(packer):
    assert pack(packer, [7, 8]) == (
        [CLS, 7, 8, SEP, PAD, PAD, PAD, PAD], [0] * 8, [1, 1, 1, 1, 0, 0, 0, 0]
    )


def test_pair(packer):
    assert pack(packer, [7, 8], [4]) == (
        [CLS, 7, 8, SEP, 4, SEP, PAD, PAD], [0, 0, 0, 0, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 0, 0]
    )


def test_truncates_the_longer_segment_first(packer):
    # Budget 5: A (6 tokens) is cut to 4 before B (2) is touched... then to 3.
    assert pack(packer, [1, 2, 3, 4, 5, 6], [7, 8]) == (
        [CLS, 1, 2, 3, SEP, 7, 8, SEP], [0, 0, 0, 0, 0, 1, 1, 1], [1] * 8
    )
    assert pack(packer, [1], [2, 3, 4, 5, 6, 7]) == (
        [CLS, 1, SEP, 2, 3, 4, 5, SEP], [0, 0, 0, 1, 1, 1, 1, 1], [1] * 8
    )
    # Equal lengths: the second loses the tie, so A keeps ceil(5 / 2).
    assert pack(packer, [1, 2, 3, 4], [5, 6, 7, 8]) == (
        [CLS, 1, 2, 3, SEP, 5, 6, SEP], [0, 0, 0, 0, 0, 1, 1, 1], [1] * 8
    )


def test_single_segment_truncation(packer):
    assert pack(packer, list(range(1, 20)))[0] == [CLS, 1, 2, 3, 4, 5, 6, SEP]


def test_empty_second_segment_is_left_out(packer):
    # The original packs `if tokens_b:` only: no second [SEP], no segment 1.
    assert pack(packer, [7, 8], []) == pack(packer, [7, 8])
    assert pack(packer, list(range(1, 20)), [])[0] == [CLS, 1, 2, 3, 4, 5, 6, SEP]


def test_exact_fit(packer):
    assert pack(packer, [1, 2, 3], [4, 5]) == (
        [CLS, 1, 2, 3, SEP, 4, 5, SEP], [0, 0, 0, 0, 0, 1, 1, 1], [1] * 8
    )
    assert pack(packer, [1, 2, 3, 4, 5, 6]) == ([CLS, 1, 2, 3, 4, 5, 6, SEP], [0] * 8, [1] * 8)


def test_matches_the_original_on_random_pairs():
    rng = random.Random(0)
    for sequence_length in (3, 4, 5, 9, 16):
        packer = SegmentPacker(sequence_length, CLS, SEP, PAD, truncate="longest_first")
        cases = [
            ([rng.randrange(1000, 2000) for _ in range(rng.randrange(1, 20))],
             [rng.randrange(2000, 3000) for _ in range(rng.randrange(0, 20))])
            for _ in range(40)
        ]
        out = packer((tf.ragged.constant([a for a, _ in cases], tf.int32),
                      tf.ragged.constant([b for _, b in cases], tf.int32)))
        for i, (a, b) in enumerate(cases):
            expected = original_layout(a, b, sequence_length)
            got = (out["token_ids"][i].numpy().tolist(), out["segment_ids"][i].numpy().tolist(),
                   out["padding_mask"][i].numpy().astype(int).tolist())
            assert got == expected, (a, b, sequence_length)


def test_waterfall_fills_the_first_segment_first():
    packer = SegmentPacker(8, CLS, SEP, PAD, truncate="waterfall")
    assert pack(packer, [1, 2, 3, 4], [5, 6, 7, 8])[0] == [CLS, 1, 2, 3, 4, SEP, 5, SEP]


def test_unbatched_dense_and_outputs():
    packer = SegmentPacker(6, CLS, SEP, PAD)
    out = packer((tf.constant([7, 8]), tf.constant([9])))
    assert out["token_ids"].numpy().tolist() == [CLS, 7, 8, SEP, 9, SEP]
    assert out["padding_mask"].dtype == tf.bool and out["segment_ids"].dtype == tf.int32
    batch = packer(tf.constant([[1, 2], [3, 4]]))
    assert batch["token_ids"].shape == (2, 6)


def test_bad_arguments():
    with pytest.raises(ValueError, match="sequence_length"):
        SegmentPacker(2, CLS, SEP, PAD)
    with pytest.raises(ValueError, match="truncate"):
        SegmentPacker(8, CLS, SEP, PAD, truncate="middle")
    with pytest.raises(ValueError, match="1 or 2 segments"):
        SegmentPacker(8, CLS, SEP, PAD)((tf.constant([1]),) * 3)
    config = SegmentPacker(8, CLS, SEP, PAD).get_config()
    assert SegmentPacker.from_config(config).get_config() == config
