"""Original google-research/electra TF checkpoints (both models of the pair in one), against transformers."""

import json

import keras
import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.convert import detect, google
from keras_bert_app.convert.weight_map import ConversionError
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_pretrainer import BertPretrainer
from keras_bert_app.models.electra_discriminator import ElectraDiscriminator
from tests.convert import electra_checkpoints as checkpoints

# Tests of our models' outputs run on every backend (`all_backends`); reading and writing files, on TensorFlow.

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

TOLERANCE = 1e-4
POSITIONS = np.array([[1, 2, 3], [4, 5, 1]], "int32")
# Hidden sizes of 64 and 32: one head each by the official rule max(1, hidden // 64), so no config file is needed.
DISCRIMINATOR = dict(hidden_size=64, num_attention_heads=1, intermediate_size=128)
GENERATOR = dict(hidden_size=32, num_attention_heads=1, intermediate_size=64)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """HF discriminator and generator sharing their embeddings, and the original checkpoint holding both."""
    discriminator = checkpoints.huggingface_model("ElectraForPreTraining", seed=1, **DISCRIMINATOR)
    generator = checkpoints.huggingface_model("ElectraForMaskedLM", seed=2, **GENERATOR)
    generator.electra.embeddings.load_state_dict(discriminator.electra.embeddings.state_dict())
    variables = checkpoints.original_variables(discriminator, generator)
    folder = checkpoints.write_original(tmp_path_factory.mktemp("original") / "electra_tiny", variables)
    return discriminator, generator, variables, folder


def _numpy(value):
    return np.asarray(keras.ops.convert_to_numpy(value))


def test_variable_names_are_the_original_scopes(pair):
    _, _, variables, folder = pair
    for name in ("electra/embeddings/word_embeddings", "electra/embeddings_project/kernel",
                 "electra/encoder/layer_1/attention/self/query/kernel", "generator/embeddings_project/kernel",
                 "generator/encoder/layer_0/output/LayerNorm/gamma", "discriminator_predictions/dense_1/kernel",
                 "generator_predictions/output_bias", "generator_predictions/LayerNorm/beta"):
        assert name in variables, name
    assert detect.detect_format(folder) == "google"
    config = detect.read_config(folder)
    assert config["encoder"]["embedding_dim"] == 16 and config["encoder"]["hidden_dim"] == 64
    assert config["encoder"]["num_heads"] == 1 and config["encoder"]["activation"] == "gelu"
    assert config["generator"]["hidden_dim"] == 32 and config["generator"]["intermediate_dim"] == 64


@pytest.mark.all_backends
def test_pair_matches_transformers_through_the_command_line(pair, tmp_path, capsys):
    from keras_bert_app.models.electra_pretrainer import ElectraPretrainer

    discriminator, generator, _, folder = pair
    assert cli.main(["convert", "--from", "google", str(folder), "--output", str(tmp_path / "preset")]) == 0
    assert "generator in" in capsys.readouterr().out
    batch = checkpoints.inputs()
    real = batch["padding_mask"].astype(bool)
    expected = checkpoints.run_huggingface(discriminator, batch)

    ours = ElectraDiscriminator.from_preset(tmp_path / "preset")
    np.testing.assert_allclose(
        _numpy(ours.encoder(batch)["sequence_output"])[real], expected.hidden_states[-1].numpy()[real], atol=TOLERANCE
    )
    np.testing.assert_allclose(_numpy(ours(batch)["rtd"])[real], expected.logits.numpy()[real], atol=TOLERANCE)

    generator_logits = checkpoints.run_huggingface(generator, batch).logits.numpy()
    generator_logits = np.take_along_axis(generator_logits, POSITIONS[..., None], axis=1)
    pretrainer = ElectraPretrainer.from_preset(tmp_path / "preset")
    assert pretrainer.generator.embeddings is pretrainer.encoder.embeddings
    np.testing.assert_allclose(
        _numpy(pretrainer({**batch, "mask_positions": POSITIONS})["mlm"]), generator_logits, atol=TOLERANCE
    )
    alone = BertPretrainer.from_preset(tmp_path / "preset" / "generator")
    np.testing.assert_allclose(_numpy(alone({**batch, "mask_positions": POSITIONS})["mlm"]), generator_logits, atol=TOLERANCE)
    description = json.loads((tmp_path / "preset" / "generator" / "config.json").read_text())["description"]
    assert "(generator)" in description


@pytest.mark.all_backends
def test_release_folder_is_a_preset_as_it_is(pair):
    """`from_preset` reads the original folder directly (the discriminator, its head included)."""
    discriminator, _, _, folder = pair
    batch = checkpoints.inputs()
    real = batch["padding_mask"].astype(bool)
    logits = _numpy(ElectraDiscriminator.from_preset(folder)(batch)["rtd"])
    np.testing.assert_allclose(logits[real], checkpoints.run_huggingface(discriminator, batch).logits.numpy()[real], atol=TOLERANCE)
    assert BertEncoder.from_preset(folder).embedding_projection is not None


def test_heads_and_activation_from_an_optional_config(pair, tmp_path):
    _, _, variables, _ = pair
    folder = checkpoints.write_original(tmp_path / "with_config", variables)
    (folder / "bert_config.json").write_text(json.dumps({"num_attention_heads": 4, "hidden_act": "relu"}))
    config = detect.read_config(folder)
    assert config["encoder"]["num_heads"] == 4 and config["encoder"]["activation"] == "relu"
    assert config["generator"]["num_heads"] == 1  # the generator keeps the official rule


def test_generator_width_that_disagrees_is_one_error(pair, tmp_path, capsys):
    _, _, variables, _ = pair
    wrong = dict(variables)
    wrong["generator/embeddings_project/kernel"] = np.zeros((8, 32), "float32")
    folder = checkpoints.write_original(tmp_path / "wrong", wrong)
    assert cli.main(["convert", "--from", "google", str(folder), "--output", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0
    assert "electra_tiny" in error and "'generator/embeddings_project/kernel': 8" in error and ": 16)" in error
    with pytest.raises(ConversionError, match="embedding width"):
        google.read_config(folder)
