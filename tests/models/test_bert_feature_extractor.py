import keras
import numpy as np
import pytest

from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_feature_extractor import BertFeatureExtractor

pytestmark = pytest.mark.all_backends


def tiny_encoder():
    return BertEncoder(
        vocabulary_size=100, num_layers=3, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=64, dropout=0.0,
    )


def batch():
    ids = np.array([[2, 5, 7, 9, 3, 0], [2, 8, 3, 0, 0, 0]], dtype="int32")
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": (ids > 0).astype("int32")}


@pytest.mark.parametrize("layers", [(-1, -2, -3), (0, 2), (-1,)])
def test_concat_and_sum_of_chosen_layers(layers):
    encoder = tiny_encoder()
    x = batch()
    outputs = [keras.ops.convert_to_numpy(o) for o in encoder(x)["encoder_outputs"]]
    concat = keras.ops.convert_to_numpy(BertFeatureExtractor(encoder, layers=layers)(x))
    np.testing.assert_allclose(concat, np.concatenate([outputs[i] for i in layers], -1), atol=1e-5)
    summed = keras.ops.convert_to_numpy(BertFeatureExtractor(encoder, layers=layers, combine="sum")(x))
    np.testing.assert_allclose(summed, np.sum([outputs[i] for i in layers], 0), atol=1e-5)


def test_save_load(tmp_path):
    model = BertFeatureExtractor(tiny_encoder(), layers=(-1, -2))
    x = batch()
    expected = keras.ops.convert_to_numpy(model.predict(x, verbose=0))
    model.save(tmp_path / "features.keras")
    restored = keras.models.load_model(tmp_path / "features.keras")
    assert restored.layers_to_use == (-1, -2)
    np.testing.assert_allclose(restored.predict(x, verbose=0), expected, atol=1e-5)
    again = BertFeatureExtractor.from_preset(model.save_to_preset(tmp_path / "run"))
    np.testing.assert_allclose(again.predict(x, verbose=0), expected, atol=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="out of range"):
        BertFeatureExtractor(tiny_encoder(), layers=(-4,))
    with pytest.raises(ValueError, match="combine"):
        BertFeatureExtractor(tiny_encoder(), layers=(-1,), combine="mean")
