"""BertPretrainer: wiring of the heads, losses and metrics vs NumPy, compile defaults, presets."""

import keras
import numpy as np
import pytest

from keras_bert_app.models.bert_encoder import BertEncoder
from tests.models.graph_walk import feed_forward_matmuls
from keras_bert_app.models.bert_pretrainer import BertPretrainer

pytestmark = pytest.mark.all_backends

BATCH, LENGTH, PREDICTIONS, VOCABULARY = 4, 10, 3, 100


def _encoder():
    return BertEncoder(
        vocabulary_size=VOCABULARY, num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=64, dropout=0.0,
    )


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    x = {
        "token_ids": rng.integers(1, VOCABULARY, (BATCH, LENGTH)).astype("int32"),
        "segment_ids": (np.arange(LENGTH) >= 5).astype("int32")[None].repeat(BATCH, 0),
        "padding_mask": np.ones((BATCH, LENGTH), "int32"),
        "mask_positions": rng.integers(0, LENGTH, (BATCH, PREDICTIONS)).astype("int32"),
    }
    y = {"mlm": rng.integers(0, VOCABULARY, (BATCH, PREDICTIONS)).astype("int32"),
         "nsp": rng.integers(0, 2, (BATCH,)).astype("int32")}
    weights = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0]], "float32")
    return x, y, weights


def _numpy(value):
    return np.asarray(keras.ops.convert_to_numpy(value))


def _log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def test_outputs_are_the_heads_on_the_encoder_outputs():
    encoder = _encoder()
    pretrainer = BertPretrainer(encoder)
    x, _, _ = _batch()
    outputs = pretrainer(x)
    assert set(outputs) == {"mlm", "nsp"}
    assert tuple(outputs["mlm"].shape) == (BATCH, PREDICTIONS, VOCABULARY)
    assert tuple(outputs["nsp"].shape) == (BATCH, 2)
    encoded = encoder({k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")})
    np.testing.assert_allclose(
        _numpy(outputs["mlm"]),
        _numpy(pretrainer.masked_lm_head(encoded["sequence_output"], x["mask_positions"])),
        rtol=1e-5, atol=1e-5,
    )
    np.testing.assert_allclose(
        _numpy(outputs["nsp"]), _numpy(pretrainer.next_sentence_head(encoded["pooled_output"])),
        rtol=1e-5, atol=1e-5,
    )


def test_without_nsp_only_mlm_is_output_and_trained():
    pretrainer = BertPretrainer(_encoder(), next_sentence_prediction=False)
    x, y, weights = _batch()
    assert set(pretrainer(x)) == {"mlm"} and pretrainer.next_sentence_head is None
    pretrainer.compile()
    logs = pretrainer.evaluate(x, {"mlm": y["mlm"]}, sample_weight={"mlm": weights}, return_dict=True, verbose=0)
    assert "nsp_loss" not in logs and "mlm_accuracy" in logs


def test_losses_and_metrics_match_numpy_reference():
    pretrainer = BertPretrainer(_encoder())
    pretrainer.compile()
    x, y, weights = _batch()
    logits = {k: _numpy(v) for k, v in pretrainer(x).items()}
    mlm_cross_entropy = -np.take_along_axis(_log_softmax(logits["mlm"]), y["mlm"][..., None], -1)[..., 0]
    mlm_loss = (mlm_cross_entropy * weights).sum() / (weights.sum() + 1e-5)
    nsp_loss = -np.take_along_axis(_log_softmax(logits["nsp"]), y["nsp"][:, None], -1).mean()
    mlm_accuracy = ((logits["mlm"].argmax(-1) == y["mlm"]) * weights).sum() / weights.sum()
    nsp_accuracy = (logits["nsp"].argmax(-1) == y["nsp"]).mean()
    logs = pretrainer.evaluate(
        x, y, sample_weight={"mlm": weights, "nsp": np.ones(BATCH, "float32")},
        batch_size=BATCH, return_dict=True, verbose=0,
    )
    np.testing.assert_allclose(logs["mlm_loss"], mlm_loss, rtol=1e-4)
    np.testing.assert_allclose(logs["nsp_loss"], nsp_loss, rtol=1e-4)
    np.testing.assert_allclose(logs["loss"], mlm_loss + nsp_loss, rtol=1e-4)
    np.testing.assert_allclose(logs["mlm_accuracy"], mlm_accuracy, atol=1e-6)
    np.testing.assert_allclose(logs["nsp_accuracy"], nsp_accuracy, atol=1e-6)


def test_fit_on_batches_that_weight_only_mlm():
    tf = pytest.importorskip("tensorflow")
    pretrainer = BertPretrainer(_encoder())
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-2))
    x, y, weights = _batch()
    dataset = tf.data.Dataset.from_tensor_slices((x, y, {"mlm": weights})).batch(BATCH).repeat(6)
    history = pretrainer.fit(dataset, verbose=0)
    assert history.history["loss"][0] < 1.5 * np.log(VOCABULARY) + np.log(2)
    after = pretrainer.evaluate(dataset.take(1), return_dict=True, verbose=0)
    assert after["mlm_loss"] < np.log(VOCABULARY)  # learned below uniform guessing


def test_compile_without_arguments_is_the_paper_recipe():
    pretrainer = BertPretrainer(_encoder())
    pretrainer.compile()
    optimizer = pretrainer.optimizer
    assert isinstance(optimizer, keras.optimizers.AdamW)
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.999, 1e-6)
    assert optimizer.decoupled_weight_decay == 0.01 and optimizer.global_clipnorm == 1.0
    assert optimizer.get_config()["learning_rate"]["config"] == {
        "peak_learning_rate": 1e-4, "total_steps": 1_000_000, "warmup_steps": 10_000, "decay_from_warmup": False
    }


@pytest.mark.parametrize("next_sentence_prediction", [True, False])
def test_save_to_preset_and_from_preset_round_trip(tmp_path, next_sentence_prediction):
    pretrainer = BertPretrainer(_encoder(), next_sentence_prediction=next_sentence_prediction)
    x, _, _ = _batch()
    pretrainer.masked_lm_head.output_bias.assign(np.linspace(-1, 1, VOCABULARY).astype("float32"))
    expected = {k: _numpy(v) for k, v in pretrainer(x).items()}
    folder = pretrainer.save_to_preset(tmp_path / "preset")
    assert (folder / "model.weights.h5").is_file() and (folder / "pretrainer.weights.h5").is_file()
    restored = BertPretrainer.from_preset(folder, next_sentence_prediction=next_sentence_prediction)
    for name, value in restored(x).items():
        np.testing.assert_allclose(_numpy(value), expected[name], rtol=1e-5, atol=1e-5)


def test_config_round_trip():
    pretrainer = BertPretrainer(_encoder(), next_sentence_prediction=False)
    clone = BertPretrainer.from_config(pretrainer.get_config())
    assert clone.next_sentence_prediction is False
    assert clone.encoder.get_config()["hidden_dim"] == 16
    assert len(clone.weights) == len(pretrainer.weights)


def test_next_sentence_takes_the_whole_sequences_cls_row_not_a_second_computation():
    """Pretraining uses both outputs: the pooled output comes from `sequence_output`'s [CLS] row.

    A classifier's encoder computes the last block's [CLS] output apart (the
    rest of that block is then dropped from its step); where the masked LM
    needs every position anyway, that would be the [CLS] row computed twice.
    """
    if keras.config.backend() != "tensorflow":
        pytest.skip("Reads a TensorFlow graph.")
    import tensorflow as tf

    model = BertPretrainer(_encoder(), next_sentence_prediction=True)
    assert not model.encoder.transformer_layers[-1].first_apart
    assert BertEncoder(**_encoder().get_config()).transformer_layers[-1].first_apart  # a fresh encoder: apart
    x, _, _ = _batch()
    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in x}
    outputs = tf.function(lambda x: model(x, training=True)).get_concrete_function(spec).structured_outputs

    next_sentence = feed_forward_matmuls(outputs["nsp"], "transformer_layer_1")
    assert next_sentence == feed_forward_matmuls(outputs["mlm"], "transformer_layer_1")
    assert len(next_sentence) == 1
