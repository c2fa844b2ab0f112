"""`training.throughput.StepTimes`: the first step apart, the examples per second of the steps after it."""

import keras
import numpy as np
import pytest

from keras_bert_app.training.throughput import StepTimes

pytestmark = pytest.mark.all_backends


def test_the_first_step_is_apart_and_the_rest_counts_its_examples():
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer="sgd", loss="mse")
    times = StepTimes(batch_size=4, examples_per_epoch=10)  # batches of 4, 4, 2 in each of 2 epochs
    model.fit(np.ones((10, 3), "float32"), np.ones((10, 1), "float32"), batch_size=4, epochs=2, verbose=0,
              callbacks=[times], shuffle=False)
    assert times.first_step_seconds > 0
    assert times.later_examples == 2 * 10 - 4  # every example of both epochs but the first batch's
    summary = times.summary()
    assert summary["examples_per_second_after_first_step"] == pytest.approx(
        times.later_examples / times.later_seconds, rel=1e-3)


def test_a_run_of_one_step_has_no_rate():
    times = StepTimes(batch_size=8, examples_per_epoch=8)
    times.on_train_batch_begin(0)
    times.on_train_batch_end(0)
    assert times.summary()["examples_per_second_after_first_step"] is None
