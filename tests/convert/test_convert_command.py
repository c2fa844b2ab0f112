"""`keras-bert-app convert` in both directions (`kba.convert_checkpoint`), its README lines and its one-line errors."""

import numpy as np
import pytest
from safetensors.numpy import load_file

import keras_bert_app as kba
from keras_bert_app import cli, errors
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_pretrainer import BertPretrainer
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


def test_readme_command_lines(tmp_path, monkeypatch, capsys):
    """The README's three `convert` lines, as written, in a folder that holds their inputs."""
    from tests.convert.test_google import original_variables, write_release

    monkeypatch.chdir(tmp_path)
    tensors = huggingface_tensors(TINY, prefix="bert.", heads=True)
    write_huggingface(tmp_path / "path/to/hf_folder", tensors=tensors, architecture="BertForPreTraining")
    variables = original_variables()
    write_release(tmp_path / "path/to/uncased_L-12_H-768_A-12", variables)

    assert cli.main("convert --from huggingface path/to/hf_folder --output presets/mine".split()) == 0
    assert "with pretraining heads" in capsys.readouterr().out
    assert cli.main("convert --from google path/to/uncased_L-12_H-768_A-12 --output presets/google_base".split()) == 0
    assert cli.main("convert --to huggingface presets/mine --output hf_out".split()) == 0
    assert "Wrote huggingface checkpoint hf_out." in capsys.readouterr().out

    google_base = BertPretrainer.from_preset("presets/google_base")
    np.testing.assert_array_equal(google_base.masked_lm_head.output_bias.numpy(), variables["cls/predictions/output_bias"])
    back = load_file("hf_out/model.safetensors")  # BertForPreTraining layout, heads included
    for name in tensors:
        np.testing.assert_array_equal(back[name], tensors[name], err_msg=name)


def test_bad_input_exits_with_one_line(tmp_path, capsys):
    source = write_huggingface(tmp_path / "roberta", model_type="roberta")
    assert cli.main(["convert", "--from", "huggingface", str(source), "--output", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "roberta" in error
    assert cli.main(["convert", "--from", "google", str(tmp_path / "nowhere"), "--output", str(tmp_path / "out")]) == 2
    assert "no such checkpoint" in capsys.readouterr().err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "file").write_text("x")
    assert cli.main(["convert", "--from", "huggingface", str(source), "--output", str(tmp_path / "full")]) == 2
    assert "--overwrite" in capsys.readouterr().err


def test_convert_checkpoint_raises_one_typed_error_naming_the_argument(tmp_path):
    source = write_huggingface(tmp_path / "hf")
    cases = [
        (dict(source=tmp_path / "nowhere", output=tmp_path / "a"), errors.MissingFileError, "source"),
        (dict(source=source, output=tmp_path / "b", source_format="pytorch"), errors.ArgumentError, "source_format"),
        (dict(source=source, output=tmp_path / "c", target_format="onnx"), errors.ArgumentError, "target_format"),
        (dict(source=source, output=tmp_path / "d", source_format="huggingface", target_format="keras_hub"),
         errors.ArgumentError, "source_format"),
        (dict(source=source, output=42), errors.ArgumentTypeError, "output"),
        (dict(source=tmp_path, output=tmp_path / "e"), errors.ArgumentError, "source"),  # no checkpoint there
    ]
    for arguments, error_type, argument in cases:
        with pytest.raises(error_type) as error:
            kba.convert_checkpoint(**arguments)
        assert error.value.argument == argument, (arguments, error.value)
    with pytest.raises(errors.OutputExistsError, match="overwrite"):
        kba.convert_checkpoint(source, tmp_path)  # not empty
    folder = kba.convert_checkpoint(str(source), tmp_path / "ours", source_format="hf")
    assert folder == tmp_path / "ours" and (folder / "model.weights.h5").is_file()


def test_a_causal_preset_is_not_written_as_a_bidirectional_checkpoint(tmp_path, capsys):
    """A left-to-right (`causal`) preset would silently lose its mask in HF's or keras-hub's BERT: refused."""
    source = write_huggingface(tmp_path / "hf")
    assert cli.main(["convert", "--from", "huggingface", str(source), "--output", str(tmp_path / "ltr")]) == 0
    BertEncoder.from_preset(tmp_path / "ltr", causal=True).save_to_preset(tmp_path / "ltr")  # keeps its vocabulary
    capsys.readouterr()
    for target in ("huggingface", "keras-hub"):
        assert cli.main(["convert", "--to", target, str(tmp_path / "ltr"), "--output", str(tmp_path / target)]) == 2
        error = capsys.readouterr().err.strip()
        assert error.count("\n") == 0 and "causal" in error
        assert not (tmp_path / target).exists()
