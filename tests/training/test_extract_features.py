"""`extract-features`: the original BERT's JSON lines layout, values equal to the encoder's layers."""

import json
import shlex

import keras
import numpy as np
import pytest

import keras_bert_app as kba
from keras_bert_app import cli, errors
from tests.tasks.tiny_presets import write_tiny_preset

README_LINE = "keras-bert-app extract-features --input sentences.txt --preset P --layers=-1,-2,-3,-4 --output features.jsonl"


def run_command(argv):
    return cli.main(["extract-features", *argv])


@pytest.fixture(scope="module")
def preset(tmp_path_factory, shared_data):
    """The real uncased vocabulary and a 4-layer, 8-wide encoder without dropout."""
    from keras_bert_app.models.bert_encoder import BertEncoder

    folder = write_tiny_preset(tmp_path_factory.mktemp("preset"), shared_data / "vocab" / "bert_uncased_vocab.txt")
    encoder = BertEncoder(vocabulary_size=30522, num_layers=4, num_heads=2, hidden_dim=8, intermediate_dim=16,
                          max_sequence_length=128, dropout=0.0)
    encoder.save_to_preset(folder)
    return folder, encoder


def encoder_layers(encoder, pair, sequence_length):
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    tokenizer = BertTokenizer.from_preset("bert_tiny_uncased")
    inputs = BertPreprocessor(tokenizer, sequence_length=sequence_length)(pair)
    inputs = {k: np.asarray(v).astype("int32") for k, v in inputs.items()}
    return [keras.ops.convert_to_numpy(output) for output in encoder(inputs)["encoder_outputs"]]


def test_extract_features_layout_and_values(tmp_path, preset, capsys):
    folder, encoder = preset
    (tmp_path / "in.txt").write_text("Hello world.\nThe cat sat ||| on the mat\n", encoding="utf-8")
    (tmp_path / "pair.txt").write_text("The cat sat ||| on the mat\n", encoding="utf-8")
    for name in ("in", "pair"):
        argv = [
            "--input", str(tmp_path / f"{name}.txt"), "--preset", str(folder),
            "--layers=-1,0", "--output", str(tmp_path / f"{name}.jsonl"), "--sequence-length", "16",
        ]
        if name == "in":
            assert run_command(argv) == 2
            err = capsys.readouterr().err
            assert "mixes single texts" in err and len(err.strip().splitlines()) == 1
            with pytest.raises(ValueError, match="mixes single texts"):
                kba.extract_features(tmp_path / "in.txt", folder, tmp_path / "in.jsonl", layers=(-1, 0))
        else:
            assert run_command(argv) == 0
    [record] = [json.loads(line) for line in (tmp_path / "pair.jsonl").read_text().splitlines()]
    tokens = [feature["token"] for feature in record["features"]]
    assert tokens == ["[CLS]", "the", "cat", "sat", "[SEP]", "on", "the", "mat", "[SEP]"]
    assert [layer["index"] for layer in record["features"][0]["layers"]] == [-1, 0]
    outputs = encoder_layers(encoder, (["The cat sat"], ["on the mat"]), 16)
    for position, feature in enumerate(record["features"]):
        np.testing.assert_allclose(feature["layers"][0]["values"], outputs[-1][0, position], atol=1e-5)
        np.testing.assert_allclose(feature["layers"][1]["values"], outputs[0][0, position], atol=1e-5)


@pytest.mark.all_backends
def test_readme_line(tmp_path, preset, monkeypatch):
    folder, encoder = preset
    monkeypatch.chdir(tmp_path)
    (tmp_path / "P").symlink_to(folder, target_is_directory=True)
    (tmp_path / "sentences.txt").write_text("Hello world.\n\nThe cat sat.\n", encoding="utf-8")
    assert cli.main(shlex.split(README_LINE)[1:]) == 0
    records = [json.loads(line) for line in (tmp_path / "features.jsonl").read_text().splitlines()]
    assert [record["linex_index"] for record in records] == [0, 1]  # blank lines skipped
    assert [layer["index"] for layer in records[1]["features"][0]["layers"]] == [-1, -2, -3, -4]
    outputs = encoder_layers(encoder, ["The cat sat."], 128)
    for k, layer in enumerate((-1, -2, -3, -4)):
        np.testing.assert_allclose(records[1]["features"][2]["layers"][k]["values"], outputs[layer][0, 2], atol=1e-5)


def test_bad_arguments(tmp_path, preset, capsys):
    folder, _ = preset
    (tmp_path / "in.txt").write_text("Hello.\n", encoding="utf-8")
    cases = [
        ({"input": tmp_path / "missing.txt"}, errors.MissingFileError, "input"),
        ({"layers": "-1"}, errors.ArgumentTypeError, "layers"),
        ({"sequence_length": 2}, errors.ArgumentError, "sequence_length"),
        ({"preset": tmp_path / "no_preset"}, errors.MissingFileError, "preset"),
    ]
    for change, error, argument in cases:
        arguments = {"input": tmp_path / "in.txt", "preset": folder, "output": tmp_path / "o.jsonl", **change}
        with pytest.raises(error) as caught:
            kba.extract_features(**arguments)
        assert caught.value.argument == argument
    argv = ["--input", str(tmp_path / "in.txt"), "--preset", str(folder), "--output", "o", "--layers", "a,b"]
    assert run_command(argv) == 2
    err = capsys.readouterr().err
    assert "--layers must be comma-separated integers" in err and len(err.strip().splitlines()) == 1
