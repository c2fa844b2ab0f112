import json

import keras
import numpy as np
import pytest

from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_multiple_choice import BertMultipleChoice

pytestmark = pytest.mark.all_backends


def tiny_encoder():
    return BertEncoder(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=64, dropout=0.0,
    )


def choice_batch(batch_size=3, num_choices=4, seq=9, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, 100, size=(batch_size, num_choices, seq)).astype("int32")
    mask = np.ones_like(ids)
    mask[..., -2:] = 0
    ids[mask == 0] = 0
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}


def test_one_score_per_choice_from_each_pooled_output():
    encoder = tiny_encoder()
    model = BertMultipleChoice(encoder, num_choices=4, dropout=0.0)
    x = choice_batch()
    logits = keras.ops.convert_to_numpy(model(x))
    assert logits.shape == (3, 4)
    kernel, bias = (keras.ops.convert_to_numpy(w) for w in model.get_layer("choice_score").weights)
    for choice in range(4):
        single = {name: value[:, choice] for name, value in x.items()}
        pooled = keras.ops.convert_to_numpy(encoder(single)["pooled_output"])
        np.testing.assert_allclose(logits[:, choice], (pooled @ kernel + bias)[:, 0], atol=1e-5)


def test_cls_pooling_scores_as_electra_for_multiple_choice():
    """HF's `ElectraForMultipleChoice`: summary dense(H) with exact GELU on the raw [CLS], then dense(1)."""
    from scipy.special import erf

    encoder = tiny_encoder()
    model = BertMultipleChoice(encoder, num_choices=4, dropout=0.0, pooling="cls")
    x = choice_batch()
    logits = keras.ops.convert_to_numpy(model(x))
    hidden_kernel, hidden_bias = (keras.ops.convert_to_numpy(w) for w in model.get_layer("choice_summary").weights)
    kernel, bias = (keras.ops.convert_to_numpy(w) for w in model.get_layer("choice_score").weights)
    for choice in range(4):
        single = {name: value[:, choice] for name, value in x.items()}
        hidden = keras.ops.convert_to_numpy(encoder(single)["sequence_output"])[:, 0] @ hidden_kernel + hidden_bias
        hidden = 0.5 * hidden * (1 + erf(hidden / np.sqrt(2)))
        np.testing.assert_allclose(logits[:, choice], (hidden @ kernel + bias)[:, 0], atol=1e-5)
    assert BertMultipleChoice.from_config(model.get_config()).pooling == "cls"


def test_fit_and_save_load(tmp_path):
    model = BertMultipleChoice(tiny_encoder(), num_choices=4, dropout=0.0)
    x = choice_batch(batch_size=6)
    y = np.array([0, 1, 2, 3, 0, 1], dtype="int32")
    model.compile(learning_rate=1e-2)
    history = model.fit(x, y, epochs=10, batch_size=6, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    expected = keras.ops.convert_to_numpy(model.predict(x, verbose=0))
    model.save(tmp_path / "choice.keras")
    restored = keras.models.load_model(tmp_path / "choice.keras")
    np.testing.assert_allclose(restored.predict(x, verbose=0), expected, atol=1e-5)
    folder = model.save_to_preset(tmp_path / "run")
    assert json.loads((folder / "config.json").read_text())["task"]["config"]["num_choices"] == 4
    again = BertMultipleChoice.from_preset(folder)
    np.testing.assert_allclose(again.predict(x, verbose=0), expected, atol=1e-5)


def test_bad_num_choices():
    with pytest.raises(ValueError, match="num_choices"):
        BertMultipleChoice(tiny_encoder(), num_choices=1)
