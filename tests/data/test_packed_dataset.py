"""packed_examples: packing runs once (cached), every epoch sees every example once."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_app.data import packed_dataset as packed
from keras_bert_app.data.packed_dataset import packed_examples


def packed_dataset(dataset, pack, num_examples, batch_size, shuffle=False, seed=None):
    """Batches of the packed examples, shuffled anew each epoch when asked, as the tasks' batches are made of them."""
    dataset = packed_examples(dataset, pack, num_examples)
    if shuffle:
        dataset = dataset.shuffle(num_examples, seed=seed, reshuffle_each_iteration=True)
    return dataset.batch(batch_size)


def _epochs(dataset, count):
    return [np.concatenate([batch.numpy() for batch in dataset]) for _ in range(count)]


def _noisy_pack(values):
    # Random per call: a second run of `pack` would change the outputs.
    return tf.cast(values, tf.float32) + tf.random.uniform(tf.shape(values), 0.0, 0.5)


def test_packing_runs_once_and_later_epochs_read_the_cache(where):
    dataset = packed_dataset(tf.data.Dataset.range(10), _noisy_pack, 10, batch_size=4)
    first, second = _epochs(dataset, 2)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(np.floor(first), np.arange(10))
    assert [len(batch) for batch in dataset] == [4, 4, 2]


def test_shuffled_epochs_hold_every_example_once_in_new_orders(where):
    dataset = packed_dataset(tf.data.Dataset.range(50), _noisy_pack, 50, batch_size=8, shuffle=True, seed=3)
    epochs = _epochs(dataset, 3)
    for epoch in epochs:
        np.testing.assert_array_equal(np.sort(np.floor(epoch)), np.arange(50))
        np.testing.assert_array_equal(np.sort(epoch), np.sort(epochs[0]))  # the cached values
    assert not np.array_equal(epochs[0], epochs[1])


@pytest.fixture(params=["in memory", "in tf.data"])
def where(request, monkeypatch):
    """Both ways of packing: eagerly into arrays (small data), inside tf.data before a cache (large data)."""
    if request.param == "in tf.data":
        monkeypatch.setattr(packed, "IN_MEMORY_BYTES", 0)
    return request.param


def test_epoch_length_is_known_to_fit_and_a_wrong_count_fails(where):
    dataset = packed_dataset(tf.data.Dataset.range(10), _noisy_pack, 10, batch_size=4, shuffle=True, seed=0)
    assert int(dataset.cardinality()) == 3  # fit sizes its epochs without running out of data
    if where == "in memory":
        with pytest.raises(ValueError, match="packed 10 examples where 12 were expected"):
            packed_dataset(tf.data.Dataset.range(10), _noisy_pack, 12, batch_size=4)
    else:
        wrong = packed_dataset(tf.data.Dataset.range(10), _noisy_pack, 12, batch_size=4)
        with pytest.raises(tf.errors.FailedPreconditionError):
            _epochs(wrong, 1)


def test_every_example_is_packed_in_order_either_way(where):
    calls = []

    def pack(values, labels):
        calls.append(1)
        return {"ids": values * 2}, labels

    source = tf.data.Dataset.from_tensor_slices((tf.range(2500), tf.range(2500) % 3))
    dataset = packed.packed_examples(source, pack, 2500)
    for _ in range(2):
        ids, labels = zip(*((x["ids"].numpy(), y.numpy()) for x, y in dataset))
        np.testing.assert_array_equal(ids, np.arange(2500) * 2)
        np.testing.assert_array_equal(labels, np.arange(2500) % 3)
    if where == "in memory":
        assert len(calls) == 3  # eager calls on 1,024 examples at a time, before any epoch
