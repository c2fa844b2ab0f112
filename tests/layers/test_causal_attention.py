"""A causal encoder (`BertEncoder(causal=True)`): a position's output does not depend on the tokens to its right,
on every backend, with the explicit and the fused attention; the pooled output reads the last real token."""

import keras
import numpy as np
import pytest

from keras_bert_app.layers.self_attention import SelfAttention
from keras_bert_app.models.bert_encoder import BertEncoder

pytestmark = pytest.mark.all_backends

VOCABULARY_SIZE = 30


def _encoder(causal, fused_attention=False, num_layers=2):
    keras.utils.set_random_seed(0)
    return BertEncoder(vocabulary_size=VOCABULARY_SIZE, num_layers=num_layers, num_heads=2, hidden_dim=8,
                       intermediate_dim=16, max_sequence_length=16, dropout=0.0, causal=causal,
                       fused_attention=fused_attention)


def _inputs(token_ids, num_real):
    token_ids = np.asarray(token_ids, "int32")
    padding_mask = (np.arange(token_ids.shape[1]) < np.asarray(num_real)[:, None]).astype("int32")
    return {"token_ids": token_ids * padding_mask, "segment_ids": np.zeros_like(token_ids),
            "padding_mask": padding_mask}


def _outputs(encoder, inputs):
    outputs = encoder(inputs)
    return {name: keras.ops.convert_to_numpy(outputs[name]) for name in ("sequence_output", "pooled_output")}


@pytest.mark.parametrize("fused_attention", [False, True])
def test_a_position_does_not_see_later_tokens(fused_attention):
    rng = np.random.default_rng(0)
    encoder = _encoder(causal=True, fused_attention=fused_attention)
    token_ids = rng.integers(5, VOCABULARY_SIZE, (3, 10))
    changed = token_ids.copy()
    changed[:, 6:] = rng.integers(5, VOCABULARY_SIZE, (3, 4))  # only positions 6.. differ
    before = _outputs(encoder, _inputs(token_ids, [10, 10, 10]))["sequence_output"]
    after = _outputs(encoder, _inputs(changed, [10, 10, 10]))["sequence_output"]
    np.testing.assert_allclose(before[:, :6], after[:, :6], rtol=1e-5, atol=1e-5)
    assert np.abs(before[:, 6:] - after[:, 6:]).max() > 1e-3  # the changed positions do change

    bidirectional = _encoder(causal=False, fused_attention=fused_attention)
    before = _outputs(bidirectional, _inputs(token_ids, [10, 10, 10]))["sequence_output"]
    after = _outputs(bidirectional, _inputs(changed, [10, 10, 10]))["sequence_output"]
    assert np.abs(before[:, :6] - after[:, :6]).max() > 1e-3  # without the mask they would


def test_causal_matches_a_prefix_run_and_pools_the_last_real_token():
    """Position t of a causal encoder equals position t of the sequence cut after t; padding changes nothing."""
    rng = np.random.default_rng(1)
    encoder = _encoder(causal=True)
    token_ids = rng.integers(5, VOCABULARY_SIZE, (2, 9))
    full = _outputs(encoder, _inputs(token_ids, [9, 6]))
    for length in (3, 6):
        prefix = _outputs(encoder, _inputs(token_ids[:, :length], [length, length]))
        np.testing.assert_allclose(full["sequence_output"][1, :length], prefix["sequence_output"][1], atol=1e-5)
    # Row 1 has 6 real tokens: its pooled output is the pooler of position 5, the same as the 6-token run's.
    np.testing.assert_allclose(full["pooled_output"][1], prefix["pooled_output"][1], atol=1e-5)
    last_real = np.stack([full["sequence_output"][0, 8], full["sequence_output"][1, 5]])
    pooled = keras.ops.convert_to_numpy(encoder.pooler(last_real))
    np.testing.assert_allclose(full["pooled_output"], pooled, atol=1e-5)


def test_first_position_apart_is_causal_too():
    """`SelfAttention(causal=True)` with `with_first`: the first position attends to itself only."""
    keras.utils.set_random_seed(0)
    attention = SelfAttention(num_heads=2, hidden_dim=8, dropout=0.0, causal=True)
    hidden = np.random.default_rng(2).normal(size=(2, 5, 8)).astype("float32")
    padding_mask = np.ones((2, 5), "int32")
    outputs, first = attention(hidden, padding_mask=padding_mask, with_first=True)
    alone = attention(hidden[:, :1], padding_mask=padding_mask[:, :1])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(first), keras.ops.convert_to_numpy(alone), atol=1e-5)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(outputs)[:, :1], keras.ops.convert_to_numpy(alone),
                               atol=1e-5)


def test_causal_is_part_of_the_config_and_the_preset(tmp_path):
    encoder = _encoder(causal=True)
    assert encoder.get_config()["causal"] is True
    assert "causal" not in _encoder(causal=False).get_config()  # BERT configs stay as they were
    encoder.save_to_preset(tmp_path)
    reloaded = BertEncoder.from_preset(tmp_path)
    assert reloaded.causal
    inputs = _inputs(np.arange(5, 13)[None], [8])
    np.testing.assert_allclose(_outputs(encoder, inputs)["sequence_output"],
                               _outputs(reloaded, inputs)["sequence_output"], atol=1e-6)
