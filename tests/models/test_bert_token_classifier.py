import keras
import numpy as np
import pytest

from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_token_classifier import IGNORE_LABEL
from keras_bert_app.models.bert_token_classifier import BertTokenClassifier

pytestmark = pytest.mark.all_backends


def tiny_encoder():
    return BertEncoder(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=64, dropout=0.0,
    )


def batch(batch_size=4, seq=10, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, 100, size=(batch_size, seq)).astype("int32")
    mask = np.ones_like(ids)
    mask[:, -3:] = 0
    ids[mask == 0] = 0
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}


def test_logits_per_token():
    encoder = tiny_encoder()
    model = BertTokenClassifier(encoder, num_classes=5, dropout=0.0)
    x = batch()
    logits = keras.ops.convert_to_numpy(model(x))
    assert logits.shape == (4, 10, 5)
    sequence = keras.ops.convert_to_numpy(encoder(x)["sequence_output"])
    kernel, bias = (keras.ops.convert_to_numpy(w) for w in model.get_layer("token_logits").weights)
    np.testing.assert_allclose(logits, sequence @ kernel + bias, atol=1e-5)


def test_ignored_positions_do_not_count():
    model = BertTokenClassifier(tiny_encoder(), num_classes=3, dropout=0.0)
    model.compile()
    x = batch()
    labels = np.full((4, 10), IGNORE_LABEL, dtype="int32")
    labels[:, 1:4] = np.array([0, 1, 2])
    weights = (labels != IGNORE_LABEL).astype("float32")
    logits = keras.ops.convert_to_numpy(model.predict(x, verbose=0))
    # Reference: mean cross-entropy and accuracy over the labelled positions only.
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    kept = labels != IGNORE_LABEL
    picked = np.take_along_axis(log_probs, np.where(kept, labels, 0)[..., None], -1)[..., 0]
    expected_accuracy = np.mean(logits.argmax(-1)[kept] == labels[kept])
    logs = model.evaluate(x, labels, sample_weight=weights, verbose=0, return_dict=True)
    np.testing.assert_allclose(logs["accuracy"], expected_accuracy, atol=1e-6)
    # The loss ignores -100 even without sample weights.
    unweighted = model.evaluate(x, labels, verbose=0, return_dict=True)
    total = -picked[kept].sum()
    assert np.isclose(unweighted["loss"], total / kept.sum(), rtol=1e-4) or np.isclose(
        unweighted["loss"], total / labels.size, rtol=1e-4
    )


def test_fit_and_save_load(tmp_path):
    model = BertTokenClassifier(tiny_encoder(), num_classes=3, dropout=0.0)
    x = batch()
    labels = np.where(x["padding_mask"] == 1, x["token_ids"] % 3, IGNORE_LABEL).astype("int32")
    model.compile(learning_rate=1e-2)
    history = model.fit(x, labels, sample_weight=(labels >= 0).astype("float32"), epochs=10, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    expected = keras.ops.convert_to_numpy(model.predict(x, verbose=0))
    model.save(tmp_path / "tagger.keras")
    restored = keras.models.load_model(tmp_path / "tagger.keras")
    np.testing.assert_allclose(restored.predict(x, verbose=0), expected, atol=1e-5)
    again = BertTokenClassifier.from_preset(model.save_to_preset(tmp_path / "run", ["O", "B", "I"]))
    np.testing.assert_allclose(again.predict(x, verbose=0), expected, atol=1e-5)
