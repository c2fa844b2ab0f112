"""`models.step_functions`: a TensorFlow model run op by op on a CPU trains and evaluates through one
`tf.function` per step, traced once for batches of every length, and trains exactly as Keras' own nested
functions do; everywhere else (XLA, several steps per execution, eager runs, JAX, PyTorch) Keras' own."""

import keras
import numpy as np
import pytest

from keras_bert_app.models import step_functions
from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_encoder import BertEncoder

tensorflow_only = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="TensorFlow's trainer")


def _classifier(jit_compile=False, **compile_arguments):
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(vocabulary_size=60, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
                          max_sequence_length=16, dropout=0.1)
    classifier = BertClassifier(encoder, num_classes=3, dropout=0.1)
    classifier.compile(learning_rate=1e-3, total_steps=12, jit_compile=jit_compile, **compile_arguments)
    return classifier


def _dataset(num_examples=14, batch_size=4):
    """Batches of several lengths (each padded to its longest), the last one short; a known number of them."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 16, num_examples)
    examples = [({"token_ids": rng.integers(1, 60, n).astype("int32"), "segment_ids": np.zeros(n, "int32"),
                  "padding_mask": np.ones(n, "int32")}, np.int32(i % 3)) for i, n in enumerate(lengths)]
    spec = ({name: tf.TensorSpec([None], tf.int32) for name in ("token_ids", "segment_ids", "padding_mask")},
            tf.TensorSpec([], tf.int32))
    dataset = tf.data.Dataset.from_generator(lambda: iter(examples), output_signature=spec)
    return dataset.apply(tf.data.experimental.assert_cardinality(num_examples)).padded_batch(batch_size)


def _fit_and_evaluate(classifier, dataset):
    history = classifier.fit(dataset, epochs=2, verbose=0)
    return history.history["loss"], classifier.evaluate(dataset, verbose=0), classifier.get_weights()


@tensorflow_only
def test_one_trace_for_every_length_and_the_same_training_as_keras_nested_functions(monkeypatch):
    dataset = _dataset()
    assert len({batch[0]["token_ids"].shape[1] for batch in dataset}) > 2  # several lengths
    ours = _classifier()
    loss, evaluation, weights = _fit_and_evaluate(ours, dataset)
    for function in (ours.train_function, ours.test_function):
        assert function.compiled.experimental_get_tracing_count() == 1
    assert int(ours.optimizer.iterations.numpy()) == 8  # 4 batches x 2 epochs: every batch once, nothing more

    monkeypatch.setattr(step_functions, "uses_one_level_steps", lambda model: False)
    keras_own = _classifier()
    expected_loss, expected_evaluation, expected_weights = _fit_and_evaluate(keras_own, dataset)
    assert not hasattr(keras_own.train_function, "compiled")
    # Dropout on, the same seeds: the same steps to the last bit.
    assert loss == expected_loss
    assert evaluation == expected_evaluation
    for got, expected in zip(weights, expected_weights):
        np.testing.assert_array_equal(got, expected)


@tensorflow_only
def test_a_dataset_of_unknown_length_ends_each_epoch_and_train_on_batch_takes_keras_path():
    dataset = _dataset(num_examples=10).filter(lambda inputs, label: True)  # unknown cardinality
    classifier = _classifier()
    classifier.fit(dataset, epochs=2, verbose=0)
    # 3 batches x 2 epochs. (Keras' nested functions counted 8: one more each time the data ran out.)
    assert int(classifier.optimizer.iterations.numpy()) == 6
    inputs, labels = next(iter(dataset))
    loss = classifier.train_on_batch(inputs, labels)  # a Python iterator of one batch: Keras' own function
    assert np.all(np.isfinite(loss))
    assert int(classifier.optimizer.iterations.numpy()) == 7
    assert classifier.train_function.compiled.experimental_get_tracing_count() == 1


@pytest.mark.all_backends
def test_keras_own_functions_for_xla_several_steps_per_execution_eager_runs_and_other_backends():
    tensorflow = keras.config.backend() == "tensorflow"
    assert step_functions.uses_one_level_steps(_classifier()) is tensorflow
    if tensorflow:
        assert not step_functions.uses_one_level_steps(_classifier(jit_compile=True))
    assert not step_functions.uses_one_level_steps(_classifier(steps_per_execution=2))
    assert not step_functions.uses_one_level_steps(_classifier(run_eagerly=True))
    classifier = _classifier(steps_per_execution=2)
    if tensorflow:
        classifier.fit(_dataset(), epochs=1, verbose=0)
        assert not hasattr(classifier.train_function, "compiled")
        assert int(classifier.optimizer.iterations.numpy()) == 4


@pytest.mark.all_backends
def test_a_trace_runs_while_instantiating_only_before_the_first_one_level_step():
    """Where the steps are Keras' own, or the first one-level step has run, the caller traces as before."""
    ran = []
    for classifier in (_classifier(steps_per_execution=2), _classifier(run_eagerly=True)):
        assert not step_functions.trace_while_instantiating(classifier, lambda: ran.append(1))
    classifier = _classifier()
    if keras.config.backend() != "tensorflow":
        assert not step_functions.trace_while_instantiating(classifier, lambda: ran.append(1))
        assert not ran
        return
    import threading

    def trace():
        ran.append(threading.current_thread().name)
        raise RuntimeError("left for the caller's own trace to raise again")

    assert step_functions.trace_while_instantiating(classifier, trace)
    classifier.fit(_dataset(), epochs=1, verbose=0)
    step_functions.wait_for_background_traces(classifier)
    assert ran == ["keras-bert-app-trace"]  # once, in its thread, its error not raised in `fit`
    assert not step_functions.trace_while_instantiating(classifier, lambda: ran.append(1))
    classifier.fit(_dataset(), epochs=1, verbose=0)
    assert len(ran) == 1
