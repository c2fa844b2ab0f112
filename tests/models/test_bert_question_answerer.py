import keras
import numpy as np
import pytest

from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_question_answerer import BertQuestionAnswerer
from tests.model_battery import run_model_battery

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
    mask[:, -2:] = 0
    ids[mask == 0] = 0
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}


def test_span_logits_are_a_dense_of_two_on_every_token():
    encoder = tiny_encoder()
    model = BertQuestionAnswerer(encoder)
    x = batch()
    outputs = model(x)
    sequence = keras.ops.convert_to_numpy(encoder(x)["sequence_output"])
    kernel, bias = (keras.ops.convert_to_numpy(w) for w in model.get_layer("span_logits").weights)
    reference = sequence @ kernel + bias  # (batch, seq, 2)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(outputs["start_logits"]), reference[..., 0], atol=1e-5)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(outputs["end_logits"]), reference[..., 1], atol=1e-5)


def test_loss_is_mean_of_start_and_end_cross_entropy():
    model = BertQuestionAnswerer(tiny_encoder())
    model.compile()
    x = batch()
    labels = {"start_logits": np.array([1, 2, 3, 0]), "end_logits": np.array([2, 2, 5, 0])}
    outputs = model.predict(x, verbose=0)

    def cross_entropy(logits, positions):
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        return -np.mean(log_probs[np.arange(len(positions)), positions])

    expected = 0.5 * (
        cross_entropy(outputs["start_logits"], labels["start_logits"])
        + cross_entropy(outputs["end_logits"], labels["end_logits"])
    )
    logs = model.evaluate(x, labels, verbose=0, return_dict=True)
    np.testing.assert_allclose(logs["loss"], expected, rtol=1e-4)


def test_battery(tmp_path):
    run_model_battery(
        lambda: BertQuestionAnswerer(tiny_encoder()), batch(), "start_logits", tmp_path,
        variable_length_inputs=[batch(seq=5), batch(seq=17)],
    )


def test_fit_and_preset_round_trip(tmp_path):
    model = BertQuestionAnswerer(tiny_encoder())
    x = batch()  # the shape of the other tests' eager calls (JAX compiles each eager op once per shape)
    labels = {"start_logits": np.arange(4) % 6, "end_logits": np.arange(4) % 6 + 1}
    model.compile(learning_rate=1e-2)
    history = model.fit(x, labels, epochs=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    expected = model.predict(x, verbose=0)
    folder = model.save_to_preset(tmp_path / "run")
    again = BertQuestionAnswerer.from_preset(folder)
    for name, value in again.predict(x, verbose=0).items():
        np.testing.assert_allclose(value, expected[name], atol=1e-5)
    # A plain encoder preset gets a fresh span head on the saved encoder.
    fresh = BertQuestionAnswerer.from_preset(model.encoder.save_to_preset(tmp_path / "encoder"))
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(fresh.encoder(x)["sequence_output"]),
        keras.ops.convert_to_numpy(model.encoder(x)["sequence_output"]), atol=1e-5,
    )
