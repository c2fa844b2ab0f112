"""`packed_dataset`: tokenize and pack once, then shuffle and batch every epoch.

Creating a tf.data iterator instantiates the graphs of its `map` functions,
and the tokenizer + packer graph is large (thousands of nodes): seconds per
iterator, that is per epoch and per validation pass in `fit`. Packing before
an in-memory `cache()` pays it once: later epochs read the cached ids.
"""

PACK_BATCH_SIZE = 1024


def packed_examples(dataset, pack, num_examples):
    """The single examples of `dataset` `pack`ed once and cached in memory (unbatched).

    Args:
        dataset: `tf.data.Dataset` of single examples (strings and labels).
        pack: function of a batch of examples -> a batch of model inputs
            (and labels), e.g. running a `BertPreprocessor`.
        num_examples: int. Number of examples.
    """
    import tensorflow as tf

    dataset = dataset.batch(PACK_BATCH_SIZE).map(pack, num_parallel_calls=tf.data.AUTOTUNE)
    # `unbatch` hides the size; stating it lets `fit` know the epoch length
    # (no "ran out of data" warning) and fails loudly if it is wrong.
    return dataset.unbatch().apply(tf.data.experimental.assert_cardinality(num_examples)).cache()


def packed_dataset(dataset, pack, num_examples, batch_size, shuffle=False, seed=None):
    """Batches of `pack`ed examples.

    Args:
        dataset: `tf.data.Dataset` of single examples (strings and labels).
        pack: function of a batch of examples -> a batch of model inputs
            (and labels), e.g. running a `BertPreprocessor`.
        num_examples: int. Number of examples (the shuffle buffer holds all).
        batch_size: int.
        shuffle: bool. Shuffle the examples anew each epoch (training).
        seed: int or None. Shuffle seed.

    Returns:
        `tf.data.Dataset` of batches of `pack`'s outputs.
    """
    import tensorflow as tf

    dataset = packed_examples(dataset, pack, num_examples)
    if shuffle:
        dataset = dataset.shuffle(num_examples, seed=seed, reshuffle_each_iteration=True)
    return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)
