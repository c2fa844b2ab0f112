"""NextSentenceHead against a NumPy reference."""

import keras
import numpy as np
import pytest

from keras_bert_app.layers.next_sentence_head import NextSentenceHead

pytestmark = pytest.mark.all_backends


def test_logits_are_pooled_output_times_kernel_plus_bias():
    head = NextSentenceHead()
    head.build((None, 4))
    rng = np.random.default_rng(0)
    kernel = rng.normal(size=(4, 2)).astype("float32")
    bias = rng.normal(size=(2,)).astype("float32")
    head.dense.kernel.assign(kernel)
    head.dense.bias.assign(bias)
    pooled = rng.normal(size=(3, 4)).astype("float32")
    logits = keras.ops.convert_to_numpy(head(pooled))
    np.testing.assert_allclose(logits, pooled @ kernel + bias, rtol=1e-5, atol=1e-5)
    assert logits.shape == (3, 2)
