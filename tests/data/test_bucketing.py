"""Length buckets: the stated set of lengths, batches padded to them and grouped by length, every
example once per epoch in a seeded order, predictions back in input order."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_app.data import bucketing

SEQUENCE_LENGTH = 128


def test_bucket_lengths_are_the_stated_set():
    assert [bucketing.round_up(n) for n in (0, 2, 8, 9, 12, 13, 17, 25, 33, 49, 64, 65, 97, 128, 129, 300, 384, 385,
                                            513, 769)] == [
        8, 8, 8, 12, 12, 16, 24, 32, 48, 64, 64, 96, 128, 128, 192, 384, 384, 512, 768, 1024,
    ]
    assert bucketing.bucket_lengths(128) == (8, 12, 16, 24, 32, 48, 64, 96, 128)
    assert bucketing.bucket_lengths(512) == (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
    # Each length at most 1.5x the one below: a batch is under a third padding past its longest example.
    lengths = bucketing.bucket_lengths(4096)
    assert all(longer <= 1.5 * shorter for shorter, longer in zip(lengths, lengths[1:]))
    assert all(bucketing.round_up(n) == min(length for length in lengths if length >= n) for n in range(1, 4097))
    # A sequence length off the set stays the truncation length and is the top bucket.
    assert bucketing.batch_lengths(128) == (8, 12, 16, 24, 32, 48, 64, 96, 128)
    assert bucketing.batch_lengths(100) == (8, 12, 16, 24, 32, 48, 64, 96, 100)
    assert bucketing.batch_lengths(6) == (6,)
    assert "not a bucket length" in bucketing.describe(100) and "not a bucket" not in bucketing.describe(384)
    assert bucketing.describe(100, bucketing=False) == "Padding every batch to 100 tokens (no bucketing)."


def _examples(num_examples, seed=0, longest=SEQUENCE_LENGTH):
    """Single examples whose tokens all carry their index + 1; lengths 2..longest; the index as label."""
    lengths = np.random.default_rng(seed).integers(2, longest + 1, num_examples)
    mask = (np.arange(SEQUENCE_LENGTH)[None] < lengths[:, None]).astype("int32")
    token_ids = mask * np.arange(1, num_examples + 1)[:, None]
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(mask), "padding_mask": mask}
    dataset = tf.data.Dataset.from_tensor_slices((inputs, np.arange(num_examples), mask.astype("float32")))
    return dataset, lengths


def _epoch(dataset):
    return [(inputs, index.numpy(), weights) for inputs, index, weights in dataset]


def test_batches_are_bucket_lengths_grouped_and_every_example_is_used_once_per_epoch():
    dataset, lengths = _examples(203)
    batches = bucketing.grouped_batches(dataset, 203, 16, SEQUENCE_LENGTH, shuffle=True, seed=3)
    assert batches.cardinality().numpy() == 13  # ceil(203 / 16), as with fixed padding
    orders = []
    for _ in range(2):
        epoch = _epoch(batches)
        order = np.concatenate([index for _, index, _ in epoch])
        assert sorted(order) == list(range(203))  # every example exactly once
        assert [len(index) for _, index, _ in epoch].count(16) == 12  # one partial batch
        for inputs, index, weights in epoch:
            width = inputs["token_ids"].shape[1]
            assert width in bucketing.bucket_lengths(SEQUENCE_LENGTH)
            assert width == bucketing.round_up(lengths[index].max())  # the longest, rounded up
            assert weights.shape[1] == width  # per-position tensors cut too
            # Nothing but padding was cut: each example keeps its tokens.
            np.testing.assert_array_equal(inputs["padding_mask"].numpy().sum(1), lengths[index])
            np.testing.assert_array_equal(inputs["token_ids"].numpy()[:, 0], index + 1)
        orders.append(order)
    assert not np.array_equal(orders[0], orders[1])  # reshuffled each epoch
    # Grouped: far less padding than a random order at the same batch size.
    padded = sum(inputs["token_ids"].shape.num_elements() for inputs, _, _ in epoch)
    assert padded < 0.8 * 203 * SEQUENCE_LENGTH  # uniform lengths: a random batch nearly always needs 128
    # Seeded: the same seed gives the same batches in a fresh pipeline; another seed does not.
    again = bucketing.grouped_batches(_examples(203)[0], 203, 16, SEQUENCE_LENGTH, shuffle=True, seed=3)
    np.testing.assert_array_equal(np.concatenate([index for _, index, _ in _epoch(again)]), orders[0])
    other = bucketing.grouped_batches(_examples(203)[0], 203, 16, SEQUENCE_LENGTH, shuffle=True, seed=4)
    assert not np.array_equal(np.concatenate([index for _, index, _ in _epoch(other)]), orders[0])


def test_exact_lengths_cut_each_batch_to_its_longest_example_itself():
    """For a model that compiles nothing per shape: HF's padding, the same batches and examples as bucketed."""
    dataset, lengths = _examples(203, longest=40)
    exact = _epoch(bucketing.grouped_batches(dataset, 203, 16, SEQUENCE_LENGTH, shuffle=True, seed=3,
                                             exact_lengths=True))
    bucketed = _epoch(bucketing.grouped_batches(_examples(203, longest=40)[0], 203, 16, SEQUENCE_LENGTH, shuffle=True,
                                                seed=3))
    widths = [inputs["token_ids"].shape[1] for inputs, _, _ in exact]
    assert set(widths) - set(bucketing.bucket_lengths(SEQUENCE_LENGTH))  # lengths off the buckets
    for (inputs, index, weights), (_, bucketed_index, _) in zip(exact, bucketed):
        np.testing.assert_array_equal(index, bucketed_index)
        assert inputs["token_ids"].shape[1] == weights.shape[1] == lengths[index].max()
        np.testing.assert_array_equal(inputs["padding_mask"].numpy().sum(1), lengths[index])
    assert sum(widths) < sum(bucketing.round_up(lengths[index].max()) for _, index, _ in exact)
    # An all-padding batch keeps one position; the top is the sequence length.
    empty = {"padding_mask": np.zeros((2, 50), "int32")}
    (batch,) = list(bucketing.grouped_batches(tf.data.Dataset.from_tensor_slices(empty), 2, 2, 50, exact_lengths=True))
    assert batch["padding_mask"].shape == (2, 1)
    assert "longest example, up to 128 tokens" in bucketing.describe(128, exact_lengths=True)


def test_without_bucketing_batches_are_the_fixed_padding_of_before():
    dataset, _ = _examples(20)
    fixed = _epoch(bucketing.grouped_batches(dataset, 20, 8, SEQUENCE_LENGTH, shuffle=True, seed=1, bucketing=False))
    before = _epoch(dataset.shuffle(20, seed=1, reshuffle_each_iteration=True).batch(8))
    assert [inputs["token_ids"].shape for inputs, _, _ in fixed] == [(8, 128), (8, 128), (4, 128)]
    for (inputs, index, _), (reference, reference_index, _) in zip(fixed, before):
        np.testing.assert_array_equal(index, reference_index)
        np.testing.assert_array_equal(inputs["token_ids"], reference["token_ids"])


def test_short_data_empty_texts_and_multiple_choice():
    # Fewer examples than a batch: one batch of all of them. Only [CLS] [SEP]: the smallest bucket.
    mask = np.zeros((3, SEQUENCE_LENGTH), "int32")
    mask[:, :2] = 1
    inputs = {"token_ids": mask * 7, "padding_mask": mask}
    (batch,) = list(bucketing.grouped_batches(tf.data.Dataset.from_tensor_slices(inputs), 3, 32, SEQUENCE_LENGTH))
    assert batch["token_ids"].shape == (3, 8)
    # Multiple choice [choices, seq]: the batch is as long as its longest choice.
    choices = np.zeros((2, 4, SEQUENCE_LENGTH), "int32")
    choices[0, 2, :40] = 1
    choices[1, :, :3] = 1
    dataset = tf.data.Dataset.from_tensor_slices(({"padding_mask": choices}, np.array([0, 1])))
    (batch, labels) = next(iter(bucketing.grouped_batches(dataset, 2, 2, SEQUENCE_LENGTH)))
    assert batch["padding_mask"].shape == (2, 4, 48) and labels.shape == (2,)
    # A sequence length off the set: its own length tops the buckets.
    long = {"padding_mask": np.ones((2, 100), "int32")}
    (batch,) = list(bucketing.grouped_batches(tf.data.Dataset.from_tensor_slices(long), 2, 2, 100))
    assert batch["padding_mask"].shape == (2, 100)


class _PerPosition:
    """A stand-in model: the logits are the token ids (per position) or their sum (per example)."""

    def __init__(self, per_position):
        self.per_position = per_position
        self.widths, self.lengths = [], []

    def predict_on_batch(self, inputs):
        token_ids = np.asarray(inputs["token_ids"], "float32")
        self.widths.append(token_ids.shape[1])
        self.lengths.append(np.asarray(inputs["padding_mask"]).sum(1))
        if self.per_position:
            return {"start_logits": token_ids, "end_logits": -token_ids}
        return token_ids.sum(1, keepdims=True)

    def predict(self, batches, verbose=0):
        """As `keras.Model.predict` on a dataset: every batch, outputs concatenated (per-example outputs only)."""
        return np.concatenate([self.predict_on_batch(inputs) for inputs in batches.as_numpy_iterator()])


@pytest.mark.parametrize("exact_lengths", [False, True])
@pytest.mark.parametrize("per_position", [False, True])
def test_predictions_come_back_in_input_order(per_position, exact_lengths):
    dataset, lengths = _examples(70, seed=5)
    inputs = dataset.map(lambda inputs, *rest: inputs)
    model = _PerPosition(per_position)
    outputs = bucketing.predict_in_order(model, inputs, 70, 8, SEQUENCE_LENGTH, per_position=per_position,
                                         exact_lengths=exact_lengths)
    token_ids = np.concatenate([batch["token_ids"].numpy() for batch in inputs.batch(70)])
    if per_position:
        assert outputs["start_logits"].shape == (70, SEQUENCE_LENGTH)
        np.testing.assert_array_equal(outputs["start_logits"], token_ids)  # padding positions: 0.0
        np.testing.assert_array_equal(outputs["end_logits"], -token_ids)
    else:
        np.testing.assert_array_equal(outputs[:, 0], token_ids.sum(1))
    assert sorted(np.concatenate(model.lengths)) == sorted(lengths)
    if exact_lengths:
        # Nothing compiles per shape: batches of one bucket length each, cut to their longest example, with as many
        # examples as fit in the tokens of one fixed-padding batch (8 x 128).
        by_bucket = {}
        for width, batch in zip(model.widths, model.lengths):
            assert width == batch.max() and len({bucketing.round_up(n) for n in batch}) == 1
            by_bucket.setdefault(bucketing.round_up(width), []).append(len(batch))
        for bucket, sizes in by_bucket.items():
            full = 8 * SEQUENCE_LENGTH // bucket
            assert max(sizes) <= full and sum(size < full for size in sizes) <= 1  # full, but the last of a length
        assert max(len(batch) for batch in model.lengths) > 8  # short ones: more than a batch_size of them
    else:
        assert len(model.widths) == 9
        assert set(model.widths) <= set(bucketing.bucket_lengths(SEQUENCE_LENGTH))
        assert sum(model.widths) < 9 * SEQUENCE_LENGTH * 0.8  # sorted by length: short batches


@pytest.mark.parametrize("per_position", [False, True])
def test_keras_predict_is_traced_once_for_every_bucket_length(per_position, recwarn):
    """A real Keras model on TensorFlow: one trace of `predict`'s step for all lengths, the same outputs."""
    import keras

    from keras_bert_app.models.xla import pads_to_exact_length

    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    padding_mask = keras.Input((None,), dtype="int32", name="padding_mask")
    embedded = keras.layers.Embedding(71, 4)(token_ids)  # ids 0-70
    mask = keras.ops.expand_dims(keras.ops.cast(padding_mask, "float32"), -1)
    if per_position:
        outputs = {"start_logits": keras.ops.squeeze(keras.layers.Dense(1)(embedded), -1)}
    else:
        outputs = keras.layers.Dense(3)(keras.ops.sum(embedded * mask, axis=1) / keras.ops.sum(mask, axis=1))
    model = keras.Model({"token_ids": token_ids, "padding_mask": padding_mask}, outputs)
    dataset, _ = _examples(70, seed=5)
    inputs = dataset.map(lambda inputs, *rest: {name: inputs[name] for name in ("token_ids", "padding_mask")})
    got = bucketing.predict_in_order(model, inputs, 70, 8, SEQUENCE_LENGTH, per_position=per_position,
                                     exact_lengths=pads_to_exact_length(model))
    whole = next(iter(inputs.batch(70)))
    assert len({int(n) for n in whole["padding_mask"].numpy().sum(1)}) > 3  # several bucket lengths
    expected = model(whole)
    if per_position:
        got, expected = got["start_logits"], np.where(whole["padding_mask"].numpy() > 0, expected["start_logits"], 0.0)
        got = np.where(whole["padding_mask"].numpy() > 0, got, 0.0)
    np.testing.assert_allclose(got, np.asarray(expected), atol=1e-6)
    assert model.predict_function.experimental_get_tracing_count() == 1  # Keras alone: 2
    # Batches by tokens (op by op here) come in a number unknown ahead, which Keras' predict would warn of.
    assert not [warning for warning in recwarn if "ran out of data" in str(warning.message)]


def test_training_batches_keep_the_random_composition_of_fixed_padding():
    # Fine-tuning's training batches (tasks.base: group_by_length=False): the batches of fixed padding's order,
    # each cut to its own longest example (length-grouped batches can hold one class each).
    dataset, lengths = _examples(203)
    fixed = bucketing.grouped_batches(dataset, 203, 16, SEQUENCE_LENGTH, shuffle=True, seed=3, bucketing=False)
    random = bucketing.grouped_batches(_examples(203)[0], 203, 16, SEQUENCE_LENGTH, shuffle=True, seed=3,
                                       group_by_length=False)
    fixed_batches = sorted(tuple(sorted(index)) for _, index, _ in _epoch(fixed))
    random_epoch = _epoch(random)
    assert sorted(tuple(sorted(index)) for _, index, _ in random_epoch) == fixed_batches
    for inputs, index, _ in random_epoch:
        assert inputs["token_ids"].shape[1] == bucketing.round_up(lengths[index].max())


def test_training_groups_sort_a_quarter_of_the_data_at_most_as_hf_group_by_length():
    # HF's `get_length_grouped_indices`: sort groups of min(n // (4 * batch), 50) batches, so every batch is drawn
    # from a random quarter of the data or less; evaluation sorts 50 batches at a time.
    assert [bucketing.group_batches(n, 16) for n in (10, 63, 64, 203, 3200, 10**6)] == [1, 1, 1, 3, 50, 50]
    dataset, lengths = _examples(203)
    batches = _epoch(bucketing.grouped_batches(dataset, 203, 16, SEQUENCE_LENGTH, shuffle=True, seed=3))
    # The same epoch by hand: the examples in the pipeline's seeded order, sorted within groups of 3 * 16, cut in 16s.
    order = np.concatenate([index for _, index, _ in _epoch(_examples(203)[0].shuffle(203, seed=3).batch(203))])
    expected = []
    for start in range(0, 203, 48):
        group = order[start:start + 48]
        group = group[np.argsort(-lengths[group], kind="stable")]
        expected += [tuple(group[i:i + 16]) for i in range(0, len(group), 16)]
    assert sorted(tuple(index) for _, index, _ in batches) == sorted(expected)
    assert [tuple(index) for _, index, _ in batches] != expected  # the batches themselves shuffled
    # A random quarter per group: the batches of one length are not all drawn from one sort of the whole set.
    spread = [lengths[index].max() - lengths[index].min() for _, index, _ in batches]
    everything = np.sort(lengths)[::-1]
    assert np.mean(spread) > np.mean([np.ptp(everything[i:i + 16]) for i in range(0, 203, 16)])


@pytest.mark.parametrize("targets", [False, True])
def test_training_groups_with_one_label_per_example_are_sorted_per_class(targets):
    # Where the length gives the label away, a length-sorted batch holds one class; sorted per class (the k-th
    # longest of a class's n at place (k + 0.5) / n), every batch holds the classes in their shares of its group.
    tf.random.set_seed(0)  # the shuffles' op seeds combine with the global one, which earlier tests may have set
    rng = np.random.default_rng(7)
    labels = rng.choice(3, 300, p=[0.5, 0.3, 0.2])
    lengths = np.clip(np.round(rng.normal(8 + 12 * labels, 3)), 2, SEQUENCE_LENGTH).astype(int)
    mask = (np.arange(SEQUENCE_LENGTH)[None] < lengths[:, None]).astype("int32")
    inputs = {"token_ids": mask * np.arange(1, 301)[:, None], "padding_mask": mask}
    # Regression targets: binned by rank within a group (5 bins), here in the classes' order.
    label_values = (labels + rng.uniform(0, 0.5, 300)).astype("float32") if targets else labels.astype("int32")
    dataset = tf.data.Dataset.from_tensor_slices((inputs, label_values))

    def epoch(**options):
        batches = bucketing.grouped_batches(dataset, 300, 15, SEQUENCE_LENGTH, shuffle=True, seed=4, **options)
        return [inputs["token_ids"].numpy().max(axis=1) - 1 for inputs, _ in batches]

    plain, stratified, random = epoch(), epoch(stratified=True), epoch(group_by_length=False)
    assert sorted(np.concatenate(stratified)) == list(range(300))  # every example once
    # Groups of 5 batches (300 // (4 * 15)) of the seeded shuffle's order, as plain grouping makes them.
    order = np.concatenate([x["token_ids"].numpy().max(axis=1) - 1 for x, _ in dataset.shuffle(300, seed=4).batch(75)])
    group_of = {index: start // 75 for start in range(0, 300, 75) for index in order[start:start + 75]}
    strata = labels.copy()
    if targets:  # the bin of each target's rank within its group
        for start in range(0, 300, 75):
            group = order[start:start + 75]
            strata[group] = np.argsort(np.argsort(label_values[group])) * 5 // len(group)
    for index in stratified:
        group = order[75 * group_of[index[0]]:][:75]
        assert {group_of[i] for i in index} == {group_of[index[0]]}
        counts, expected = np.bincount(strata[index], minlength=5), np.bincount(strata[group], minlength=5) / 5
        assert np.all(np.abs(counts - expected) < 2), (counts, expected)  # each class's share, to its rounding

    def lean(batches):  # the mean share of a batch's largest class
        return np.mean([np.bincount(labels[index]).max() / len(index) for index in batches])

    # (plain: 0.88-0.91 over TensorFlow's global seeds; random: ~0.5)
    assert lean(stratified) < 0.6 < 0.8 < lean(plain)
    # Within each class (or bin), a batch's examples are of similar lengths: far narrower than in random batches.
    def span(batches):
        return np.mean([np.ptp(lengths[index][strata[index] == c]) for index in batches for c in range(5)
                        if (strata[index] == c).sum() > 1])

    assert span(stratified) < span(random) / 2
