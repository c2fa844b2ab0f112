"""`evaluate --conlleval` and `evaluate_conlleval`: entity scores of a conlleval-layout file."""

import json

import pytest

from keras_bert_app import cli, errors
from keras_bert_app.evaluation.conlleval import evaluate_conlleval

TAGGED = "John B-PER B-PER\nSmith I-PER O\nin O O\nParis B-LOC B-LOC\n\nBob B-PER B-PER\n"


def test_conlleval_file(tmp_path, capsys):
    path = tmp_path / "out.txt"
    path.write_text(TAGGED, encoding="utf-8")
    code = cli.main(["evaluate", "--conlleval", str(path)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    scores = json.loads(captured.out)
    # Gold: John Smith, Paris, Bob. Predicted: John (wrong span), Paris, Bob.
    assert (scores["num_gold"], scores["num_predicted"], scores["num_correct"]) == (3, 3, 2)
    assert scores["f1"] == pytest.approx(2 / 3)
    assert evaluate_conlleval(path) == scores


def test_conlleval_bad_input(tmp_path, capsys):
    with pytest.raises(errors.MissingFileError) as caught:
        evaluate_conlleval(tmp_path / "missing.txt")
    assert caught.value.argument == "path"
    (tmp_path / "bad.txt").write_text("John B-PER B-PER\nlonely\n", encoding="utf-8")
    with pytest.raises(errors.DataError, match=r"bad.txt:2: expected '... GOLD PREDICTED' columns"):
        evaluate_conlleval(tmp_path / "bad.txt")
    assert cli.main(["evaluate", "--conlleval", str(tmp_path / "bad.txt")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "GOLD PREDICTED" in err
