"""Pretraining TFRecords in the layout of the original BERT, and their reader.

Each record is a `tf.train.Example` with the features of the original
`create_pretraining_data.py` / `run_pretraining.py`:

    input_ids             int64 [max_seq_length]
    input_mask            int64 [max_seq_length]
    segment_ids           int64 [max_seq_length]
    masked_lm_positions   int64 [max_predictions_per_seq]
    masked_lm_ids         int64 [max_predictions_per_seq]
    masked_lm_weights     float [max_predictions_per_seq]
    next_sentence_labels  int64 [1]

Padding is 0 everywhere (`masked_lm_weights` 0.0 marks a padded
prediction). Full-sentence records omit `next_sentence_labels`. The pairing
that made the records is written beside them, in `pretraining_data.json`
(`records_pairing` reads it).
"""

import os

import numpy as np

RECORD_SUFFIX = ".tfrecord"
SUMMARY_FILE = "pretraining_data.json"
PAIR_LABEL_FEATURE = "next_sentence_labels"

INT64_FEATURES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
                  PAIR_LABEL_FEATURE)
FLOAT_FEATURES = ("masked_lm_weights",)

# Protocol-buffer wire format of `tf.train.Example`, written directly: it is
# several times faster than building `tf.train.Example` objects, and the
# tests check that TensorFlow parses it back to the same values.
_LENGTH_DELIMITED_FIELD_1 = b"\x0a"  # Example.features, Features.feature,
# map key, Int64List.value / FloatList.value (packed)
_MAP_VALUE = b"\x12"  # map entry value (field 2)
_FLOAT_LIST = b"\x12"  # Feature.float_list (field 2)
_INT64_LIST = b"\x1a"  # Feature.int64_list (field 3)


def _varint(value):
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _delimited(tag, payload):
    return tag + _varint(len(payload)) + payload


class _EntryPrefixes(dict):
    """Bytes before the packed values of one feature, by packed length."""

    def __init__(self, name, kind):
        super().__init__()
        self.key = _delimited(_LENGTH_DELIMITED_FIELD_1, name.encode())
        self.kind = kind

    def __missing__(self, packed_length):
        # entry = key + value(Feature(kind: List(packed))); only lengths
        # precede the packed bytes, so the prefix depends on its length only.
        placeholder = b"\x00" * packed_length
        values = _delimited(_LENGTH_DELIMITED_FIELD_1, placeholder)
        feature = _delimited(self.kind, values)
        entry = self.key + _delimited(_MAP_VALUE, feature)
        prefix = _delimited(_LENGTH_DELIMITED_FIELD_1, entry)[:-packed_length or None]
        self[packed_length] = prefix
        return prefix


_PREFIXES = {name: _EntryPrefixes(name, _INT64_LIST) for name in INT64_FEATURES}
_PREFIXES.update({name: _EntryPrefixes(name, _FLOAT_LIST) for name in FLOAT_FEATURES})


_MAX_TABLED_VARINT = 1 << 21  # ids and positions fit far below: 3 bytes
_VARINT_TABLE = {"bytes": np.zeros((0, 3), np.uint8), "sizes": np.zeros(0, np.int64)}


def _varint_table(max_value):
    """Varint bytes `[n, 3]` and sizes `[n]` of every value below `n > max_value`."""
    if len(_VARINT_TABLE["sizes"]) <= max_value:
        values = np.arange(max(max_value + 1, 1 << 15))
        sizes = 1 + (values >= 1 << 7) + (values >= 1 << 14)
        groups = (values[:, None] >> np.array([0, 7, 14])) & 0x7F
        more = np.arange(3) < sizes[:, None] - 1
        _VARINT_TABLE["bytes"] = (groups | more * 0x80).astype(np.uint8)
        _VARINT_TABLE["sizes"] = sizes
    return _VARINT_TABLE["bytes"], _VARINT_TABLE["sizes"]


def _packed_varint_rows(values):
    """Packed varints of each row of a non-negative int array `[rows, width]`."""
    values = np.asarray(values, dtype=np.int64).reshape(len(values), -1)
    if values.size and values.min() < 0:
        raise ValueError(f"Expected non-negative ids, got {values.min()}.")
    max_value = int(values.max(initial=0))
    if max_value >= _MAX_TABLED_VARINT:
        return [b"".join(map(_varint, row)) for row in values.tolist()]
    if max_value < 0x80:  # one byte per value
        data = values.astype(np.uint8).tobytes()
        width = values.shape[1]
        return [data[i : i + width] for i in range(0, len(data), width)]
    table, table_sizes = _varint_table(max_value)
    sizes = table_sizes[values]  # (rows, width)
    data = table[values][np.arange(3) < sizes[..., None]].tobytes()
    ends = np.cumsum(sizes.sum(axis=1)).tolist()
    return [data[start:end] for start, end in zip([0] + ends[:-1], ends)]


def serialize_features(features):
    """Serialized `tf.train.Example` bytes, one per row of the features.

    Args:
        features: dict of the original feature names (see the module
            docstring) to arrays `[num_instances, ...]`, such as
            `InstanceMaker.document_instances` returns.

    Returns:
        list of bytes, one record per instance.
    """
    columns = []
    for name in INT64_FEATURES:
        if name == PAIR_LABEL_FEATURE and name not in features:
            continue  # full sentences: no pair label
        packed = _packed_varint_rows(features[name])
        prefixes = _PREFIXES[name]
        columns.append([prefixes[len(row)] + row for row in packed])
    for name in FLOAT_FEATURES:
        values = np.asarray(features[name], dtype="<f4")
        values = values.reshape(len(values), -1)
        prefix = _PREFIXES[name][values.shape[1] * 4]
        columns.append([prefix + row.tobytes() for row in values])
    return [_delimited(_LENGTH_DELIMITED_FIELD_1, b"".join(entries)) for entries in zip(*columns)]


def write_records_atomically(path, records):
    """Write serialized records to a TFRecord file that appears only when whole.

    The records go to a hidden temporary file beside `path` (not matching
    `*.tfrecord`), which is renamed to `path` once closed; a run killed
    midway leaves no file that looks complete.
    """
    import tensorflow as tf

    directory, name = os.path.split(path)
    temporary = os.path.join(directory, f".{name}.incomplete-{os.getpid()}")
    try:
        with tf.io.TFRecordWriter(temporary) as writer:
            for record in records:
                writer.write(record)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def parse_features(max_seq_length, max_predictions_per_seq, pair_labels=True):
    """The `tf.io.parse_single_example` spec of the original features (without the label: `pair_labels=False`)."""
    import tensorflow as tf

    def fixed(length, dtype=tf.int64):
        return tf.io.FixedLenFeature([length], dtype)

    spec = {
        "input_ids": fixed(max_seq_length),
        "input_mask": fixed(max_seq_length),
        "segment_ids": fixed(max_seq_length),
        "masked_lm_positions": fixed(max_predictions_per_seq),
        "masked_lm_ids": fixed(max_predictions_per_seq),
        "masked_lm_weights": fixed(max_predictions_per_seq, tf.float32),
    }
    if pair_labels:
        spec[PAIR_LABEL_FEATURE] = fixed(1)
    return spec


def features_to_model_inputs(features):
    """Original features (batched) -> `(x, y, sample_weight)` with int32 ids.

    Args:
        features: dict of the original feature names to batched tensors
            (`next_sentence_labels` `[batch]` or `[batch, 1]`; without it,
            full sentences, `y` has no `nsp`).
    """
    import tensorflow as tf

    def ids(name):
        return tf.cast(features[name], tf.int32)

    x = {
        "token_ids": ids("input_ids"),
        "segment_ids": ids("segment_ids"),
        "padding_mask": ids("input_mask"),
        "mask_positions": ids("masked_lm_positions"),
    }
    y = {"mlm": ids("masked_lm_ids")}
    if PAIR_LABEL_FEATURE in features:
        y["nsp"] = tf.reshape(ids(PAIR_LABEL_FEATURE), [-1])
    sample_weight = {"mlm": tf.cast(features["masked_lm_weights"], tf.float32)}
    return x, y, sample_weight


def pretraining_dataset(file_pattern, batch_size, max_seq_length=128, max_predictions_per_seq=20, shuffle=True,
                        seed=None, repeat=False, drop_remainder=False, shuffle_buffer_size=10000, input_context=None,
                        num_shards=None, shard_index=None, pair_labels=True):
    """Batches for `BertPretrainer` from pretraining TFRecords.

    Args:
        file_pattern: str or list of str. TFRecord files or globs (local or
            any `tf.io.gfile` file system, such as `gs://`).
        batch_size: int. The global batch size; with `input_context` each
            input pipeline gets its per-replica share.
        max_seq_length: int. Sequence length the records were written with.
        max_predictions_per_seq: int. Predictions per sequence in the records.
        shuffle: bool. Shuffle file order and records.
        seed: optional int. Seed of the shuffles.
        repeat: bool. Repeat forever (for step-based training).
        drop_remainder: bool. Drop a last partial batch (needed on TPU).
        shuffle_buffer_size: int. Records in the shuffle buffer.
        input_context: optional `tf.distribute.InputContext`; its
            `num_input_pipelines` / `input_pipeline_id` shard the input.
        num_shards: optional int. Shard the input this many ways (without
            `input_context`).
        shard_index: optional int. Which shard to read, in `[0, num_shards)`.
        pair_labels: bool. The records hold `next_sentence_labels` (False
            for full-sentence records: then `y` has no `nsp`).

    Returns:
        A `tf.data.Dataset` of `(x, y, sample_weight)`: `x` has `token_ids`,
        `segment_ids`, `padding_mask` `[batch, max_seq_length]` and
        `mask_positions` `[batch, max_predictions_per_seq]` (int32); `y` has
        `mlm` `[batch, max_predictions_per_seq]` and `nsp` `[batch]` (int32);
        `sample_weight` has `mlm` `[batch, max_predictions_per_seq]` (float32).
    """
    import tensorflow as tf

    patterns = [file_pattern] if isinstance(file_pattern, str) else file_pattern
    files = sorted({path for p in patterns for path in tf.io.gfile.glob(str(p))})
    if not files:
        raise FileNotFoundError(f"No TFRecord file matches {patterns}.")
    if input_context is not None:
        num_shards = input_context.num_input_pipelines
        shard_index = input_context.input_pipeline_id
        batch_size = input_context.get_per_replica_batch_size(batch_size)
    elif (num_shards is None) != (shard_index is None):
        raise ValueError("Pass both num_shards and shard_index or neither, got "
                         f"num_shards={num_shards}, shard_index={shard_index}.")
    if num_shards is not None and not 0 <= shard_index < num_shards:
        raise ValueError(f"shard_index must be in [0, {num_shards}), got {shard_index}.")

    dataset = tf.data.Dataset.from_tensor_slices(files)
    shard_by_file = num_shards is not None and len(files) >= num_shards
    if shard_by_file:
        dataset = dataset.shard(num_shards, shard_index)
    if shuffle:
        dataset = dataset.shuffle(len(files), seed=seed)
    # Without shuffling, files are read one after the other, in name order.
    dataset = dataset.interleave(
        tf.data.TFRecordDataset,
        cycle_length=min(len(files), 8) if shuffle else 1,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,  # a resumed run must see the same record order
    )
    if num_shards is not None and not shard_by_file:
        dataset = dataset.shard(num_shards, shard_index)
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer_size, seed=seed)
    if repeat:
        dataset = dataset.repeat()
    spec = parse_features(max_seq_length, max_predictions_per_seq, pair_labels)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    dataset = dataset.map(
        lambda records: features_to_model_inputs(tf.io.parse_example(records, spec)),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


def existing_records(directory):
    """The `*.tfrecord` files already in a directory, sorted."""
    if not os.path.isdir(directory):
        return []
    return sorted(name for name in os.listdir(directory) if name.endswith(RECORD_SUFFIX))


def shard_name(index, num_shards):
    return f"pretraining-{index:05d}-of-{num_shards:05d}{RECORD_SUFFIX}"


def shard_boundaries(num_records, num_shards):
    """Start offsets of contiguous shards of near-equal size, then the end."""
    return np.linspace(0, num_records, num_shards + 1).round().astype(np.int64)


def records_pairing(files, pair_labels=True):
    """The pairing that made some records, and where that was read.

    Args:
        files: list of str. Record files (local or `tf.io.gfile` paths).
        pair_labels: bool. Whether the records hold `next_sentence_labels`.

    Returns:
        `(pairing, source)`: the `pairing` of the `pretraining_data.json`
        beside the files (all must agree); without one, `full_sentences`
        for records without a pair label and `nsp` otherwise (the original
        layout: Google's script writes next-sentence pairs); `source` names
        the file read, or says the pairing was inferred.

    Raises:
        ValueError: the files' summaries name different pairings.
    """
    import json

    import tensorflow as tf

    found = {}
    for directory in sorted({os.path.dirname(str(path)) for path in files}):
        summary = os.path.join(directory, SUMMARY_FILE)
        if tf.io.gfile.exists(summary):
            with tf.io.gfile.GFile(summary) as stream:
                found[summary] = json.load(stream).get("pairing", "nsp")  # written before pairings: nsp
    if len(set(found.values())) > 1:
        raise ValueError(f"The records were made with different pairings: {found}.")
    if found:
        summary, pairing = next(iter(found.items()))
        return pairing, summary
    inferred = "nsp" if pair_labels else "full_sentences"
    label = "with" if pair_labels else "without"
    return inferred, f"no {SUMMARY_FILE} beside the records, which are {label} next_sentence_labels"
