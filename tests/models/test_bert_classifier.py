import json

import keras
import numpy as np
import pytest

from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_encoder import BertEncoder
from tests.models.graph_walk import feed_forward_matmuls

pytestmark = pytest.mark.all_backends


def tiny_encoder(dropout=0.0):
    return BertEncoder(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=64, dropout=dropout,
    )


def batch(batch_size=4, seq=10, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, 100, size=(batch_size, seq)).astype("int32")
    mask = np.ones_like(ids)
    mask[:, seq - 3:] = 0
    ids[mask == 0] = 0
    segments = np.zeros_like(ids)
    segments[:, seq // 2:] = 1
    return {"token_ids": ids, "segment_ids": segments * mask, "padding_mask": mask}


def test_logits_equal_dense_on_pooled_output():
    encoder = tiny_encoder()
    model = BertClassifier(encoder, num_classes=3, dropout=0.0)
    x = batch()
    logits = keras.ops.convert_to_numpy(model(x))
    assert logits.shape == (4, 3)
    pooled = keras.ops.convert_to_numpy(encoder(x)["pooled_output"])
    kernel, bias = (keras.ops.convert_to_numpy(w) for w in model.get_layer("logits").weights)
    np.testing.assert_allclose(logits, pooled @ kernel + bias, atol=1e-5)
    # Variable sequence lengths go through the same model.
    assert tuple(model(batch(seq=7)).shape) == (4, 3)


def test_pooled_output_is_the_pooler_on_the_whole_sequence_output_at_cls():
    """The last block's [CLS] output is computed apart (`TransformerBlock._call_with_first`): the same values."""
    encoder = tiny_encoder()
    outputs = keras.tree.map_structure(keras.ops.convert_to_numpy, encoder(batch()))
    kernel, bias = (keras.ops.convert_to_numpy(w) for w in encoder.pooler.weights)
    np.testing.assert_allclose(
        outputs["pooled_output"], np.tanh(outputs["sequence_output"][:, 0] @ kernel + bias), rtol=1e-5, atol=1e-6
    )


def test_the_pooled_output_needs_none_of_the_last_blocks_feed_forward_on_other_positions():
    """Of the last block, only [CLS]'s feed-forward sublayer feeds the pooled output: a classifier's step drops the rest.

    TensorFlow prunes a function's ops that feed none of its outputs (and
    are not stateful) when it instantiates it; XLA drops dead code. So a
    classifier, which uses only the pooled output, does not run the last
    block's feed-forward sublayer on the whole sequence, which only
    `sequence_output` needs.
    """
    if keras.config.backend() != "tensorflow":
        pytest.skip("Reads a TensorFlow graph.")
    import tensorflow as tf

    encoder = tiny_encoder(dropout=0.1)
    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in ("token_ids", "segment_ids", "padding_mask")}
    outputs = tf.function(lambda x: encoder(x, training=True)).get_concrete_function(spec).structured_outputs

    pooled = feed_forward_matmuls(outputs["pooled_output"], "transformer_layer_1")
    sequence = feed_forward_matmuls(outputs["sequence_output"], "transformer_layer_1")
    assert len(pooled) == 1 and len(sequence) == 1
    assert not pooled & sequence


def test_fit_overfits_one_batch():
    model = BertClassifier(tiny_encoder(), num_classes=2, dropout=0.0)
    x = batch(batch_size=8, seq=8)
    y = np.array([0, 1] * 4, dtype="int32")
    model.compile(learning_rate=1e-2)
    history = model.fit(x, y, epochs=12, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]


def test_regression_uses_mean_squared_error():
    model = BertClassifier(tiny_encoder(), num_classes=1)
    model.compile()
    assert isinstance(model.loss, keras.losses.MeanSquaredError)
    x = batch()
    y = np.linspace(0, 5, 4).astype("float32")[:, None]
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    predictions = keras.ops.convert_to_numpy(model.predict(x, verbose=0))
    np.testing.assert_allclose(logs["loss"], np.mean((predictions - y) ** 2), rtol=1e-4)


def test_keras_save_and_load(tmp_path):
    model = BertClassifier(tiny_encoder(), num_classes=3)
    x = batch()
    expected = keras.ops.convert_to_numpy(model.predict(x, verbose=0))
    path = tmp_path / "classifier.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    assert isinstance(restored, BertClassifier)
    assert restored.get_config()["num_classes"] == 3
    np.testing.assert_allclose(restored.predict(x, verbose=0), expected, atol=1e-5)


def test_config_round_trip():
    model = BertClassifier(tiny_encoder(), num_classes=4, dropout=0.2)
    clone = BertClassifier.from_config(model.get_config())
    assert clone.num_classes == 4 and clone.dropout == 0.2
    assert clone.encoder.get_config() == model.encoder.get_config()


def test_save_to_preset_and_from_preset(tmp_path):
    model = BertClassifier(tiny_encoder(), num_classes=3)
    x = batch()
    expected = keras.ops.convert_to_numpy(model.predict(x, verbose=0))
    folder = model.save_to_preset(tmp_path / "run", label_names=["a", "b", "c"])
    config = json.loads((folder / "config.json").read_text())
    assert config["task"]["class_name"] == "BertClassifier"
    assert config["task"]["config"]["num_classes"] == 3
    assert config["task"]["label_names"] == ["a", "b", "c"]
    restored = BertClassifier.from_preset(folder)
    np.testing.assert_allclose(restored.predict(x, verbose=0), expected, atol=1e-5)
    # A different head keeps the fine-tuned encoder and starts a new head.
    other = BertClassifier.from_preset(folder, num_classes=5)
    assert tuple(other(x).shape) == (4, 5)
    np.testing.assert_allclose(
        other.encoder.pooler.weights[0], model.encoder.pooler.weights[0]
    )


def test_bad_num_classes_and_pooling():
    with pytest.raises(ValueError, match="num_classes"):
        BertClassifier(tiny_encoder(), num_classes=0)
    with pytest.raises(ValueError, match=r"pooling must be one of \['pooler', 'cls'\]; got 'mean'"):
        BertClassifier(tiny_encoder(), num_classes=2, pooling="mean")


def _gelu(x):
    from scipy.special import erf

    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


def test_cls_pooling_is_electras_classification_head():
    """HF's `ElectraClassificationHead`: the raw last-layer [CLS], dense(H), exact GELU, dense(num_classes); no pooler."""
    encoder = tiny_encoder()
    model = BertClassifier(encoder, num_classes=3, dropout=0.0, pooling="cls")
    x = batch()
    cls = keras.ops.convert_to_numpy(encoder(x)["sequence_output"])[:, 0]
    hidden_kernel, hidden_bias = (keras.ops.convert_to_numpy(w) for w in model.get_layer("classifier_dense").weights)
    kernel, bias = (keras.ops.convert_to_numpy(w) for w in model.get_layer("logits").weights)
    expected = _gelu(cls @ hidden_kernel + hidden_bias) @ kernel + bias
    np.testing.assert_allclose(keras.ops.convert_to_numpy(model(x)), expected, atol=1e-5)
    assert BertClassifier.from_config(model.get_config()).pooling == "cls"


def _family_preset(folder, architecture=None):
    from keras_bert_app import presets

    tiny_encoder().save_to_preset(folder)
    if architecture:
        presets.write_config_entry(folder, "architecture", architecture)
    return folder


def test_from_preset_pools_as_the_family_fine_tunes_unless_told(tmp_path):
    """ELECTRA presets get the raw-[CLS] head, BERT's and ALBERT's the pooler; `pooling` overrides; a fine-tuned
    preset keeps the head it was trained with."""
    electra = _family_preset(tmp_path / "electra", "electra")
    assert BertClassifier.from_preset(electra, num_classes=2).pooling == "cls"
    assert BertClassifier.from_preset(electra, num_classes=2, pooling="pooler").pooling == "pooler"
    assert BertClassifier.from_preset(_family_preset(tmp_path / "albert", "albert"), num_classes=2).pooling == "pooler"
    bert = _family_preset(tmp_path / "bert")
    assert BertClassifier.from_preset(bert, num_classes=2).pooling == "pooler"
    model = BertClassifier.from_preset(bert, num_classes=2, pooling="cls")
    x = batch()
    expected = keras.ops.convert_to_numpy(model.predict(x, verbose=0))
    folder = model.save_to_preset(tmp_path / "run")
    restored = BertClassifier.from_preset(folder)
    assert restored.pooling == "cls"
    np.testing.assert_allclose(restored.predict(x, verbose=0), expected, atol=1e-5)
