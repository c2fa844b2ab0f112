"""TFRecords in the original layout: our hand-written wire format against
TensorFlow's parser and protobuf classes, atomic shards, and the reader."""

import numpy as np
import pytest

from keras_bert_app.data.pretraining_records import parse_features
from keras_bert_app.data.pretraining_records import pretraining_dataset
from keras_bert_app.data.pretraining_records import serialize_features
from keras_bert_app.data.pretraining_records import write_records_atomically

SEQ, PRED = 16, 4


def random_features(rng, num_instances=50, max_id=30522):
    num_tokens = rng.integers(5, SEQ + 1, num_instances)
    num_masked = rng.integers(1, PRED + 1, num_instances)
    columns = np.arange(SEQ)
    input_mask = (columns < num_tokens[:, None]).astype(np.int32)
    weights = (np.arange(PRED) < num_masked[:, None]).astype(np.float32)
    return {
        "input_ids": (rng.integers(0, max_id, (num_instances, SEQ)) * input_mask).astype(np.int32),
        "input_mask": input_mask,
        "segment_ids": (rng.integers(0, 2, (num_instances, SEQ)) * input_mask).astype(np.int32),
        "masked_lm_positions": (rng.integers(1, SEQ, (num_instances, PRED)) * weights).astype(np.int64),
        "masked_lm_ids": (rng.integers(0, max_id, (num_instances, PRED)) * weights).astype(np.int64),
        "masked_lm_weights": weights,
        "next_sentence_labels": rng.integers(0, 2, num_instances).astype(np.int64),
    }


@pytest.mark.parametrize("max_id", [100, 30522, 2**31 - 1])
def test_wire_format_matches_tensorflow(max_id):
    import tensorflow as tf

    features = random_features(np.random.default_rng(max_id), max_id=max_id)
    records = serialize_features(features)
    assert len(records) == 50
    for row, record in enumerate(records):
        example = tf.train.Example.FromString(record)
        # Exactly the original features, nothing else.
        assert sorted(example.features.feature) == sorted(features)
        for name, values in features.items():
            feature = example.features.feature[name]
            got = feature.float_list.value if name == "masked_lm_weights" else feature.int64_list.value
            assert list(got) == np.atleast_1d(values[row]).tolist(), name
    parsed = tf.io.parse_example(tf.constant(records), parse_features(SEQ, PRED))
    for name, values in features.items():
        np.testing.assert_array_equal(parsed[name].numpy().reshape(values.shape), values)


def write_shards(directory, features, num_shards):
    records = serialize_features(features)
    bounds = np.linspace(0, len(records), num_shards + 1).astype(int)
    for shard in range(num_shards):
        write_records_atomically(
            str(directory / f"s{shard}.tfrecord"), records[bounds[shard] : bounds[shard + 1]]
        )


def test_atomic_write_leaves_nothing_when_interrupted(tmp_path):
    def failing_records():
        yield b"first"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_records_atomically(str(tmp_path / "x.tfrecord"), failing_records())
    assert list(tmp_path.iterdir()) == []


def test_reader_batches_for_the_pretrainer(tmp_path):
    features = random_features(np.random.default_rng(0), num_instances=37)
    write_shards(tmp_path, features, 3)
    dataset = pretraining_dataset(
        str(tmp_path / "*.tfrecord"), batch_size=8, max_seq_length=SEQ,
        max_predictions_per_seq=PRED, shuffle=False,
    )
    batches = list(dataset)
    assert [len(b[1]["nsp"]) for b in batches] == [8, 8, 8, 8, 5]
    x, y, sample_weight = batches[0]
    assert sorted(x) == ["mask_positions", "padding_mask", "segment_ids", "token_ids"]
    assert sorted(y) == ["mlm", "nsp"] and sorted(sample_weight) == ["mlm"]
    assert x["token_ids"].dtype.name == "int32" and y["nsp"].shape == (8,)
    assert sample_weight["mlm"].dtype.name == "float32"
    token_ids = np.concatenate([b[0]["token_ids"].numpy() for b in batches])
    np.testing.assert_array_equal(token_ids, features["input_ids"])
    nsp = np.concatenate([b[1]["nsp"].numpy() for b in batches])
    np.testing.assert_array_equal(nsp, features["next_sentence_labels"])


@pytest.mark.parametrize("num_files", [1, 4])
def test_reader_shards_are_disjoint_and_complete(tmp_path, num_files):
    import tensorflow as tf

    features = random_features(np.random.default_rng(1), num_instances=40)
    write_shards(tmp_path, features, num_files)
    pattern = str(tmp_path / "*.tfrecord")
    seen = []
    for index in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=index, num_replicas_in_sync=2)
        dataset = pretraining_dataset(pattern, 8, SEQ, PRED, shuffle=True, seed=3, input_context=context)
        batches = list(dataset)
        assert all(len(b[1]["nsp"]) <= 4 for b in batches)  # per-replica batch
        seen.append(np.concatenate([b[0]["token_ids"].numpy() for b in batches]))
    by_index = list(pretraining_dataset(pattern, 8, SEQ, PRED, shuffle=False, num_shards=2, shard_index=1))
    assert sum(len(b[1]["nsp"]) for b in by_index) == len(seen[1])
    rows = sorted(map(tuple, np.concatenate(seen).tolist()))
    assert rows == sorted(map(tuple, features["input_ids"].tolist()))


def test_reader_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="No TFRecord file"):
        pretraining_dataset(str(tmp_path / "*.tfrecord"), 8)
    (tmp_path / "a.tfrecord").write_bytes(b"")
    with pytest.raises(ValueError, match="shard_index"):
        pretraining_dataset(str(tmp_path / "*.tfrecord"), 8, num_shards=2)
