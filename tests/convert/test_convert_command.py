"""`keras-bert-app convert` in both directions, and its one-line errors."""

import numpy as np
import pytest
from safetensors.numpy import load_file

from keras_bert_app import cli
from keras_bert_app.models.bert_encoder import BertEncoder
from tests.convert.checkpoints import TINY, huggingface_tensors, write_huggingface


def test_huggingface_in_and_out(tmp_path, capsys):
    tensors = huggingface_tensors(TINY)
    source = write_huggingface(tmp_path / "hf", tensors=tensors)
    assert cli.main(["convert", "--from", "huggingface", str(source), "--output", str(tmp_path / "preset")]) == 0
    assert "encoder only" in capsys.readouterr().out
    encoder = BertEncoder.from_preset(tmp_path / "preset")
    np.testing.assert_array_equal(encoder.pooler.bias.numpy(), tensors["pooler.dense.bias"])
    assert cli.main(["convert", "--to", "huggingface", str(tmp_path / "preset"), "--output", str(tmp_path / "back")]) == 0
    back = load_file(str(tmp_path / "back" / "model.safetensors"))
    assert sorted(back) == sorted(tensors)
    for name in tensors:
        np.testing.assert_array_equal(back[name], tensors[name], err_msg=name)
    with pytest.warns(UserWarning, match="gelu_approximate"):  # HF's exact GELU vs keras-hub's tanh
        assert cli.main(["convert", "--to", "keras-hub", str(tmp_path / "preset"), "--output", str(tmp_path / "kh")]) == 0
    assert (tmp_path / "kh" / "model.weights.h5").is_file()


def test_bad_input_exits_with_one_line(tmp_path, capsys):
    source = write_huggingface(tmp_path / "roberta", model_type="roberta")
    assert cli.main(["convert", "--from", "huggingface", str(source), "--output", str(tmp_path / "out")]) == 1
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "roberta" in error
    assert cli.main(["convert", "--from", "google", str(tmp_path / "nowhere"), "--output", str(tmp_path / "out")]) == 1
    assert "no such checkpoint" in capsys.readouterr().err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "file").write_text("x")
    assert cli.main(["convert", "--from", "huggingface", str(source), "--output", str(tmp_path / "full")]) == 1
    assert "--overwrite" in capsys.readouterr().err
