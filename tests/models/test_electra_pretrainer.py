"""ElectraPretrainer: generator sizing, Gumbel-max sampling, labels, loss, gradients, presets."""

import json
import warnings

import keras
import numpy as np
import pytest
from keras import ops

import keras_bert_app as kba
from keras_bert_app import errors
from keras_bert_app.layers.replaced_token_sampler import ReplacedTokenSampler, scatter_positions
from keras_bert_app.models.electra_pretrainer import AUC_NAME, METRIC_NAMES, ElectraPretrainer, generator_config

pytestmark = pytest.mark.all_backends

VOCABULARY = 40
DISCRIMINATOR = dict(
    vocabulary_size=VOCABULARY, num_layers=1, num_heads=4, hidden_dim=32, intermediate_dim=64,
    max_sequence_length=32, embedding_dim=16, dropout=0.0,
)
MASK_ID = 4


def make_batch(batch=6, seq=10, predictions=3, seed=0):
    """Masked inputs, labels and weights as the pretraining datasets give them (last slot padding)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(predictions + 3, seq + 1, size=batch)
    padding_mask = (np.arange(seq)[None, :] < lengths[:, None]).astype("int32")
    token_ids = rng.integers(5, VOCABULARY, size=(batch, seq)).astype("int32") * padding_mask
    token_ids[:, 0] = 2
    positions = np.zeros((batch, predictions), "int32")
    weights = np.zeros((batch, predictions), "float32")
    for row in range(batch):
        positions[row, : predictions - 1] = np.sort(rng.choice(np.arange(1, lengths[row]), predictions - 1, replace=False))
        weights[row, : predictions - 1] = 1.0
    labels = np.where(weights > 0, np.take_along_axis(token_ids, positions, axis=1), 0).astype("int32")
    masked = token_ids.copy()
    for row in range(batch):
        masked[row, positions[row, weights[row] > 0]] = MASK_ID
    x = {"token_ids": masked, "segment_ids": np.zeros_like(masked), "padding_mask": padding_mask,
         "mask_positions": positions}
    return x, {"mlm": labels}, {"mlm": weights}, token_ids


def numpy(tensor):
    return ops.convert_to_numpy(tensor)


def test_generator_config_follows_the_official_recipe():
    small = dict(vocabulary_size=30522, num_layers=12, num_heads=4, hidden_dim=256, intermediate_dim=1024,
                 embedding_dim=128)
    config = generator_config(small, 0.25)
    assert (config["hidden_dim"], config["num_heads"], config["intermediate_dim"]) == (64, 1, 256)
    assert config["num_layers"] == 12 and config["embedding_dim"] == 128
    # bert_tiny: 2 heads x 1/4 is below one head: one head, 32 wide.
    tiny = dict(vocabulary_size=30522, num_layers=2, num_heads=2, hidden_dim=128, intermediate_dim=512)
    config = generator_config(tiny, 0.25)
    assert (config["hidden_dim"], config["num_heads"], config["intermediate_dim"], config["embedding_dim"]) == (32, 1, 128, 128)
    base = dict(vocabulary_size=30522, num_layers=12, num_heads=12, hidden_dim=768, intermediate_dim=3072)
    assert generator_config(base, 1 / 3)["hidden_dim"] == 256
    with pytest.raises(errors.ArgumentError, match="does not divide the discriminator's 12 attention heads"):
        generator_config(base, 0.3)
    with pytest.raises(errors.ArgumentError, match="generator_size must be > 0"):
        generator_config(base, 0)
    with pytest.warns(UserWarning, match="larger than the discriminator"):
        generator_config(base, 2.0)


def test_gumbel_max_draws_follow_the_softmax():
    probabilities = np.array([0.5, 0.3, 0.15, 0.05])
    logits = np.broadcast_to(np.log(probabilities), (1, 20000, 4)).astype("float32")
    sampler = ReplacedTokenSampler(seed=3)
    token_ids = np.zeros((1, 2), "int32")
    sampled, _ = sampler(logits, token_ids, np.zeros((1, 20000), "int32"))
    frequencies = np.bincount(numpy(sampled).ravel(), minlength=4) / 20000
    np.testing.assert_allclose(frequencies, probabilities, atol=0.015)
    # Temperature 0.5 squares the odds.
    sharp = ReplacedTokenSampler(temperature=0.5, seed=3)
    sampled, _ = sharp(logits, token_ids, np.zeros((1, 20000), "int32"))
    expected = probabilities**2 / np.sum(probabilities**2)
    np.testing.assert_allclose(np.bincount(numpy(sampled).ravel(), minlength=4) / 20000, expected, atol=0.015)


def test_scatter_writes_real_slots_only():
    token_ids = np.array([[2, 10, 11, 12, 13]], "int32")
    positions = np.array([[3, 1, 0]], "int32")  # last slot is padding (position 0)
    got = numpy(scatter_positions(token_ids, np.array([[30, 31, 32]]), positions))
    np.testing.assert_array_equal(got, [[2, 31, 11, 30, 13]])


def _pretrainer(**kwargs):
    keras.utils.set_random_seed(1)
    return ElectraPretrainer(kba.BertEncoder(**DISCRIMINATOR), seed=7, **kwargs)


def test_structure_shares_the_embedding_tables():
    pretrainer = _pretrainer()
    generator = pretrainer.generator
    assert generator.embeddings is pretrainer.encoder.embeddings is pretrainer.discriminator.embeddings
    assert (generator.hidden_dim, generator.num_heads, generator.intermediate_dim) == (8, 1, 16)
    assert tuple(generator.embedding_projection.kernel.shape) == (16, 8)
    ids = [id(v) for v in pretrainer.trainable_variables]
    assert len(ids) == len(set(ids))
    x, _, _, _ = make_batch()
    outputs = pretrainer(x)
    assert tuple(outputs["mlm"].shape) == (6, 3, VOCABULARY)
    assert tuple(outputs["sampled_ids"].shape) == (6, 3)
    assert tuple(outputs["rtd"].shape) == (6, 10)


def _force_generator_token(pretrainer, token):
    bias = np.zeros(VOCABULARY, "float32")
    bias[token] = 1e4
    pretrainer.generator_head.output_bias.assign(bias)


def test_a_sampled_original_counts_as_original():
    pretrainer = _pretrainer()
    x, y, weights, original = make_batch()
    # The generator samples token 9 everywhere: replaced exactly at the real masked positions, except
    # where the original was 9 already.
    _force_generator_token(pretrainer, 9)
    y_pred = pretrainer(x)
    np.testing.assert_array_equal(numpy(y_pred["sampled_ids"]), 9)
    replaced = numpy(pretrainer._replaced_labels(x, ops.convert_to_tensor(y["mlm"]), ops.convert_to_tensor(weights["mlm"]), y_pred["sampled_ids"]))
    expected = np.zeros_like(original, "float32")
    for row in range(len(original)):
        for slot in np.flatnonzero(weights["mlm"][row]):
            position = x["mask_positions"][row, slot]
            expected[row, position] = float(original[row, position] != 9)
    np.testing.assert_array_equal(replaced, expected)
    assert expected.sum() > 0 and expected[:, 0].sum() == 0
    # Sampling the original token at every masked position: nothing counts as replaced.
    y_same = {"mlm": np.where(weights["mlm"] > 0, 9, 0).astype("int32")}
    none_replaced = numpy(pretrainer._replaced_labels(x, ops.convert_to_tensor(y_same["mlm"]), ops.convert_to_tensor(weights["mlm"]), y_pred["sampled_ids"]))
    assert none_replaced.sum() == 0


def test_loss_is_generator_mlm_plus_weighted_replaced_token_loss():
    pretrainer = _pretrainer(rtd_weight=50.0)
    x, y, weights, original = make_batch()
    _force_generator_token(pretrainer, 9)  # known replacements
    y_pred = pretrainer(x)
    mlm = numpy(y_pred["mlm"]).astype("float64")
    log_probs = mlm - np.log(np.exp(mlm - mlm.max(-1, keepdims=True)).sum(-1, keepdims=True)) - mlm.max(-1, keepdims=True)
    w = weights["mlm"]
    ce = -np.take_along_axis(log_probs, y["mlm"][..., None], axis=-1)[..., 0]
    mlm_loss = (ce * w).sum() / w.sum()
    labels = np.zeros_like(original, "float64")
    for row in range(len(original)):
        for slot in np.flatnonzero(w[row]):
            position = x["mask_positions"][row, slot]
            labels[row, position] = float(original[row, position] != 9)
    logits = numpy(y_pred["rtd"]).astype("float64")
    bce = np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))
    real = x["padding_mask"].astype("float64")
    rtd_loss = (bce * real).sum() / real.sum()
    loss = pretrainer.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=weights)
    np.testing.assert_allclose(float(numpy(loss)), mlm_loss + 50.0 * rtd_loss, rtol=1e-5)


def test_no_gradient_flows_from_the_discriminator_into_the_generator_and_fit_logs_both_models_figures():
    """With the masked-LM weights at 0 only the replaced-token loss trains: the generator's own weights stay put
    (Adam moves any weight with a gradient, however small, by about its rate). Then `fit` on real weights logs
    every figure of both models. Both fits share one compiled train step."""
    import tensorflow as tf

    pretrainer = _pretrainer()
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-3))  # the default AdamW traces slowly
    x, y, weights, _ = make_batch()
    y = {**y, "nsp": np.zeros(6, "int32")}
    zero_weights = {"mlm": np.zeros_like(weights["mlm"])}
    shared = {id(v) for v in pretrainer.encoder.embeddings.weights}
    generator_own = [v for v in pretrainer.generator.trainable_variables + pretrainer.generator_head.trainable_variables
                     if id(v) not in shared]
    before = [numpy(v).copy() for v in generator_own]
    discriminator_before = numpy(pretrainer.discriminator_head.dense.kernel).copy()
    embeddings_before = numpy(pretrainer.encoder.token_embedding.embeddings).copy()
    pretrainer.fit(tf.data.Dataset.from_tensors((x, y, zero_weights)), epochs=1, verbose=0)
    for variable, value in zip(generator_own, before):
        np.testing.assert_array_equal(numpy(variable), value, err_msg=variable.path)
    assert not np.allclose(numpy(pretrainer.discriminator_head.dense.kernel), discriminator_before)
    assert not np.allclose(numpy(pretrainer.encoder.token_embedding.embeddings), embeddings_before)

    dataset = tf.data.Dataset.from_tensors((x, y, weights)).repeat(2)
    history = pretrainer.fit(dataset, epochs=2, verbose=0)
    for name in ("loss", *METRIC_NAMES, AUC_NAME):
        assert name in history.history, name
        assert np.isfinite(history.history[name]).all()
    assert 0 <= history.history["discriminator_precision"][-1] <= 1


def test_preset_round_trip_and_generator_folder(tmp_path):
    pretrainer = _pretrainer(rtd_weight=20.0)
    x, _, _, _ = make_batch()
    pretrainer.save_to_preset(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["electra_pretrainer"]["config"]["rtd_weight"] == 20.0
    assert config["encoder"]["embedding_dim"] == 16
    restored = ElectraPretrainer.from_preset(str(tmp_path))
    assert restored.rtd_weight == 20.0 and restored.generator.embeddings is restored.encoder.embeddings
    for ours, theirs in zip(pretrainer.weights, restored.weights):
        np.testing.assert_array_equal(numpy(theirs), numpy(ours), err_msg=ours.path)
    # The discriminator alone is an encoder preset; the generator alone a masked LM.
    encoder = kba.BertEncoder.from_preset(str(tmp_path))
    encoder_inputs = {k: v for k, v in x.items() if k != "mask_positions"}
    np.testing.assert_allclose(
        numpy(encoder(encoder_inputs)["sequence_output"]),
        numpy(pretrainer.encoder(encoder_inputs)["sequence_output"]), atol=1e-6,
    )
    generator = kba.BertPretrainer.from_preset(str(tmp_path / "generator"), next_sentence_prediction=False)
    np.testing.assert_allclose(numpy(generator(x)["mlm"]), numpy(pretrainer(x)["mlm"]), atol=1e-5)
    with pytest.raises(errors.ArgumentError, match="generator_size"):
        ElectraPretrainer.from_preset(str(tmp_path), generator_size=0.5)


def test_from_an_encoder_preset_builds_a_fresh_generator(tmp_path):
    kba.BertEncoder(**DISCRIMINATOR).save_to_preset(tmp_path)
    with pytest.warns(UserWarning, match="fresh weights"):
        pretrainer = ElectraPretrainer.from_preset(str(tmp_path), generator_size=0.5)
    assert pretrainer.generator.hidden_dim == 16


def test_config_round_trip():
    pretrainer = _pretrainer(rtd_weight=10.0, temperature=0.5)
    clone = ElectraPretrainer.from_config(pretrainer.get_config())
    assert (clone.rtd_weight, clone.temperature) == (10.0, 0.5)
    assert clone.generator.embeddings is clone.encoder.embeddings
    assert clone.count_params() == pretrainer.count_params()


def test_bad_generators_are_clear_errors():
    discriminator = kba.BertEncoder(**DISCRIMINATOR)
    unshared = kba.BertEncoder(**{**DISCRIMINATOR, "hidden_dim": 8, "num_heads": 1, "intermediate_dim": 16})
    with pytest.raises(errors.ArgumentError, match="must share the discriminator's embeddings"):
        ElectraPretrainer(discriminator, generator=unshared)
    config = {**generator_config(discriminator.get_config()), "embedding_dim": 8}
    with pytest.raises(errors.ArgumentError, match="embedding width 8 differs from the discriminator's 16"):
        ElectraPretrainer(discriminator, generator=config)
    with pytest.raises(errors.ArgumentError, match="does not divide"):
        ElectraPretrainer(discriminator, generator_size=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ElectraPretrainer(discriminator, generator_size=0.5)


def test_the_sampler_state_is_saved_with_the_weights(tmp_path):
    """A model restored from a weights file draws what the saved one would have drawn next (resuming runs)."""
    pretrainer = _pretrainer()
    x, _, _, _ = make_batch()
    pretrainer(x)  # advance the random state
    path = str(tmp_path / "model.weights.h5")
    pretrainer.save_weights(path)
    expected = numpy(pretrainer(x)["sampled_ids"])
    restored = _pretrainer()
    restored.load_weights(path)
    np.testing.assert_array_equal(numpy(restored(x)["sampled_ids"]), expected)


def test_the_discriminator_reads_the_sampled_tokens_at_the_masked_positions():
    """`rtd` is the head on the encoder run over the masked input with each real slot's sampled token written in."""
    pretrainer = _pretrainer(temperature=100.0)  # a near-uniform generator: most slots get a new token
    x, _, weights, _ = make_batch()
    y_pred = pretrainer(x)
    sampled = numpy(y_pred["sampled_ids"])
    corrupted = x["token_ids"].copy()
    for row in range(len(corrupted)):
        real = weights["mlm"][row] > 0
        corrupted[row, x["mask_positions"][row, real]] = sampled[row, real]
    assert (corrupted != x["token_ids"]).sum() > 0.8 * weights["mlm"].sum()
    encoded = pretrainer.encoder(
        {"token_ids": corrupted, "segment_ids": x["segment_ids"], "padding_mask": x["padding_mask"]}
    )["sequence_output"]
    np.testing.assert_allclose(numpy(y_pred["rtd"]), numpy(pretrainer.discriminator_head(encoded)), atol=1e-5)


def test_discriminator_metrics_threshold_the_logit_at_zero():
    pretrainer = _pretrainer()
    x, y, weights, _ = make_batch()
    _force_generator_token(pretrainer, 9)
    y_pred = dict(pretrainer(x))
    replaced = numpy(pretrainer._replaced_labels(
        x, ops.convert_to_tensor(y["mlm"]), ops.convert_to_tensor(weights["mlm"]), y_pred["sampled_ids"]))
    real = x["padding_mask"] > 0
    guessed = np.zeros_like(replaced)
    guessed[:, 1::2] = 1.0  # flag every other token
    y_pred["rtd"] = ops.convert_to_tensor(np.where(guessed > 0, 0.5, -0.5).astype("float32"))
    for tracker in pretrainer.trackers.values():
        tracker.reset_state()
    got = {k: float(v) for k, v in pretrainer.compute_metrics(x, y, y_pred, weights).items()}
    truth, flagged = replaced[real] > 0, guessed[real] > 0
    np.testing.assert_allclose(got["discriminator_recall"], (truth & flagged).sum() / truth.sum(), rtol=1e-6)
    np.testing.assert_allclose(got["discriminator_precision"], (truth & flagged).sum() / flagged.sum(), rtol=1e-6)
    np.testing.assert_allclose(got["discriminator_accuracy"], (truth == flagged).mean(), rtol=1e-6)
    np.testing.assert_allclose(got["replaced_token_rate"], truth.mean(), rtol=1e-6)


def test_discriminator_auc_is_the_roc_auc_over_real_tokens():
    """`discriminator_auc` (the official code's `disc_auc`) against scikit-learn's ROC AUC, padding left out."""
    from sklearn.metrics import roc_auc_score

    pretrainer = _pretrainer()
    x, y, weights, _ = make_batch(batch=12, seq=16, predictions=6, seed=3)
    # What a near-uniform generator samples (about as many replaced as kept), drawn here: the metric under test
    # reads the samples and the logits, and a forward pass at a new shape costs JAX seconds of compiling.
    rng = np.random.default_rng(3)
    y_pred = {"mlm": ops.convert_to_tensor(rng.normal(size=(12, 6, VOCABULARY)).astype("float32")),
              "sampled_ids": ops.convert_to_tensor(rng.integers(5, VOCABULARY, size=(12, 6)).astype("int32"))}
    replaced = numpy(pretrainer._replaced_labels(
        x, ops.convert_to_tensor(y["mlm"]), ops.convert_to_tensor(weights["mlm"]), y_pred["sampled_ids"]))
    real = x["padding_mask"] > 0
    assert not real.all()
    rng = np.random.default_rng(0)
    logits = rng.normal(size=replaced.shape) + 1.5 * replaced  # informative, not perfect
    logits[~real] = 5.0 * (1 - replaced[~real])  # padding scored wrong on purpose: it must not count
    y_pred["rtd"] = ops.convert_to_tensor(logits.astype("float32"))
    for tracker in pretrainer.trackers.values():
        tracker.reset_state()
    got = float(pretrainer.compute_metrics(x, y, y_pred, weights)["discriminator_auc"])
    expected = roc_auc_score(replaced[real], logits[real])
    assert 0.6 < expected < 0.95
    assert got == pytest.approx(expected, abs=0.01)  # 200 thresholds, as the official code


@pytest.mark.large  # a fit: ~15 s idle, minutes on the busy 2-core CI machine
def test_replacements_the_discriminator_can_see_are_learned():
    """Originals use tokens 5-19, the generator samples 20-39: a working discriminator flags them within steps.

    The controlled check of the whole loop (sampling, labels, loss, gradients into the discriminator, metrics
    at logit 0): detection needs no context here, only the token's identity. Recall per epoch of 8 steps
    was 0.04, 0.90, 1.00 (TensorFlow).
    """
    import tensorflow as tf

    pretrainer = _pretrainer()
    bias = np.zeros(VOCABULARY, "float32")
    bias[20:] = 1e4  # the generator samples (near) uniformly among 20-39
    pretrainer.generator_head.output_bias.assign(bias)
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-2), jit_compile=False)
    batches = []
    for seed in range(8):
        x, _, weights, original = make_batch(batch=8, seq=12, predictions=4, seed=seed)
        low = np.where(original >= 5, 5 + original % 15, original).astype("int32")  # originals in 5-19
        masked = low.copy()
        for row in range(len(masked)):
            masked[row, x["mask_positions"][row, weights["mlm"][row] > 0]] = MASK_ID
        labels = np.where(weights["mlm"] > 0, np.take_along_axis(low, x["mask_positions"], 1), 0).astype("int32")
        batches.append(({**x, "token_ids": masked}, {"mlm": labels}, weights))
    dataset = tf.data.Dataset.from_tensor_slices(
        tuple(
            {k: np.stack([b[i][k] for b in batches]) for k in batches[0][i]} for i in range(3)
        )
    )
    history = pretrainer.fit(dataset.repeat(), steps_per_epoch=8, epochs=3, verbose=0)
    assert history.history["replaced_token_rate"][-1] > 0.2
    assert history.history["discriminator_recall"][0] < history.history["discriminator_recall"][-1]
    assert history.history["discriminator_recall"][-1] > 0.9
    assert history.history["discriminator_precision"][-1] > 0.9
