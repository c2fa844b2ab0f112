"""Fine-tuning, predicting and extracting features from transformers task checkpoints of odd shapes (40 positions,
one segment type), converted through the command line: the defaults fit them, and what they cannot do is one line."""

import csv
import json

from keras_bert_app import cli
from tests.convert.heldout_checkpoints import TEXTS, converted

LONG = "the quick brown fox jumps over the lazy dog " * 8  # 72 pieces: past the 40 positions


def _write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows(rows)
    return path


def _main(*argv):
    return cli.main([str(argument) for argument in argv])


def _one_line_error(capsys, *expected):
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and all(part in error for part in expected), error


def test_defaults_fit_a_checkpoint_with_40_positions(tmp_path, capsys):
    """`finetune` (default 128), `predict` and `extract-features` (default 128) run at the checkpoint's 40
    positions; before, a text past them failed with a traceback. An explicit longer length is one line."""
    _, preset = converted("BertForSequenceClassification", tmp_path, num_labels=2)
    train = _write_csv(tmp_path / "train.csv", [["text", "label"], [LONG, "pos"], *[[text, "neg"] for text in TEXTS]])
    options = ["--train", train, "--dev", train, "--text-column", "text", "--label-column", "label",
               "--epochs", "1", "--batch-size", "4"]
    assert _main("finetune", "classify", "--preset", preset, "--output", tmp_path / "run", *options) == 0
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["task"]["sequence_length"] == 40
    assert _main("predict", "--preset", tmp_path / "run" / "preset", "--input", train,
                 "--output", tmp_path / "predictions.jsonl") == 0
    assert len((tmp_path / "predictions.jsonl").read_text().splitlines()) == len(TEXTS) + 1
    (tmp_path / "lines.txt").write_text(f"{LONG}\nhello world\n", encoding="utf-8")
    assert _main("extract-features", "--input", tmp_path / "lines.txt", "--preset", preset, "--layers", "-1",
                 "--output", tmp_path / "features.jsonl") == 0
    first = json.loads((tmp_path / "features.jsonl").read_text().splitlines()[0])
    assert len(first["features"]) == 40
    capsys.readouterr()
    assert _main("finetune", "classify", "--preset", preset, "--output", tmp_path / "long", *options,
                 "--sequence-length", "64") == 2
    _one_line_error(capsys, "sequence_length 64 is longer than the preset's max_sequence_length 40")


def test_one_segment_type_takes_single_texts_and_refuses_pairs_in_one_line(tmp_path, capsys):
    """`type_vocab_size: 1` has no embedding for segment B: a regressor on single texts fine-tunes; a pair
    task, pairs to extract features of and a pair export are refused in one line, not a traceback mid-run."""
    _, preset = converted("BertForSequenceClassification", tmp_path, num_labels=1, problem_type="regression",
                          type_vocab_size=1, hidden_act="relu")
    rows = [[text, text[::-1], float(index)] for index, text in enumerate(TEXTS)]
    data = _write_csv(tmp_path / "scores.csv", [["a", "b", "score"], *rows])
    options = ["--train", data, "--dev", data, "--text-column", "a", "--label-column", "score", "--regression",
               "--epochs", "1", "--batch-size", "4"]
    assert _main("finetune", "classify", "--preset", preset, "--output", tmp_path / "single", *options) == 0
    # Scores are not classes: length groups are stratified by bins of the targets, and the log says so.
    assert "grouped by length within each of 5 bins of the targets by rank" in capsys.readouterr().out
    assert _main("finetune", "classify", "--preset", preset, "--output", tmp_path / "pairs", *options,
                 "--text-pair-column", "b") == 2
    _one_line_error(capsys, "the classify task packs 2 segments", "has 1 segment type (type_vocab_size)")
    (tmp_path / "pairs.txt").write_text("the cat ||| a dog\n", encoding="utf-8")
    assert _main("extract-features", "--input", tmp_path / "pairs.txt", "--preset", preset, "--layers", "-1",
                 "--output", tmp_path / "features.jsonl") == 2
    _one_line_error(capsys, "pairs", "1 segment type")
    assert _main("export", "--model", tmp_path / "single" / "preset", "--output", tmp_path / "served",
                 "--text-pair") == 2
    _one_line_error(capsys, "needs an encoder with 2 segment types; this one has 1")
