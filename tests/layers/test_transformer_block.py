"""`TransformerBlock(..., with_first=True)`: the first position's output computed apart.

The whole-sequence output must be the plain call's, and the first
position's must be its first row, in inference and in training with
dropout: both paths take one draw of each dropout mask (the generators'
states are restored between the calls compared, so the plain call draws
the same masks).
"""

import keras
import numpy as np
import pytest

from keras_bert_app.layers.transformer_block import TransformerBlock

pytestmark = pytest.mark.all_backends


def _block_and_inputs(dropout):
    keras.utils.set_random_seed(0)
    block = TransformerBlock(num_heads=2, hidden_dim=8, intermediate_dim=16, dropout=dropout)
    rng = np.random.default_rng(1)
    hidden = rng.normal(size=(3, 6, 8)).astype("float32")
    padding_mask = np.array([[1] * 6, [1] * 4 + [0] * 2, [1] * 2 + [0] * 4], "int32")
    block(hidden, padding_mask=padding_mask)
    return block, hidden, padding_mask


def _seed_states(block):
    states = [keras.ops.convert_to_numpy(generator.state) for generator in _generators(block)]
    if keras.config.backend() == "torch":  # Keras' PyTorch dropout of an unseeded layer draws from torch's own RNG
        import torch

        states.append(torch.random.get_rng_state())
    return states


def _restore_seed_states(block, states):
    if keras.config.backend() == "torch":
        import torch

        torch.random.set_rng_state(states.pop())
    for generator, state in zip(_generators(block), states, strict=True):
        generator.state.assign(state)


def _generators(block):
    return [layer.seed_generator for layer in block._flatten_layers() if isinstance(layer, keras.layers.Dropout)]


@pytest.mark.parametrize("training", [False, True])
def test_first_position_apart_is_the_first_row_of_the_whole_output(training):
    block, hidden, padding_mask = _block_and_inputs(dropout=0.3)
    states = _seed_states(block)
    full, first = block(hidden, padding_mask=padding_mask, training=training, with_first=True)
    _restore_seed_states(block, states)
    plain = keras.ops.convert_to_numpy(block(hidden, padding_mask=padding_mask, training=training))
    full, first = keras.ops.convert_to_numpy(full), keras.ops.convert_to_numpy(first)
    assert first.shape == (3, 1, 8)
    np.testing.assert_allclose(full, plain, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(first, plain[:, :1], rtol=1e-5, atol=1e-5)
    if training:  # dropout did act: another draw gives another output
        again = keras.ops.convert_to_numpy(block(hidden, padding_mask=padding_mask, training=True))
        assert not np.allclose(again, plain, atol=1e-3)


def test_first_position_apart_carries_the_gradient_of_the_whole_output():
    """Training through the first position alone: every weight's gradient as through the whole output's first row."""
    if keras.config.backend() != "tensorflow":
        pytest.skip("The gradient is checked with TensorFlow's tape (the forward passes are checked on every backend).")
    import tensorflow as tf

    block, hidden, padding_mask = _block_and_inputs(dropout=0.0)
    hidden = tf.constant(hidden)
    gradients = []
    for apart in (True, False):
        with tf.GradientTape() as tape:
            tape.watch(hidden)
            if apart:
                _, first = block(hidden, padding_mask=padding_mask, training=True, with_first=True)
            else:
                first = block(hidden, padding_mask=padding_mask, training=True)[:, :1]
            loss = tf.reduce_sum(tf.sin(first))
        gradients.append(tape.gradient(loss, [hidden] + block.trainable_variables))
    for apart, whole in zip(*gradients):
        np.testing.assert_allclose(apart.numpy(), whole.numpy(), rtol=1e-5, atol=1e-6)
