"""HF transformers ELECTRA checkpoints: parity with transformers on every backend, round trips, pairs, bad input."""

import json

import keras
import numpy as np
import pytest

from keras_bert_app import cli, errors
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


def _numpy(value):
    return np.asarray(keras.ops.convert_to_numpy(value))


def _convert(source, output, *extra):
    assert cli.main(["convert", "--from", "huggingface", str(source), "--output", str(output), *extra]) == 0
    return output


@pytest.mark.all_backends
@pytest.mark.parametrize("embedding_size", [16, 32], ids=["factorized", "unfactorized"])
def test_discriminator_matches_transformers(tmp_path, embedding_size, capsys):
    """ElectraForPreTraining -> our preset: sequence output as ElectraModel's, logits as ElectraForPreTraining's."""
    reference = checkpoints.huggingface_model("ElectraForPreTraining", embedding_size=embedding_size)
    source = checkpoints.save_huggingface(reference, tmp_path / "hf")
    preset = _convert(source, tmp_path / "preset")
    assert "with pretraining heads" in capsys.readouterr().out
    config = json.loads((preset / "config.json").read_text())
    assert config["architecture"] == "electra"
    assert config["encoder"].get("embedding_dim") == (16 if embedding_size == 16 else None)

    discriminator = ElectraDiscriminator.from_preset(preset)
    assert (discriminator.encoder.embedding_projection is None) == (embedding_size == 32)
    batch = checkpoints.inputs()
    expected = checkpoints.run_huggingface(reference, batch)
    real = batch["padding_mask"].astype(bool)
    sequence = _numpy(discriminator.encoder(batch)["sequence_output"])
    np.testing.assert_allclose(sequence[real], expected.hidden_states[-1].numpy()[real], atol=TOLERANCE)
    logits = _numpy(discriminator(batch)["rtd"])
    np.testing.assert_allclose(logits[real], expected.logits.numpy()[real], atol=TOLERANCE)
    # The encoder alone (as every task model loads it) is the same encoder.
    encoder = BertEncoder.from_preset(preset)
    np.testing.assert_allclose(_numpy(encoder(batch)["sequence_output"])[real], sequence[real], atol=1e-6)


@pytest.mark.all_backends
def test_encoder_matches_electra_model(tmp_path):
    """ElectraModel (no prefix, no head) -> an encoder-only preset."""
    reference = checkpoints.huggingface_model("ElectraModel")
    source = checkpoints.save_huggingface(reference, tmp_path / "hf")
    preset = _convert(source, tmp_path / "preset")
    assert not (preset / "discriminator.weights.h5").exists()
    encoder = BertEncoder.from_preset(preset)
    batch = checkpoints.inputs()
    real = batch["padding_mask"].astype(bool)
    expected = checkpoints.run_huggingface(reference, batch)
    outputs = encoder(batch)
    np.testing.assert_allclose(_numpy(outputs["sequence_output"])[real], expected.last_hidden_state.numpy()[real], atol=TOLERANCE)
    for ours, theirs in zip(outputs["encoder_outputs"], expected.hidden_states[1:]):
        np.testing.assert_allclose(_numpy(ours)[real], theirs.numpy()[real], atol=TOLERANCE)


@pytest.mark.all_backends
def test_generator_matches_transformers(tmp_path):
    """ElectraForMaskedLM -> a masked-LM preset whose logits are transformers'."""
    reference = checkpoints.huggingface_model("ElectraForMaskedLM", **checkpoints.GENERATOR)
    source = checkpoints.save_huggingface(reference, tmp_path / "hf")
    preset = _convert(source, tmp_path / "preset")
    generator = BertPretrainer.from_preset(preset)
    assert generator.next_sentence_head is None
    assert generator.encoder.embedding_dim == 16 and generator.encoder.hidden_dim == 8
    batch = checkpoints.inputs()
    logits = _numpy(generator({**batch, "mask_positions": POSITIONS})["mlm"])
    expected = checkpoints.run_huggingface(reference, batch).logits.numpy()
    np.testing.assert_allclose(logits, np.take_along_axis(expected, POSITIONS[..., None], axis=1), atol=TOLERANCE)


@pytest.mark.all_backends
@pytest.mark.parametrize(
    "architecture, config",
    [("ElectraForPreTraining", {}), ("ElectraForMaskedLM", checkpoints.GENERATOR), ("ElectraModel", {"embedding_size": 32})],
    ids=["discriminator", "generator", "encoder"],
)
def test_round_trip_loads_in_transformers_with_equal_outputs(tmp_path, architecture, config):
    """HF -> ours -> HF (`convert --to huggingface`): transformers loads it, same class, same weights and outputs."""
    reference = checkpoints.huggingface_model(architecture, **config)
    source = checkpoints.save_huggingface(reference, tmp_path / "hf")
    preset = _convert(source, tmp_path / "preset")
    assert cli.main(["convert", "--to", "huggingface", str(preset), "--output", str(tmp_path / "back")]) == 0
    written = json.loads((tmp_path / "back" / "config.json").read_text())
    assert written["architectures"] == [architecture] and written["model_type"] == "electra"
    reloaded = getattr(transformers, architecture).from_pretrained(str(tmp_path / "back")).eval()
    state = reloaded.state_dict()
    for name, value in reference.state_dict().items():
        np.testing.assert_array_equal(state[name].numpy(), value.numpy(), err_msg=name)
    batch = checkpoints.inputs()
    before, after = checkpoints.run_huggingface(reference, batch), checkpoints.run_huggingface(reloaded, batch)
    # Equal weights; torch's CPU kernels may still round the two modules' outputs 1 ulp apart.
    np.testing.assert_allclose(after.hidden_states[-1].numpy(), before.hidden_states[-1].numpy(), rtol=0, atol=1e-6)
    if architecture != "ElectraModel":
        np.testing.assert_allclose(after.logits.numpy(), before.logits.numpy(), rtol=0, atol=1e-6)


@pytest.mark.all_backends
def test_pair_becomes_an_electra_pretrainer_preset(tmp_path):
    """An HF discriminator + generator pair -> the preset `pretrain --objective electra` writes and reads."""
    from keras_bert_app.models.electra_pretrainer import ElectraPretrainer

    discriminator = checkpoints.huggingface_model("ElectraForPreTraining", seed=1)
    generator = checkpoints.huggingface_model("ElectraForMaskedLM", seed=2, **checkpoints.GENERATOR)
    with torch.no_grad():  # the released pairs share their embeddings
        for name in ("word_embeddings", "position_embeddings", "token_type_embeddings", "LayerNorm"):
            for key, value in getattr(discriminator.electra.embeddings, name).state_dict().items():
                getattr(generator.electra.embeddings, name).state_dict()[key].copy_(value)
    source = checkpoints.save_huggingface(discriminator, tmp_path / "discriminator")
    generator_source = checkpoints.save_huggingface(generator, tmp_path / "generator")
    preset = _convert(source, tmp_path / "preset", "--generator", str(generator_source))
    assert (preset / "generator" / "config.json").is_file() and (preset / "generator" / "vocab.txt").is_file()

    batch = checkpoints.inputs()
    pretrainer = ElectraPretrainer.from_preset(preset)
    logits = _numpy(pretrainer({**batch, "mask_positions": POSITIONS})["mlm"])
    expected = checkpoints.run_huggingface(generator, batch).logits.numpy()
    np.testing.assert_allclose(logits, np.take_along_axis(expected, POSITIONS[..., None], axis=1), atol=TOLERANCE)
    np.testing.assert_allclose(
        _numpy(pretrainer.discriminator_head.dense_prediction.kernel),
        discriminator.discriminator_predictions.dense_prediction.weight.detach().numpy().T,
    )
    alone = BertPretrainer.from_preset(preset / "generator")  # the generator's own preset
    np.testing.assert_allclose(_numpy(alone({**batch, "mask_positions": POSITIONS})["mlm"]), logits, atol=1e-5)
    rtd = _numpy(ElectraDiscriminator.from_preset(preset)(batch)["rtd"])
    real = batch["padding_mask"].astype(bool)
    np.testing.assert_allclose(rtd[real], checkpoints.run_huggingface(discriminator, batch).logits.numpy()[real], atol=TOLERANCE)

    # Converting the discriminator alone over it (--overwrite) leaves nothing of the pair behind.
    _convert(source, preset, "--overwrite")
    assert not (preset / "generator").exists() and not (preset / "electra_pretrainer.weights.h5").exists()
    assert "electra_pretrainer" not in json.loads((preset / "config.json").read_text())


def test_pair_whose_embedding_values_differ_keeps_the_discriminators_with_a_warning(tmp_path):
    from keras_bert_app.convert.checkpoint import convert_checkpoint
    from keras_bert_app.models.electra_pretrainer import ElectraPretrainer

    discriminator = checkpoints.huggingface_model("ElectraForPreTraining", seed=1)
    source = checkpoints.save_huggingface(discriminator, tmp_path / "discriminator")
    generator = checkpoints.save_huggingface(
        checkpoints.huggingface_model("ElectraForMaskedLM", seed=2, **checkpoints.GENERATOR), tmp_path / "generator"
    )
    with pytest.warns(UserWarning, match="generator's embedding tables differ"):
        convert_checkpoint(source, tmp_path / "preset", generator=generator)
    pretrainer = ElectraPretrainer.from_preset(tmp_path / "preset")
    np.testing.assert_array_equal(
        _numpy(pretrainer.generator.token_embedding.embeddings),
        discriminator.electra.embeddings.word_embeddings.weight.detach().numpy(),
    )


def test_pair_with_disagreeing_embedding_widths_is_one_error(tmp_path, capsys):
    discriminator = checkpoints.save_huggingface(checkpoints.huggingface_model("ElectraForPreTraining"), tmp_path / "d")
    generator = checkpoints.save_huggingface(
        checkpoints.huggingface_model("ElectraForMaskedLM", **{**checkpoints.GENERATOR, "embedding_size": 8}), tmp_path / "g"
    )
    capsys.readouterr()  # transformers' progress bars
    assert cli.main(["convert", "--from", "huggingface", str(discriminator), "--output", str(tmp_path / "out"),
                     "--generator", str(generator)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0
    assert str(generator / "config.json") in error and "'embedding_size' is 8; expected 16" in error
    with pytest.raises(errors.DataError, match="embedding_size"):
        from keras_bert_app.convert.checkpoint import convert_checkpoint

        convert_checkpoint(discriminator, tmp_path / "out2", generator=generator)


def test_unknown_architecture_is_one_error(tmp_path, capsys):
    reference = checkpoints.huggingface_model("ElectraModel")
    source = checkpoints.save_huggingface(reference, tmp_path / "hf")
    config = json.loads((source / "config.json").read_text())
    (source / "config.json").write_text(json.dumps({**config, "architectures": ["ElectraForCausalLM"]}))
    capsys.readouterr()  # transformers' progress bars
    assert cli.main(["convert", "--from", "huggingface", str(source), "--output", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0
    assert str(source / "config.json") in error and "'architectures'" in error and "ElectraForCausalLM" in error
    with pytest.raises(ConversionError):
        from keras_bert_app.convert import detect

        detect.read_config(source)


def test_untied_generator_output_is_refused(tmp_path):
    from safetensors.numpy import load_file, save_file

    source = checkpoints.save_huggingface(
        checkpoints.huggingface_model("ElectraForMaskedLM", **checkpoints.GENERATOR), tmp_path / "hf"
    )
    tensors = load_file(str(source / "model.safetensors"))
    tensors["generator_lm_head.weight"] = tensors["electra.embeddings.word_embeddings.weight"] + 1
    save_file(tensors, str(source / "model.safetensors"))
    with pytest.raises(ConversionError, match="'generator_lm_head.weight' differs"):
        from keras_bert_app.convert.checkpoint import convert_checkpoint

        convert_checkpoint(source, tmp_path / "out")


def test_generator_whose_head_activation_differs_is_refused(tmp_path, capsys):
    """transformers' generator head applies the exact GELU whatever `hidden_act` says; ours the encoder's."""
    reference = checkpoints.huggingface_model("ElectraForMaskedLM", **{**checkpoints.GENERATOR, "hidden_act": "relu"})
    source = checkpoints.save_huggingface(reference, tmp_path / "hf")
    capsys.readouterr()  # transformers' progress bars
    assert cli.main(["convert", "--from", "huggingface", str(source), "--output", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0
    assert str(source / "config.json") in error and "field 'hidden_act' is 'relu'; expected 'gelu'" in error
    batch = checkpoints.inputs()
    real = batch["padding_mask"].astype(bool)
    expected = checkpoints.run_huggingface(reference.electra, batch).last_hidden_state.numpy()
    ours = _numpy(BertEncoder.from_preset(source)(batch)["sequence_output"])  # the encoder alone is fine
    np.testing.assert_allclose(ours[real], expected[real], atol=TOLERANCE)


def test_output_into_the_checkpoint_folder_is_refused(tmp_path):
    from keras_bert_app.convert.checkpoint import convert_checkpoint

    source = checkpoints.save_huggingface(checkpoints.huggingface_model("ElectraModel"), tmp_path / "hf")
    with pytest.raises(errors.ArgumentError) as error:
        convert_checkpoint(source, source, overwrite=True)
    assert error.value.argument == "output"
    assert (source / "config.json").is_file() and (source / "vocab.txt").is_file()  # untouched


@pytest.mark.all_backends
def test_electra_run_preset_goes_out_as_electra_for_pretraining(tmp_path):
    """A `pretrain --objective electra` preset (ElectraPretrainer.save_to_preset) -> HF discriminator and generator."""
    from keras_bert_app import presets
    from keras_bert_app.models.electra_pretrainer import ElectraPretrainer
    from tests.convert.checkpoints import write_vocabulary

    keras.utils.set_random_seed(0)
    encoder = BertEncoder(vocabulary_size=30, num_layers=2, num_heads=2, hidden_dim=32, intermediate_dim=64,
                          max_sequence_length=64, embedding_dim=16)
    pretrainer = ElectraPretrainer(encoder, generator_size=0.5)
    folder = pretrainer.save_to_preset(tmp_path / "run" / "preset")
    for preset in (folder, folder / "generator"):
        write_vocabulary(preset / "vocab.txt", 30)
        presets.write_config_entry(preset, "tokenizer", {"vocabulary": "vocab.txt", "lowercase": True})
    assert cli.main(["convert", "--to", "huggingface", str(folder), "--output", str(tmp_path / "hf")]) == 0
    assert cli.main(["convert", "--to", "huggingface", str(folder / "generator"), "--output", str(tmp_path / "hf_generator")]) == 0

    batch = checkpoints.inputs()
    real = batch["padding_mask"].astype(bool)
    discriminator = transformers.ElectraForPreTraining.from_pretrained(str(tmp_path / "hf")).eval()
    ours = _numpy(pretrainer.discriminator_head(pretrainer.encoder(batch)["sequence_output"]))
    np.testing.assert_allclose(checkpoints.run_huggingface(discriminator, batch).logits.numpy()[real], ours[real], atol=TOLERANCE)
    generator = transformers.ElectraForMaskedLM.from_pretrained(str(tmp_path / "hf_generator")).eval()
    expected = np.take_along_axis(checkpoints.run_huggingface(generator, batch).logits.numpy(), POSITIONS[..., None], axis=1)
    np.testing.assert_allclose(_numpy(pretrainer({**batch, "mask_positions": POSITIONS})["mlm"]), expected, atol=TOLERANCE)
