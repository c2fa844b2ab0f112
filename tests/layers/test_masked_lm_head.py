"""MaskedLMHead against a NumPy reference: gather, dense + GELU + LayerNorm, tied projection."""

import keras
import numpy as np
import pytest
from scipy.special import erf

from keras_bert_app.layers.masked_lm_head import MaskedLMHead

pytestmark = pytest.mark.all_backends


def _reference(sequence_output, positions, kernel, bias, gamma, beta, embeddings, output_bias, epsilon):
    gathered = np.take_along_axis(sequence_output, positions[..., None], axis=1)
    hidden = gathered @ kernel + bias
    hidden = 0.5 * hidden * (1.0 + erf(hidden / np.sqrt(2.0)))
    mean = hidden.mean(-1, keepdims=True)
    variance = hidden.var(-1, keepdims=True)
    hidden = (hidden - mean) / np.sqrt(variance + epsilon) * gamma + beta
    return hidden @ embeddings.T + output_bias


def _head(vocabulary_size=11, hidden_dim=6):
    embedding = keras.layers.Embedding(vocabulary_size, hidden_dim)
    embedding.build((None, None))
    head = MaskedLMHead(embedding, activation="gelu", layer_norm_epsilon=1e-12)
    head.build((None, None, hidden_dim), (None, None))
    rng = np.random.default_rng(0)
    for variable in head.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32"))
    return head, embedding


def test_logits_match_numpy_reference_at_mask_positions_only():
    head, embedding = _head()
    rng = np.random.default_rng(1)
    sequence_output = rng.normal(size=(2, 5, 6)).astype("float32")
    positions = np.array([[0, 3, 3], [4, 1, 0]], dtype="int32")
    logits = keras.ops.convert_to_numpy(head(sequence_output, positions))
    expected = _reference(
        sequence_output, positions,
        keras.ops.convert_to_numpy(head.dense.kernel), keras.ops.convert_to_numpy(head.dense.bias),
        keras.ops.convert_to_numpy(head.layer_norm.gamma), keras.ops.convert_to_numpy(head.layer_norm.beta),
        keras.ops.convert_to_numpy(embedding.embeddings), keras.ops.convert_to_numpy(head.output_bias), 1e-12,
    )
    assert logits.shape == (2, 3, 11) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)


def test_output_projection_is_tied_to_the_embedding_matrix():
    head, embedding = _head()
    sequence_output = np.ones((1, 2, 6), "float32")
    positions = np.zeros((1, 1), "int32")
    before = keras.ops.convert_to_numpy(head(sequence_output, positions))
    embedding.embeddings.assign(keras.ops.convert_to_numpy(embedding.embeddings) * 2.0)
    after = keras.ops.convert_to_numpy(head(sequence_output, positions))
    bias = keras.ops.convert_to_numpy(head.output_bias)
    np.testing.assert_allclose(after - bias, 2.0 * (before - bias), rtol=1e-4, atol=1e-4)
    own = {v.path for v in head.weights} - {embedding.embeddings.path}
    assert {path.split("/", 1)[-1] for path in own} == {
        "dense/kernel", "dense/bias", "layer_norm/gamma", "layer_norm/beta", "output_bias",
    }
