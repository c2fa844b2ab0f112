"""`layers.Dropout`: Keras' Dropout with a smaller training graph on TensorFlow.

The reference is `keras.layers.Dropout` with the same seed: each call's
output (and on TensorFlow its gradient) must equal Keras' to the last bit,
call after call (the seed state moves as Keras' does), in float32 and under
`mixed_bfloat16`, eagerly and in a trace whose batch and length are unknown.
"""

import keras
import numpy as np
import pytest

from keras_bert_app.layers.dropout import Dropout

pytestmark = pytest.mark.all_backends


def _inputs(shape=(4, 7, 16), seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
def test_training_outputs_equal_keras_dropout_call_after_call(dtype):
    ours, reference = Dropout(0.1, seed=7, dtype=dtype), keras.layers.Dropout(0.1, seed=7, dtype=dtype)
    x = _inputs()
    dropped = []
    for _ in range(3):
        y = keras.ops.convert_to_numpy(keras.ops.cast(ours(x, training=True), "float32"))
        expected = keras.ops.convert_to_numpy(keras.ops.cast(reference(x, training=True), "float32"))
        np.testing.assert_array_equal(y, expected)
        dropped.append(y == 0)
    # A fresh mask each call, about `rate` of it dropped.
    assert not np.array_equal(dropped[0], dropped[1])
    assert 0.03 < np.mean(dropped) < 0.2


def test_inference_and_edge_rates_are_keras_own():
    x = _inputs()
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(Dropout(0.5, seed=1)(x, training=False)), x)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(Dropout(0.0, seed=1)(x, training=True)), x)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(Dropout(1.0, seed=1)(x, training=True)), 0 * x)
    ours = Dropout(0.3, noise_shape=(4, 1, 16), seed=3)
    reference = keras.layers.Dropout(0.3, noise_shape=(4, 1, 16), seed=3)
    y = keras.ops.convert_to_numpy(ours(x, training=True))
    np.testing.assert_array_equal(y, keras.ops.convert_to_numpy(reference(x, training=True)))
    assert np.all((y == 0).all(axis=1) | (y != 0).all(axis=1))  # one mask per (batch, feature), shared along axis 1


def test_config_round_trips():
    layer = Dropout(0.2, seed=5, name="drop")
    restored = keras.layers.deserialize(keras.layers.serialize(layer))
    assert type(restored) is Dropout
    assert (restored.rate, restored.name) == (0.2, "drop")


def _traced_value_and_gradient(layer, x, upstream):
    """Output and input gradient of `sum(layer(x) * upstream)`, traced with unknown batch and length; the graph's size."""
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([None, None, x.shape[-1]], tf.float32)])
    def run(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=True)
            loss = tf.reduce_sum(tf.cast(y, "float32") * upstream)
        return tf.cast(y, "float32"), tape.gradient(loss, x)

    concrete = run.get_concrete_function()
    y, gradient = concrete(tf.constant(x))
    return np.asarray(y), np.asarray(gradient), len(concrete.graph.get_operations())


@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
def test_tensorflow_trace_equals_keras_with_a_smaller_graph(dtype):
    if keras.config.backend() != "tensorflow":
        pytest.skip("the smaller graph is TensorFlow's; elsewhere the layer is Keras' own (test above)")
    x, upstream = _inputs(), _inputs(seed=1)
    ours, reference = Dropout(0.1, seed=11, dtype=dtype), keras.layers.Dropout(0.1, seed=11, dtype=dtype)
    y, gradient, size = _traced_value_and_gradient(ours, x, upstream)
    expected_y, expected_gradient, reference_size = _traced_value_and_gradient(reference, x, upstream)
    np.testing.assert_array_equal(y, expected_y)
    np.testing.assert_array_equal(gradient, expected_gradient)
    assert 0 < np.mean(y == 0) < 0.3
    # The gradient is the upstream gradient times the mask: zero exactly where the output was dropped.
    np.testing.assert_array_equal(gradient == 0, (y == 0) | (upstream == 0))
    # Keras' stateless_dropout and its automatic gradient: about 40 graph nodes; here about 20.
    assert size <= reference_size - 15, (size, reference_size)
