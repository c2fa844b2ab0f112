"""`keras-bert-app summary` (`summarize_encoder`): an encoder from a preset, its size and a timed forward pass."""

import pytest

from keras_bert_app import cli, errors
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.encoder_summary import summarize_encoder


def test_summary_command_of_a_built_in_preset(capsys):
    assert cli.main(["summary", "--preset", "bert_tiny_uncased", "--sequence-length", "16", "--batch-size", "2"]) == 0
    out = capsys.readouterr().out
    assert "preset bert_tiny_uncased: 4,385,920 parameters, fresh weights" in out
    assert "forward pass, batch 2 x seq 16" in out and "sequence_output (2, 16, 128)" in out and "2 encoder_outputs" in out


def test_summary_of_a_folder_with_weights(tmp_path):
    folder = BertEncoder(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16).save_to_preset(
        tmp_path / "preset"
    )
    summary = summarize_encoder(folder, sequence_length=4, batch_size=1)
    assert summary.weights_loaded and summary.output_shapes["pooled_output"] == (1, 8)
    with pytest.raises(errors.ArgumentError, match="longer than the preset's max_sequence_length 512") as error:
        summarize_encoder(folder, sequence_length=600)
    assert error.value.argument == "sequence_length"


def test_summary_command_cuts_its_default_length_to_the_presets_positions(tmp_path, capsys):
    folder = BertEncoder(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16,
                         max_sequence_length=64).save_to_preset(tmp_path / "preset")
    assert cli.main(["summary", "--preset", str(folder), "--batch-size", "2"]) == 0
    out = capsys.readouterr().out
    assert "forward pass, batch 2 x seq 64" in out and "sequence_output (2, 64, 8)" in out
    assert cli.main(["summary", "--preset", str(folder), "--sequence-length", "65"]) == 2
    assert "sequence_length 65 is longer than the preset's max_sequence_length 64" in capsys.readouterr().err


def test_summary_command_bad_preset_is_one_line(capsys):
    assert cli.main(["summary", "--preset", "bert_huge"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "Unknown preset 'bert_huge'" in error
