"""`packed_examples`: tokenize and pack once; the batches of every epoch read the packed examples.

Creating a tf.data iterator instantiates the graphs of its `map` functions,
and the tokenizer + packer graph is large: seconds per iterator, that is per
epoch and per evaluation pass. So the examples are packed once, eagerly,
and the datasets read the packed arrays. Packed data larger than
`IN_MEMORY_BYTES` is packed inside tf.data instead, before an in-memory
`cache()`.
"""

PACK_BATCH_SIZE = 1024
IN_MEMORY_BYTES = 256 * 2**20


def packed_examples(dataset, pack, num_examples):
    """The single examples of `dataset` `pack`ed once, held in memory (unbatched).

    Args:
        dataset: `tf.data.Dataset` of single examples (strings and labels).
        pack: function of a batch of examples -> a batch of model inputs
            (and labels), e.g. running a `BertPreprocessor`.
        num_examples: int. Number of examples.
    """
    import tensorflow as tf

    batches = dataset.batch(PACK_BATCH_SIZE)
    packed = _pack_in_memory(batches, pack, num_examples)
    if packed is not None:
        return tf.data.Dataset.from_tensor_slices(packed)
    dataset = batches.map(pack, num_parallel_calls=tf.data.AUTOTUNE)
    # `unbatch` hides the size; stating it lets `fit` know the epoch length
    # (no "ran out of data" warning) and fails loudly if it is wrong.
    return dataset.unbatch().apply(tf.data.experimental.assert_cardinality(num_examples)).cache()


def _pack_in_memory(batches, pack, num_examples):
    """`pack` run eagerly on every batch, as NumPy arrays of all examples; None when they would not fit."""
    import numpy as np
    import tensorflow as tf

    parts = []
    for batch in batches:
        outputs = pack(*batch) if isinstance(batch, tuple) else pack(batch)
        parts.append(tf.nest.map_structure(np.asarray, outputs))
        if len(parts) == 1:
            values = tf.nest.flatten(parts[0])
            size = sum(value.nbytes for value in values) / max(len(values[0]), 1) * num_examples
            if size > IN_MEMORY_BYTES:
                return None
    if not parts:
        return None  # no examples: tf.data states the count mismatch
    packed = tf.nest.map_structure(lambda *values: np.concatenate(values), *parts)
    count = len(tf.nest.flatten(packed)[0])
    if count != num_examples:
        raise ValueError(f"packed {count} examples where {num_examples} were expected.")
    return packed
