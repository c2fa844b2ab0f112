"""The README's ELECTRA `convert` lines, as written, through the real command line."""

import json
import shlex

import pytest

from keras_bert_app import cli
from tests.convert import electra_checkpoints as checkpoints

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

README_LINES = """
keras-bert-app convert --from huggingface path/to/electra-small-discriminator --output presets/electra_disc
keras-bert-app convert --from huggingface path/to/electra-small-discriminator --generator path/to/electra-small-generator --output presets/electra_pair
keras-bert-app convert --from google path/to/electra_small --output presets/electra_original
keras-bert-app convert --to huggingface presets/electra_disc --output electra_hf
""".strip().splitlines()


def test_readme_command_lines(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    discriminator = checkpoints.huggingface_model("ElectraForPreTraining", seed=1)
    generator = checkpoints.huggingface_model("ElectraForMaskedLM", seed=2, **checkpoints.GENERATOR)
    generator.electra.embeddings.load_state_dict(discriminator.electra.embeddings.state_dict())
    checkpoints.save_huggingface(discriminator, tmp_path / "path/to/electra-small-discriminator")
    checkpoints.save_huggingface(generator, tmp_path / "path/to/electra-small-generator")
    checkpoints.write_original(
        tmp_path / "path/to/electra_small", checkpoints.original_variables(discriminator, generator),
        prefix_name="electra_small",
    )
    (tmp_path / "path/to/electra_small/bert_config.json").write_text(json.dumps({"num_attention_heads": 2}))
    capsys.readouterr()

    for line in README_LINES:
        assert cli.main(shlex.split(line)[1:]) == 0, line
    out = capsys.readouterr().out
    assert out.count("with pretraining heads") == 3 and out.count("generator in") == 2
    assert (tmp_path / "presets/electra_pair/generator/model.weights.h5").is_file()
    assert (tmp_path / "presets/electra_original/electra_pretrainer.weights.h5").is_file()
    reloaded = transformers.ElectraForPreTraining.from_pretrained(str(tmp_path / "electra_hf")).eval()
    for name, value in discriminator.state_dict().items():
        torch.testing.assert_close(reloaded.state_dict()[name], value, rtol=0, atol=0, msg=name)
