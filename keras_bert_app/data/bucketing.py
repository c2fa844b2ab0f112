"""The sequence lengths a batch may be padded to: a small, fixed set.

Length-aware batching pads each batch to its longest example rounded up to
one of these lengths, so XLA (and an exported SavedModel) sees a handful of
shapes, never one per batch. The set is fixed and stated: the powers of two
from 8 and the halfway steps between them, 1.5 times each (8, 12, 16, 24,
32, 48, 64, 96, 128, 192, 256, 384, 512, 768, ...): each length is at most
1.5 times the one below, so a batch is never more than a third padding past
its longest example (384 is SQuAD's usual length; 12 and 8 fit a headline,
where HF pads to the exact longest).

A model that compiles nothing per shape (`models.xla.pads_to_exact_length`)
gains nothing from few shapes: there each batch is cut to its longest
example itself (`exact_lengths`), as HF's `DataCollatorWithPadding` does.
"""

import warnings

from keras_bert_app import errors
from keras_bert_app.data.length_grouping import (  # noqa: F401 (GROUP_BATCHES, group_batches: part of this API)
    GROUP_BATCHES, TARGET_BINS, budget_batches, example_lengths, group_batches, sort_by_length, sort_stratified,
)

SMALLEST_BUCKET = 8


def round_up(length):
    """The smallest bucket length that holds `length` tokens.

    >>> [round_up(n) for n in (1, 9, 13, 17, 100, 129, 300, 385)]
    [8, 12, 16, 24, 128, 192, 384, 512]
    """
    length = int(length)
    power = SMALLEST_BUCKET
    while True:
        for bucket in (power, power * 3 // 2):
            if length <= bucket:
                return bucket
        power *= 2


def bucket_lengths(sequence_length):
    """Every bucket length up to `sequence_length` rounded up, shortest first.

    >>> bucket_lengths(128)
    (8, 12, 16, 24, 32, 48, 64, 96, 128)
    >>> bucket_lengths(512)
    (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
    """
    errors.check_int("sequence_length", sequence_length, minimum=2)
    top = round_up(sequence_length)
    lengths = []
    bucket = SMALLEST_BUCKET
    while bucket <= top:
        lengths.append(bucket)
        bucket = round_up(bucket + 1)
    return tuple(lengths)


def batch_lengths(sequence_length):
    """The lengths a batch may be padded to with `sequence_length` as the longest.

    The bucket lengths below `sequence_length`, then `sequence_length`
    itself: a `sequence_length` that is not a bucket length stays the
    truncation length (as with fixed padding) and is the top bucket.

    >>> batch_lengths(128)
    (8, 12, 16, 24, 32, 48, 64, 96, 128)
    >>> batch_lengths(100)
    (8, 12, 16, 24, 32, 48, 64, 96, 100)
    """
    errors.check_int("sequence_length", sequence_length, minimum=2)
    return tuple(length for length in bucket_lengths(sequence_length) if length < sequence_length) + (
        int(sequence_length),
    )


def describe(sequence_length, bucketing=True, group_by_length=None, exact_lengths=False, stratified=False,
             regression=False):
    """One line for a run's log: how its batches are padded (and, for training, made: `group_by_length` not None).

    `stratified`: grouped per class (`length_grouping.sort_stratified`); per bin of the targets with `regression`.
    """
    if not bucketing:
        return f"Padding every batch to {sequence_length} tokens (no bucketing)."
    within = ""
    if stratified:
        within = f" within each of {TARGET_BINS} bins of the targets by rank" if regression else " within each class"
    batches = {
        None: "",
        True: ", training batches grouped by length" + within
        + " (--no-group-by-length: random)",
        False: ", training batches of random examples (--no-group-by-length), evaluation batches grouped by length",
    }[group_by_length]
    if exact_lengths:
        return (
            f"Padding each batch to its longest example, up to {sequence_length} tokens (the model runs op by op: "
            f"no compile per length, so no bucket lengths){batches} (--no-bucketing: all to {sequence_length})."
        )
    lengths = batch_lengths(sequence_length)
    line = (
        "Padding each batch to its longest example rounded up to "
        + ", ".join(str(length) for length in lengths[:-1])
        + (" or " if len(lengths) > 1 else "")
        + f"{lengths[-1]} tokens{batches} (--no-bucketing: all to {sequence_length})."
    )
    if lengths[-1] != round_up(sequence_length):
        line += (
            f" Note: sequence length {sequence_length} is not a bucket length "
            f"({', '.join(str(length) for length in bucket_lengths(sequence_length))}): "
            f"it stays the truncation length and the top bucket."
        )
    return line


def trim(batch, sequence_length, exact_lengths=False):
    """A batch cut to its longest example rounded up to a `batch_lengths` length.

    `batch` is `(inputs, *rest)` padded to `sequence_length`; every tensor of
    `inputs`, and of `rest` whose last axis is `sequence_length` (per-position
    labels and weights), loses the padding past that length. With
    `exact_lengths`, cut to the longest example itself (at least 1 position):
    for a model that compiles nothing per shape (`models.xla.pads_to_exact_length`).
    """
    import tensorflow as tf

    inputs = batch[0]
    longest = tf.reduce_max(example_lengths(inputs))
    if exact_lengths:
        length = tf.clip_by_value(longest, 1, sequence_length)
    else:
        lengths = batch_lengths(sequence_length)
        index = tf.minimum(tf.searchsorted(tf.constant(lengths, "int32"), longest[None])[0], len(lengths) - 1)
        length = tf.gather(tf.constant(lengths, "int32"), index)

    def cut(value):
        if value.shape.rank is not None and value.shape.rank >= 2 and value.shape[-1] == sequence_length:
            return value[..., :length]
        return value

    return (tf.nest.map_structure(cut, inputs), *(tf.nest.map_structure(cut, value) for value in batch[1:]))


def plain_map(dataset, function, **options):
    """`dataset.map(function)` without AutoGraph: these functions have no tensor-dependent Python control flow.

    AutoGraph would rewrite each small function of this module from its
    source, a noticeable part of a short fine-tuning run, for nothing.
    """
    import tensorflow as tf

    return dataset.map(tf.autograph.experimental.do_not_convert(function), **options)


def grouped_batches(dataset, num_examples, batch_size, sequence_length, shuffle=False, seed=None, bucketing=True,
                    group_by_length=True, exact_lengths=False, stratified=False, token_budget=None):
    """Batches of single examples, padded per batch to a bucket length and grouped by length.

    Without `bucketing`: the fixed padding of the original BERT, batches of
    `batch_size` each padded to `sequence_length`. With it (the default):
    each epoch the examples are shuffled, sorted by length within groups
    (`length_grouping`), cut into batches, and the batches shuffled; there
    are `ceil(num_examples / batch_size)` batches, as with fixed padding,
    each cut to its longest example rounded up to a length of
    `batch_lengths(sequence_length)`. Without `shuffle` (evaluation) the
    batches stay in order.

    Args:
        dataset: `tf.data.Dataset` of single examples `(inputs, *rest)`,
            `inputs` a dict with `padding_mask`, every per-position tensor
            padded to `sequence_length` on its last axis.
        num_examples: int. Examples in `dataset`.
        batch_size: int.
        sequence_length: int. The length the examples are padded to.
        shuffle: bool. Shuffle each epoch (training).
        seed: int or None. Shuffle seed.
        bucketing: bool. Pad per batch to a bucket length, grouped by length.
        group_by_length: bool. With `bucketing`: sort within groups as said
            above; False keeps the batches of a random order (each still cut
            to its longest example).
        exact_lengths: bool. With `bucketing`: cut each batch to its longest
            example itself, not rounded up to a bucket length (`trim`).
        stratified: bool. With `group_by_length` and `shuffle`: the first
            of `rest` is each example's label (a class id or a float
            target); sort each group per class
            (`length_grouping.sort_stratified`), so every batch holds the
            classes in their shares of the group.
        token_budget: int or None. Evaluation (no `shuffle`): batches of one
            bucket length each, as many examples as fit in `token_budget`
            tokens at that length (`budget_batches`), in number unknown ahead.

    Returns:
        `tf.data.Dataset` of batches `(inputs, *rest)` (of `inputs` when
        the elements of `dataset` are not tuples).
    """
    import tensorflow as tf

    if not bucketing:
        if shuffle:
            dataset = dataset.shuffle(num_examples, seed=seed, reshuffle_each_iteration=True)
        return _without_autotuning(dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE))
    single = not isinstance(dataset.element_spec, tuple)
    if single:
        dataset = plain_map(dataset, lambda inputs: (inputs,))
    num_batches = -(-num_examples // batch_size)
    if shuffle:
        dataset = dataset.shuffle(num_examples, seed=seed, reshuffle_each_iteration=True)
    if group_by_length:
        # Evaluation sorts 50 batches at a time (nothing to learn from its order); training as HF does.
        group = group_batches(num_examples, batch_size) if shuffle else GROUP_BATCHES
        sort = sort_stratified if stratified and shuffle else sort_by_length
        dataset = plain_map(dataset.batch(group * batch_size), sort).unbatch()
    budget = token_budget if token_budget and not shuffle else None
    dataset = budget_batches(dataset, budget, batch_lengths(sequence_length)) if budget else dataset.batch(batch_size)
    dataset = plain_map(dataset, lambda *batch: trim(batch, sequence_length, exact_lengths),
                        num_parallel_calls=tf.data.AUTOTUNE)
    if shuffle:
        batch_seed = None if seed is None else seed + 1
        dataset = dataset.shuffle(num_batches, seed=batch_seed, reshuffle_each_iteration=True)
    if single:
        dataset = plain_map(dataset, lambda inputs: inputs)
    if not budget:
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(num_batches))
    return _without_autotuning(dataset.prefetch(tf.data.AUTOTUNE))


def _without_autotuning(dataset):
    """`dataset` without tf.data's autotuning thread, which delays `fit`'s return when it drops its iterator.

    The teardown of an autotuned iterator waits for the tuning thread, which
    delays `fit`'s return by seconds; the steps left to tune here are cheap.
    """
    import tensorflow as tf

    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


def trace_predict_for_any_length(model, batch_spec, on_batch=False):
    """On TensorFlow, trace `model.predict`'s step once, for batches of any shape `batch_spec` allows.

    Keras traces `predict`'s step for the first batch's shape, then again,
    relaxed, at the next shape: two traces of the whole model. Traced first
    for the dataset's own spec (batch and length axes unknown), every batch
    uses one trace. Nothing to do on JAX, PyTorch, eagerly, with several
    steps per call, or under a distribution strategy.

    Args:
        model: a Keras model, built.
        batch_spec: the `element_spec` of the batched inputs `predict` will read.
        on_batch: bool. For `predict_on_batch` calls (which wrap the batch
            in a tuple) rather than `predict` on a dataset.
    """
    import keras
    import tensorflow as tf

    if not isinstance(model, keras.Model) or keras.config.backend() != "tensorflow":
        return
    if model.run_eagerly or model.steps_per_execution != 1:
        return
    if tf.distribute.has_strategy() or model.distribute_strategy is not tf.distribute.get_strategy():
        return
    model.make_predict_function()
    # The step takes a list of one batch: `[x]` from `predict`, `[(x,)]` from `predict_on_batch`.
    model.predict_function.get_concrete_function([(batch_spec,)] if on_batch else [batch_spec])


def predict_in_order(model, inputs, num_examples, batch_size, sequence_length, bucketing=True, per_position=False,
                     on_batch=None, *, exact_lengths):
    """`model.predict` on single examples, with length-grouped batches, in the input's order.

    Args:
        model: a Keras model.
        inputs: `tf.data.Dataset` of single examples' inputs (dicts), padded
            to `sequence_length`; of `(inputs, *rest)` (labels, weights)
            with `on_batch`.
        num_examples: int.
        batch_size: int.
        sequence_length: int.
        bucketing: bool. Without it: `model.predict` on fixed-length batches.
        per_position: bool. The outputs are per position (`[batch, seq, ...]`):
            they are padded back to `sequence_length` (with 0.0).
        on_batch: callable or None. Called as `on_batch(rest, outputs)` for
            each batch, with the batch's `rest` and the model's outputs on
            it as run (cut to the batch's length): what `evaluate` would
            score, from this one pass.
        exact_lengths: bool. Batches cut to their longest example itself
            rather than to a bucket length: for a model that compiles
            nothing per shape, which its caller tells
            (`models.xla.pads_to_exact_length(model)`).

    Returns:
        The model's outputs (an array or a dict of arrays), one row per
        example in `inputs`' order; per-position outputs `[examples, sequence_length, ...]`.
    """
    import numpy as np
    import tensorflow as tf

    if not bucketing and on_batch is None:
        return model.predict(inputs.batch(batch_size).prefetch(tf.data.AUTOTUNE), verbose=0)
    if on_batch is None:
        indexed = plain_map(inputs.enumerate(), lambda index, example: (example, index))
    else:
        indexed = plain_map(inputs.enumerate(), lambda index, example: (example[0], index, *example[1:]))
    # Where nothing compiles per shape, evaluation batches are sized by tokens (`budget_batches`).
    batches = grouped_batches(indexed, num_examples, batch_size, sequence_length, bucketing=bucketing,
                              exact_lengths=exact_lengths,
                              token_budget=batch_size * sequence_length if exact_lengths else None)
    if not per_position:
        # One `predict` over all batches, traced once for every length (see
        # `trace_predict_for_any_length`), where `predict_on_batch` traces
        # anew for the first few lengths it sees.
        inputs_only = plain_map(batches, lambda batch_inputs, index, *rest: batch_inputs)
        trace_predict_for_any_length(model, inputs_only.element_spec)
        with warnings.catch_warnings():
            # Batches by tokens come in a number unknown ahead: Keras says they "ran out" when they end.
            warnings.filterwarnings("ignore", message="Your input ran out of data")
            outputs = model.predict(inputs_only, verbose=0)
        order, start = [], 0
        for index, *rest in plain_map(batches, lambda batch_inputs, index, *rest: (index, *rest)).as_numpy_iterator():
            if on_batch is not None:
                on_batch(tuple(rest), tf.nest.map_structure(lambda value: value[start : start + len(index)], outputs))
            order.append(index)
            start += len(index)
        order = np.concatenate(order)
        return tf.nest.map_structure(lambda value: _in_order(np.asarray(value, "float32"), order), outputs)
    trace_predict_for_any_length(model, batches.element_spec[0], on_batch=True)
    results = None
    for batch_inputs, index, *rest in batches.as_numpy_iterator():
        outputs = model.predict_on_batch(batch_inputs)
        if on_batch is not None:
            on_batch(tuple(rest), outputs)
        named = outputs if isinstance(outputs, dict) else {None: outputs}
        if results is None:
            results = {
                name: np.zeros((num_examples, sequence_length, *np.shape(value)[2:]), "float32")
                for name, value in named.items()
            }
        for name, value in named.items():
            value = np.asarray(value, "float32")
            results[name][index, : value.shape[1]] = value
    return results[None] if None in results else results


def _in_order(values, order):
    """Rows `values[i]` of examples `order[i]`, put back in the examples' order."""
    import numpy as np

    ordered = np.empty_like(values)
    ordered[order] = values
    return ordered
