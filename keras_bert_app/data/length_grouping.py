"""Training batches of similar lengths: the order of a group of examples.

Length grouping (HF `group_by_length`'s rule): each epoch the examples are
shuffled, sorted by length within groups of `group_batches` batches, cut
into batches, and the batches shuffled (`bucketing.grouped_batches`), so a
batch of short examples runs short.

Sorted by length alone, a batch leans to one class where the length tells
the label (positive reviews run longer), and a short run learns little from
such batches. So where each example has one label the group is sorted per
class (`sort_stratified`): each batch holds every class in its share of the
group, each class by its own lengths from the same quantile. Evaluation
batches are sized by tokens instead (`budget_batches`). TensorFlow ops only,
for tf.data.
"""

# Length grouping sorts the examples of at most this many batches at a time.
GROUP_BATCHES = 50

# Regression targets are stratified by their quantile within a group: this many bins.
TARGET_BINS = 5


def group_batches(num_examples, batch_size):
    """How many batches' examples length grouping sorts at a time: HF `group_by_length`'s rule.

    At most `GROUP_BATCHES`, and at most a quarter of the epoch's batches
    (at least 1): each batch is made of examples of similar lengths drawn
    from a random quarter (or less) of the data, never from one sort of it
    all.

    >>> group_batches(1600, 32), group_batches(100_000, 32), group_batches(100, 32)
    (12, 50, 1)
    """
    return max(1, min(num_examples // (4 * batch_size), GROUP_BATCHES))


def example_lengths(inputs):
    """Real tokens of each example of a batch of inputs: int32 [batch].

    The longest of its choices for multiple-choice inputs `[batch, choices, seq]`.
    """
    import tensorflow as tf

    mask = tf.cast(inputs["padding_mask"], "int32")
    tokens = tf.reduce_sum(mask, axis=-1)  # (batch,) or (batch, choices)
    return tf.reduce_max(tf.reshape(tokens, [tf.shape(mask)[0], -1]), axis=1)


def sort_by_length(*group):
    """A group of examples `(inputs, *rest)` (a batch of them) in order of their lengths, longest first."""
    import tensorflow as tf

    order = tf.argsort(example_lengths(group[0]), direction="DESCENDING", stable=True)
    return tf.nest.map_structure(lambda value: tf.gather(value, order), group)


def sort_stratified(*group):
    """A group `(inputs, label, *rest)` ordered by each example's length quantile within its class.

    The k-th longest (from 0) of a class's n examples sits at (k + 0.5) / n;
    ties keep the order of length. `label` is one per example: integer
    class ids (or choice ids), or float targets, binned by their rank in
    the group into `TARGET_BINS` bins.
    """
    import tensorflow as tf

    label = group[1]
    order = tf.argsort(example_lengths(group[0]), direction="DESCENDING", stable=True)
    if label.dtype.is_floating:
        rank = tf.argsort(tf.argsort(label, stable=True), stable=True)
        classes = rank * TARGET_BINS // tf.size(label)
    else:
        classes = tf.cast(label, "int32")
    _, class_index, counts = tf.unique_with_counts(tf.gather(classes, order))
    members = tf.one_hot(class_index, tf.size(counts), dtype="int32")
    # How many of the same class come before each example in length order: its rank within its class.
    rank_in_class = tf.reduce_sum(tf.cumsum(members, axis=0, exclusive=True) * members, axis=1)
    place = (tf.cast(rank_in_class, "float64") + 0.5) / tf.cast(tf.gather(counts, class_index), "float64")
    order = tf.gather(order, tf.argsort(place, stable=True))
    return tf.nest.map_structure(lambda value: tf.gather(value, order), group)


def budget_batches(dataset, token_budget, lengths):
    """Batches of single examples `(inputs, *rest)`, each of one bucket length and at most `token_budget` tokens.

    An example goes to the batch of its length rounded up to one of
    `lengths` (ascending; the bucket lengths), L, which is given out when it
    holds `token_budget // L` examples (at the end of the data: as it is).
    For evaluation: a budget of one fixed-padding batch (`batch_size *
    sequence_length`) bounds each batch's activations and attention by that
    batch's, and short text gets fewer, larger batches.
    Their number is known only by reading them (Keras' `predict` warns
    that such data "ran out" at its end).
    """
    import tensorflow as tf

    sizes = [max(1, token_budget // int(length)) for length in lengths]
    lengths = tf.constant(lengths, "int32")

    def bucket(inputs, *rest):  # of a batch of examples
        return tf.cast(tf.minimum(tf.searchsorted(lengths, example_lengths(inputs)), len(sizes) - 1), "int64")

    size = tf.autograph.experimental.do_not_convert(lambda key: tf.gather(tf.constant(sizes, "int64"), key))
    return dataset.group_by_window(
        tf.autograph.experimental.do_not_convert(
            lambda *example: bucket(*tf.nest.map_structure(lambda value: value[None], example))[0]
        ),
        tf.autograph.experimental.do_not_convert(lambda key, window: window.batch(size(key))),
        window_size_func=size,
    )
