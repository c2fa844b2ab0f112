"""Workarounds of named upstream bugs: each with its issue, the versions it was checked on, and a test.

Only here may the package read a private name of Keras or TensorFlow. Each
entry:

- names the upstream issue and the versions it was checked with
  (`WORKAROUNDS`); on a version it does not know it warns once, naming
  itself, so a changed private name never changes numbers silently;
- touches only our own models (a mixin of `BertTask`), never a class or a
  module of Keras or TensorFlow for the whole process;
- has a test in `tests/test_compat.py` that runs the stock upstream code and
  fails once upstream fixes the bug, so the entry can be deleted then.
"""

import collections
import warnings

import keras

# name: the upstream issues, and every Keras minor version the entry was checked with (its test in
# tests/test_compat.py run there: 3.15 by CI's newest job, 3.11 by its floor job; the `large`
# multi-worker one by hand, `python tools/run_tests.py --backends tensorflow -m large tests/test_compat.py`).
Workaround = collections.namedtuple("Workaround", ["name", "issues", "keras_versions"])
WORKAROUNDS = {
    "build_from_element_spec": Workaround(
        "build_from_element_spec",
        ("https://github.com/keras-team/keras/issues/20585",),
        ("3.11", "3.15"),
    ),
    "multi_worker_scalar_logs": Workaround(
        "multi_worker_scalar_logs",
        ("https://github.com/keras-team/keras/issues/20329", "https://github.com/tensorflow/tensorflow/issues/72388"),
        ("3.11", "3.15"),
    ),
    "dict_output_names": Workaround(
        "dict_output_names",
        ("https://github.com/keras-team/keras/issues/21675", "https://github.com/keras-team/keras/pull/21694"),
        ("3.11", "3.15"),
    ),
}
_WARNED = set()


def check_version(name):
    """Warn once if this Keras is not a version entry `name` was checked with; True if it is."""
    entry = WORKAROUNDS[name]
    minor = ".".join(keras.__version__.split(".")[:2])
    if minor in entry.keras_versions:
        return True
    if name not in _WARNED:
        _WARNED.add(name)
        warnings.warn(
            f"keras_bert_app.compat: the workaround {name!r} ({', '.join(entry.issues)}) was checked with Keras "
            f"{', '.join(entry.keras_versions)}; this is Keras {keras.__version__}. It still applies, but check "
            "tests/test_compat.py: if upstream fixed the bug, the entry should go.",
            stacklevel=3,
        )
    return False


class DistributionWorkarounds:
    """Mixin of our models (`BertTask`): Keras' TensorFlow trainer under a `tf.distribute` strategy, fixed for them.

    build_from_element_spec (keras-team/keras#20585): before `fit` or
    `evaluate` under a strategy, Keras 3.15 builds the model from the
    replicas' first batches averaged with `strategy.reduce("MEAN", batch)`.
    That fails on a boolean `padding_mask` ("Value for attr 'T' of bool is
    not in the list of allowed values", from an `AddN`) and, under
    MultiWorkerMirroredStrategy, on any dict of per-replica values; and
    reading that batch starts an iteration of the dataset, so a training set
    reshuffled each iteration comes in another order than without the
    strategy. The build needs only shapes and dtypes: they come from the
    dataset's element spec (a dataset distributed already gives its first
    replica's batch).

    multi_worker_scalar_logs (keras-team/keras#20329,
    tensorflow/tensorflow#72388): under MultiWorkerMirroredStrategy Keras
    averages each step's logs with `strategy.reduce("MEAN", v, axis=0)`,
    which fails for scalars ("Invalid reduction dimension 0"). Our steps
    return each log with one axis there, which that reduce averages to the
    same scalar.
    """

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        if self._distribute_strategy is None:
            return
        check_version("build_from_element_spec")
        import tensorflow as tf

        if iterator is not None:
            data_batch = iterator.data_adapter.get_tf_dataset().element_spec
            if not all(isinstance(spec, tf.TensorSpec) for spec in tf.nest.flatten(data_batch)):
                strategy = self.distribute_strategy
                for _, _, batches in iterator:
                    data_batch = tf.nest.map_structure(
                        lambda value: strategy.experimental_local_results(value)[0], next(batches)
                    )
                    break
        with self.distribute_strategy.scope():
            self._symbolic_build(data_batch=data_batch)

    def train_step(self, *args):  # TensorFlow's and PyTorch's take the batch; JAX's the state and the batch
        return self._logs_for_multi_worker(super().train_step(*args))

    def test_step(self, *args):
        return self._logs_for_multi_worker(super().test_step(*args))

    def _logs_for_multi_worker(self, logs):
        if keras.config.backend() != "tensorflow":
            return logs
        import tensorflow as tf

        strategy = tf.distribute.get_strategy()
        if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or strategy.cluster_resolver is None:
            return logs
        if not strategy.cluster_resolver.cluster_spec().as_dict():
            return logs  # one worker: Keras reduces over local replicas only
        check_version("multi_worker_scalar_logs")
        return {name: tf.reshape(value, [1]) if value.shape.rank == 0 else value for name, value in logs.items()}


class DictOutputNames:
    """Mixin of our models (`BertTask`): a model with a dict of outputs names its outputs by the dict's keys.

    dict_output_names (keras-team/keras#21675, fixed by #21694): a
    functional model's `output_names` are the names of the layers its
    outputs come from ("masked_lm_head", "unstack"), and Keras 3.11's
    `compile` checks a dict of `metrics` or `weighted_metrics` against them
    ("key 'nsp' does not correspond to any model output"), so the keys of
    the outputs dict ("mlm", "nsp"; "start_logits", "end_logits") cannot be
    used. Later Keras takes the sorted keys of the outputs dict whenever
    `output_names` do not match them, which is what this sets: its order is
    that of the flattened outputs (`keras.tree.flatten` sorts a dict's keys),
    and the layers keep their names, so weight files load as before. Its
    test fails once the Keras floor (pyproject.toml) has the fix: delete it
    then.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        outputs = kwargs.get("outputs", args[1] if len(args) > 1 else None)
        if isinstance(outputs, dict) and list(self.output_names) != sorted(outputs):
            check_version("dict_output_names")
            self.output_names = sorted(outputs)
