"""`BertEncoder(num_groups=G)`: ALBERT's cross-layer parameter sharing, its config, presets and parameter counts.

Parity with transformers' `AlbertModel` / `AlbertForPreTraining` is in tests/convert/test_albert_huggingface.py.
"""

import numpy as np
import pytest

import keras_bert_app as kba
from keras_bert_app import errors
from tests.model_battery import assert_close

pytestmark = pytest.mark.all_backends

TINY = dict(vocabulary_size=100, num_layers=4, num_heads=2, hidden_dim=32, intermediate_dim=64, max_sequence_length=64,
            embedding_dim=16, dropout=0.0)


def make_inputs(batch=2, seq=8, seed=0):
    rng = np.random.default_rng(seed)
    padding_mask = np.ones((batch, seq), "int32")
    padding_mask[0, 5:] = 0
    token_ids = rng.integers(1, 100, size=(batch, seq)).astype("int32") * padding_mask
    segment_ids = (np.arange(seq)[None, :] >= 3).astype("int32") * padding_mask
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def layer_parameters(hidden, intermediate):
    attention = 4 * (hidden * hidden + hidden) + 2 * hidden
    return attention + hidden * intermediate + intermediate + intermediate * hidden + hidden + 2 * hidden


def albert_parameters(vocabulary, positions, embedding, hidden, intermediate, groups):
    """ALBERT's count (as HF `AlbertModel`): embeddings E wide + LayerNorm, E -> H, the groups, the pooler."""
    embeddings = (vocabulary + positions + 2) * embedding + 2 * embedding
    return embeddings + embedding * hidden + hidden + groups * layer_parameters(hidden, intermediate) + hidden * hidden + hidden


def test_one_group_shares_every_layer():
    encoder = kba.BertEncoder(**TINY, num_groups=1)
    assert len(encoder.transformer_layers) == 1
    assert encoder.count_params() == albert_parameters(100, 64, 16, 32, 64, groups=1)
    outputs = encoder(make_inputs())
    assert len(outputs["encoder_outputs"]) == 4
    # The same block applied again: layer 2 is block(layer 1), as an unshared encoder with copied weights computes.
    unshared = kba.BertEncoder(**TINY)
    block_weights = encoder.transformer_layers[0].get_weights()
    for block in unshared.transformer_layers:
        block.set_weights(block_weights)
    for name in ("embeddings", "embedding_projection", "pooler"):
        getattr(unshared, name).set_weights(getattr(encoder, name).get_weights())
    expected = unshared(make_inputs())
    for ours, theirs in zip(outputs["encoder_outputs"], expected["encoder_outputs"], strict=True):
        assert_close(ours, theirs, atol=1e-5)


def test_groups_of_consecutive_layers():
    encoder = kba.BertEncoder(**TINY, num_groups=2)
    assert len(encoder.transformer_layers) == 2
    assert encoder.count_params() == albert_parameters(100, 64, 16, 32, 64, groups=2)
    paths = sorted({variable.path.split("/")[0] for variable in encoder.weights})
    assert [path for path in paths if path.startswith("transformer")] == ["transformer_layer_0", "transformer_layer_1"]


def test_num_groups_equal_to_num_layers_is_bert():
    bert = kba.BertEncoder(**{**TINY, "num_layers": 2})
    grouped = kba.BertEncoder(**{**TINY, "num_layers": 2}, num_groups=2)
    assert [v.path for v in grouped.weights] == [v.path for v in bert.weights]
    assert "num_groups" not in bert.get_config() and grouped.get_config()["num_groups"] == 2


@pytest.mark.parametrize("num_groups, error", [(3, errors.ArgumentError), (0, errors.ArgumentError),
                                                (8, errors.ArgumentError), (1.0, errors.ArgumentTypeError)])
def test_num_groups_must_divide_num_layers(num_groups, error):
    with pytest.raises(error, match="num_groups"):
        kba.BertEncoder(**TINY, num_groups=num_groups)


def test_config_and_preset_round_trip(tmp_path):
    encoder = kba.BertEncoder(**TINY, num_groups=1, activation="gelu_approximate")
    inputs = make_inputs()
    restored = kba.BertEncoder.from_config(encoder.get_config())
    assert restored.num_groups == 1 and len(restored.transformer_layers) == 1
    encoder.save_to_preset(tmp_path / "preset")
    loaded = kba.BertEncoder.from_preset(tmp_path / "preset")
    assert loaded.get_config() == {**encoder.get_config(), "name": loaded.name}
    assert_close(loaded(inputs)["sequence_output"], encoder(inputs)["sequence_output"], atol=1e-6)
