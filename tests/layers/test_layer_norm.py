"""`layers.LayerNorm`: Keras' LayerNormalization with the gradient written out on TensorFlow.

The reference is `keras.layers.LayerNormalization` with the same weights:
outputs and the gradients of x, gamma and beta must agree, in float32 and
under `mixed_bfloat16`, for inputs of rank 2 and 3 whose lengths the trace
does not know.
"""

import keras
import numpy as np
import pytest

from keras_bert_app.layers.layer_norm import LayerNorm

pytestmark = pytest.mark.all_backends


def _pair(width, dtype=None, **options):
    ours = LayerNorm(epsilon=1e-12, dtype=dtype, **options)
    reference = keras.layers.LayerNormalization(epsilon=1e-12, dtype=dtype, **options)
    for layer in (ours, reference):
        layer.build((None, width))
    rng = np.random.default_rng(0)
    for variable in ours.weights:
        variable.assign(rng.normal(1.0 if variable.name == "gamma" else 0.0, 0.5, variable.shape).astype("float32"))
    reference.set_weights(ours.get_weights())
    return ours, reference


def _value_and_gradients(layer, x, upstream):
    """The layer's output on x and the gradients of sum(output * upstream) w.r.t. x, gamma and beta."""
    backend = keras.config.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        x = tf.constant(x)

        @tf.function(input_signature=[tf.TensorSpec([None] * len(x.shape[:-1]) + [x.shape[-1]], x.dtype)])
        def run(x):  # a trace whose batch and length are unknown, as a fine-tuning step's
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = layer(x)
                loss = tf.reduce_sum(tf.cast(y, "float32") * upstream)
            return y, tape.gradient(loss, [x, *layer.trainable_variables])

        y, grads = run(x)
        return np.asarray(y, "float32"), [np.asarray(g, "float32") for g in grads]
    if backend == "jax":
        import jax

        def loss(x, weights):
            y, _ = layer.stateless_call(weights, [], x)
            return (y.astype("float32") * upstream).sum(), y

        weights = [v.value for v in layer.trainable_variables]
        (_, y), (gx, gw) = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(x, weights)
        return np.asarray(y, "float32"), [np.asarray(g, "float32") for g in (gx, *gw)]
    import torch

    x = torch.tensor(x, requires_grad=True)
    y = layer(x)
    (y.float() * torch.tensor(upstream)).sum().backward()
    grads = [x.grad, *(v.value.grad for v in layer.trainable_variables)]
    return y.detach().float().numpy(), [g.float().numpy() for g in grads]


@pytest.mark.parametrize("shape", [(3, 5, 8), (4, 8)])
def test_output_and_gradients_match_keras(shape):
    rng = np.random.default_rng(1)
    x = (rng.normal(size=shape) * 3 + 1).astype("float32")
    upstream = rng.normal(size=shape).astype("float32")
    ours, reference = _pair(shape[-1])
    y, grads = _value_and_gradients(ours, x, upstream)
    y_ref, grads_ref = _value_and_gradients(reference, x, upstream)
    np.testing.assert_allclose(y, y_ref, rtol=1e-5, atol=1e-5)
    for name, g, g_ref in zip(("x", "gamma", "beta"), grads, grads_ref):
        assert g.shape == g_ref.shape, name
        np.testing.assert_allclose(g, g_ref, rtol=1e-4, atol=1e-5, err_msg=name)


def test_matches_the_closed_form_in_numpy():
    """Against the textbook formula, not Keras: y = gamma (x - mu) / sqrt(var + eps) + beta."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 3, 6)).astype("float32")
    ours, _ = _pair(6)
    gamma, beta = ours.get_weights()
    expected = gamma * (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12) + beta
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours(x)), expected, rtol=1e-5, atol=1e-5)


def test_mixed_bfloat16_computes_in_float32_and_returns_bfloat16():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 4, 8)).astype("float32")
    upstream = rng.normal(size=(2, 4, 8)).astype("float32")
    ours, reference = _pair(8, dtype="mixed_bfloat16")
    y, grads = _value_and_gradients(ours, x, upstream)
    y_ref, grads_ref = _value_and_gradients(reference, x, upstream)
    assert keras.backend.standardize_dtype(ours(x).dtype) == "bfloat16"
    np.testing.assert_allclose(y, y_ref, rtol=2e-2, atol=2e-2)
    for g, g_ref in zip(grads, grads_ref):
        np.testing.assert_allclose(g, g_ref, rtol=2e-2, atol=2e-2)


def test_other_settings_are_keras_own():
    ours, reference = _pair(6, center=False)
    assert not ours._explicit_gradient()
    x = np.random.default_rng(4).normal(size=(2, 6)).astype("float32")
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(ours(x)), keras.ops.convert_to_numpy(reference(x)))


def test_config_round_trip_and_weight_names():
    layer = LayerNorm(epsilon=1e-7, name="output_layer_norm")
    layer.build((None, 4))
    assert [v.name for v in layer.weights] == ["gamma", "beta"]
    restored = keras.layers.deserialize(keras.layers.serialize(layer))
    assert isinstance(restored, LayerNorm) and restored.epsilon == 1e-7
