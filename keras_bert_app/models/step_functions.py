"""Training and evaluation steps as one `tf.function` each, for TensorFlow models run op by op on a CPU.

Keras' TensorFlow trainer runs each step through two nested `tf.function`s:
an outer one that takes the `tf.data` iterator, reads a batch in the graph
and returns the step's outputs as an `Optional` (the frame that lets
`steps_per_execution` loop in the graph), and the step itself, called from
it. With one step per execution the outer function only reads the batch, yet
it costs its own trace, a second capture of every variable and a function
call to lower when the graph is first run. Measured on MiniLM-L6 fine-tuning
(1,600 BBC headlines, 2 CPU cores, op by op): tracing the training step took
1.88-1.92 s nested and 1.55-1.59 s as one function, and its first call
0.59-0.60 s against 0.52-0.62 s; the first step took 2.50-2.70 s nested and
2.13-2.17 s as one function (3 runs each, alternating, the same dev
accuracy to the last digit).

`one_level_step_function` gives the same step as one `tf.function` of the
batch. The batch is read from the iterator eagerly (the same
`IteratorGetNext`; `StopIteration` at the end, as Keras raises it), and the
function is traced once for the iterator's element spec (its unknown batch
size and lengths), as Keras' outer function is traced for the iterator, so
batches of every length run one trace. The step is the model's own
`train_step` or `test_step` under its distribution strategy's `run`, as in
Keras. Used by `BertTask.make_train_function` and `make_test_function` only
where a model runs op by op on a CPU (`models.xla.runs_op_by_op_on_cpu`: no
XLA, no `tf.distribute` strategy, no accelerator), with one step per
execution and not `run_eagerly`; everywhere else, and for any batch that is
not a structure of plain tensors (Keras' `Optional` inputs) or that does not
come from a `tf.data` iterator (`train_on_batch`), Keras' own function runs.
"""

import threading
import weakref

from keras_bert_app.models.xla import runs_op_by_op_on_cpu

# Per model: the traces to run while its first one-level step is instantiated, then their thread.
_BACKGROUND_TRACES = weakref.WeakKeyDictionary()


def uses_one_level_steps(model):
    """Whether `model`'s training and evaluation steps run as one `tf.function` each (see the module docstring)."""
    return runs_op_by_op_on_cpu(model) and not model.run_eagerly and model.steps_per_execution == 1


def one_level_step_function(model, step, keras_function):
    """The step function Keras' trainer calls with an iterator: `step` as one `tf.function` of each batch.

    Args:
        model: the `keras.Model` whose step it is.
        step: the model's bound `train_step` or `test_step`.
        keras_function: Keras' own function for the same step, which runs
            what this one does not take (see the module docstring).
    """
    import tensorflow as tf

    def one_step(data):
        return model.distribute_strategy.run(step, args=(data,))

    compiled = tf.function(one_step, reduce_retracing=True, autograph=False)
    traced_specs, keras_specs = [], []

    def function(iterator):
        if not isinstance(iterator, tf.data.Iterator) or iterator.element_spec in keras_specs:
            return keras_function(iterator)
        spec = iterator.element_spec
        if spec not in traced_specs:
            if not all(type(leaf) is tf.TensorSpec for leaf in tf.nest.flatten(spec)):
                keras_specs.append(spec)
                return keras_function(iterator)
            compiled.get_concrete_function(spec)  # one trace for every batch shape the iterator can give
            traced_specs.append(spec)
            _start_background_traces(model)  # while TensorFlow instantiates the trace, at its first run
        return compiled(next(iterator))

    function.compiled = compiled
    function.traced_specs = traced_specs
    return function


def trace_while_instantiating(model, trace):
    """Run `trace` in a thread while TensorFlow instantiates `model`'s first one-level step; False if it cannot.

    The first run of a traced step builds and optimises its graph in C++
    without Python's lock (0.4 s for MiniLM-L6's training step on 2 CPU
    cores), while the other core is idle. `trace` (Python that traces
    another function of the model: the evaluation that comes after
    training) runs then, in a thread. Measured on MiniLM-L6 fine-tuning on
    1,600 headlines (alternating, 10 pairs of runs): the dev pass took
    1.3-1.35 s instead of 1.8-2.0 s, the first step 0.1-0.3 s longer, the
    whole run 0.36-0.39 s less on the means (the same dev accuracy to the
    last digit). With Keras' nested step functions, whose first run held
    Python's lock, it did not pay (the first step grew by what the dev pass
    lost). Only for a model whose steps are one-level (`uses_one_level_steps`)
    and have not run: otherwise the caller traces when it needs to, as
    before. An error in `trace` is left for that trace to raise again where
    it is used; call `wait_for_background_traces` before using what it
    traces.
    """
    function = model.train_function  # Keras' own, or one-level and already traced: too late
    if not uses_one_level_steps(model) or (function is not None and getattr(function, "traced_specs", [None])):
        return False
    _BACKGROUND_TRACES.setdefault(model, []).append(trace)
    return True


def wait_for_background_traces(model):
    """Return once the traces `trace_while_instantiating` started for `model` have ended; drop any not started."""
    pending = _BACKGROUND_TRACES.pop(model, None)
    if isinstance(pending, threading.Thread):
        pending.join()


def _start_background_traces(model):
    traces = _BACKGROUND_TRACES.get(model)
    if not isinstance(traces, list):
        return

    def run():
        for trace in traces:
            try:
                trace()
            except Exception:  # noqa: BLE001 - traced again, and raised, where it is used
                pass

    thread = _BACKGROUND_TRACES[model] = threading.Thread(target=run, name="keras-bert-app-trace", daemon=True)
    thread.start()
