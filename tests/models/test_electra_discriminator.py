"""ElectraDiscriminator: the encoder with the replaced-token head, its battery and its preset round trip."""

import keras
import numpy as np
import pytest

from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.electra_discriminator import ElectraDiscriminator
from tests.model_battery import run_model_battery



def tiny_encoder():
    return BertEncoder(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
        max_sequence_length=64, dropout=0.0, embedding_dim=8,
    )


def batch(batch_size=3, seq=10, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, 100, size=(batch_size, seq)).astype("int32")
    mask = np.ones_like(ids)
    mask[:, -2:] = 0
    ids[mask == 0] = 0
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}


def _numpy(value):
    return keras.ops.convert_to_numpy(value)


@pytest.mark.all_backends
def test_one_logit_per_token_from_dense_gelu_dense():
    from scipy.special import erf

    model = ElectraDiscriminator(tiny_encoder())
    x = batch()
    sequence = _numpy(model.encoder(x)["sequence_output"])
    head = model.discriminator_head
    hidden = sequence @ _numpy(head.dense.kernel) + _numpy(head.dense.bias)
    hidden = 0.5 * hidden * (1 + erf(hidden / np.sqrt(2)))  # the encoder's exact GELU
    expected = (hidden @ _numpy(head.dense_prediction.kernel) + _numpy(head.dense_prediction.bias))[..., 0]
    np.testing.assert_allclose(_numpy(model(x)["rtd"]), expected, atol=1e-5)


def test_battery(tmp_path):  # TensorFlow only: the converted logits are checked on every backend (tests/convert)
    run_model_battery(
        lambda: ElectraDiscriminator(tiny_encoder()), batch(), "rtd", tmp_path,
        variable_length_inputs=[batch(seq=5), batch(seq=17)],
    )


@pytest.mark.all_backends
def test_preset_round_trip_keeps_the_head(tmp_path):
    model = ElectraDiscriminator(tiny_encoder())
    x = batch()
    folder = model.save_to_preset(tmp_path / "preset")
    assert (folder / "discriminator.weights.h5").is_file()
    np.testing.assert_allclose(_numpy(ElectraDiscriminator.from_preset(folder)(x)["rtd"]), _numpy(model(x)["rtd"]), atol=1e-6)
    # An encoder preset without the head: a fresh one on the saved encoder.
    encoder_only = model.encoder.save_to_preset(tmp_path / "encoder")
    fresh = ElectraDiscriminator.from_preset(encoder_only)
    np.testing.assert_allclose(
        _numpy(fresh.encoder(x)["sequence_output"]), _numpy(model.encoder(x)["sequence_output"]), atol=1e-6
    )
