"""SQuAD scores against values worked out by hand from the official scripts' definitions."""

import json

import pytest

from keras_bert_app import cli, errors
from keras_bert_app.evaluation import squad_metrics
from keras_bert_app.evaluation.squad_evaluate import evaluate_squad


def squad(questions, version="1.1"):
    """A one-paragraph SQuAD file: questions are (id, [gold texts], is_impossible)."""
    qas = [
        {"id": qid, "question": "q?", "answers": [{"text": t, "answer_start": 0} for t in golds],
         "is_impossible": impossible}
        for qid, golds, impossible in questions
    ]
    return {"version": version, "data": [{"title": "t", "paragraphs": [{"context": "c", "qas": qas}]}]}


def test_normalize_answer():
    assert squad_metrics.normalize_answer("The  Cat,\ta DOG!") == "cat dog"
    # "—" is not ASCII punctuation: it stays, and "the" after it is a whole word.
    assert squad_metrics.normalize_answer("an apple—the end") == "apple— end"
    assert squad_metrics.normalize_answer("theater") == "theater"  # articles only as whole words
    assert squad_metrics.normalize_answer("A.") == ""


V1 = squad([
    ("q1", ["the Eiffel Tower", "Eiffel tower"], False),
    ("q2", ["Paris France"], False),
    ("q3", ["1990s", "the 1990s"], False),
    ("q4", ["x"], False),
    ("q5", ["red car", "big red car"], False),
])
V1_PREDICTIONS = {"q1": "Eiffel Tower!", "q2": "in Paris", "q3": "", "q5": "the big red car", "extra": "x"}


def test_v1_by_hand():
    scores = squad_metrics.evaluate_v1(V1["data"], V1_PREDICTIONS)
    # q1: EM 1 F1 1; q2: EM 0, F1 2*(1/2)(1/2)/1 = 0.5; q3 empty: 0, 0;
    # q4 missing: 0, 0 (still counted); q5: EM 1 against "big red car".
    assert scores == pytest.approx({"exact_match": 100 * 2 / 5, "f1": 100 * 2.5 / 5}, abs=1e-9)
    assert squad_metrics.missing_predictions(V1["data"], V1_PREDICTIONS) == ["q4"]


def test_v1_f1_partial_overlap_and_repeats():
    # pred tokens [cat, cat, sat], gold [cat, sat, on, mat]: common {cat: 1, sat: 1} = 2,
    # precision 2/3, recall 2/4.
    assert squad_metrics.f1_v1("The cat cat sat", "cat sat on. mat") == pytest.approx(
        2 * (2 / 3) * (2 / 4) / (2 / 3 + 2 / 4), abs=1e-12
    )
    assert squad_metrics.f1_v1("", "") == 0  # v1.1: no common token -> 0
    assert squad_metrics.f1_v2("", "") == 1  # v2.0: both empty -> 1
    assert squad_metrics.f1_v2("the", "") == 1  # "the" normalises to ""


V2 = squad([
    ("h1", ["Nile"], False),
    ("h2", ["blue whale"], False),
    ("n1", [], True),
    ("n2", [], True),
    ("h3", ["the", "Amazon"], False),  # "the" normalises to "" and is not a gold answer
], version="v2.0")
V2_PREDICTIONS = {"h1": "the Nile", "h2": "whale", "n1": "", "n2": "something", "h3": ""}
NA_PROBS = {"h1": 0.1, "h2": 0.6, "n1": 0.9, "n2": 0.8, "h3": 0.3}


def test_v2_by_hand_without_na_probs():
    scores = squad_metrics.evaluate_v2(V2["data"], V2_PREDICTIONS)
    # exact h1 1, h2 0, n1 1, n2 0, h3 0; f1 h1 1, h2 2*1*0.5/1.5 = 2/3, n1 1, n2 0, h3 0.
    expected = {
        "exact": 100 * 2 / 5, "f1": 100 * (2 + 2 / 3) / 5, "total": 5,
        "HasAns_exact": 100 / 3, "HasAns_f1": 100 * (1 + 2 / 3) / 3, "HasAns_total": 3,
        "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2,
    }
    assert list(scores) == list(expected)
    assert scores == pytest.approx(expected, abs=1e-9)


def test_v2_by_hand_with_na_probs():
    scores = squad_metrics.evaluate_v2(V2["data"], V2_PREDICTIONS, NA_PROBS, na_prob_thresh=0.5)
    # Above 0.5: h2 -> 0 (answerable), n1, n2 -> 1. exact = f1 = (1 + 0 + 1 + 1 + 0) / 5.
    assert scores["exact"] == pytest.approx(60.0, abs=1e-9)
    assert scores["f1"] == pytest.approx(60.0, abs=1e-9)
    # Sweep by na_prob: start 2 (no-answer questions); h1 +1 -> 3 (thr 0.1); h3 +0;
    # h2 +0 exact (3) / +2/3 f1 (3.667, thr 0.6); n2 non-empty -1; n1 empty +0.
    assert scores["best_exact"] == pytest.approx(60.0, abs=1e-9)
    assert scores["best_exact_thresh"] == 0.1
    assert scores["best_f1"] == pytest.approx(100 * (3 + 2 / 3) / 5, abs=1e-9)
    assert scores["best_f1_thresh"] == 0.6


def test_v2_missing_prediction_scores_zero():
    predictions = {k: v for k, v in V2_PREDICTIONS.items() if k != "n1"}
    scores = squad_metrics.evaluate_v2(V2["data"], predictions)
    assert scores["total"] == 5
    assert scores["NoAns_exact"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="lack 1 of the 5"):
        squad_metrics.evaluate_v2(V2["data"], V2_PREDICTIONS, {k: 0.0 for k in NA_PROBS if k != "h1"})


def run_cli(tmp_path, data, predictions, na_probs=None):
    """`keras-bert-app evaluate squad ...` through the entry point."""
    (tmp_path / "dev.json").write_text(json.dumps(data))
    (tmp_path / "pred.json").write_text(json.dumps(predictions))
    argv = ["evaluate", "squad", "--data", str(tmp_path / "dev.json"), "--predictions", str(tmp_path / "pred.json")]
    if na_probs is not None:
        (tmp_path / "na.json").write_text(json.dumps(na_probs))
        argv += ["--na-prob-file", str(tmp_path / "na.json")]
    return cli.main(argv)


def test_command_prints_official_keys(tmp_path, capsys):
    assert run_cli(tmp_path, V1, V1_PREDICTIONS) == 0
    captured = capsys.readouterr()
    assert list(json.loads(captured.out)) == ["exact_match", "f1"]
    assert "1 of 5 questions have no prediction" in captured.err
    assert run_cli(tmp_path, V2, V2_PREDICTIONS, NA_PROBS) == 0
    keys = list(json.loads(capsys.readouterr().out))
    assert keys == [
        "exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total", "NoAns_exact",
        "NoAns_f1", "NoAns_total", "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh",
    ]


def test_command_bad_input(tmp_path, capsys):
    for data, predictions, message in (
        ({"version": "1.1"}, {}, "has no 'data'"),
        (V1, {"q1": 3}, "answers must be strings"),
    ):
        assert run_cli(tmp_path, data, predictions) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    with pytest.raises(ValueError, match="has no 'data'"):
        evaluate_squad({"version": "1.1"}, {})
    with pytest.raises(ValueError, match="answers must be strings"):
        evaluate_squad(V1, {"q1": 3})
    assert run_cli(tmp_path, V1, V1_PREDICTIONS, NA_PROBS) == 2
    assert "is for SQuAD v2.0; the data file is v1.1" in capsys.readouterr().err


def test_evaluate_squad_takes_paths_or_dicts_and_reports_missing_answers(tmp_path):
    messages = []
    by_dict = evaluate_squad(V1, V1_PREDICTIONS, log=messages.append)
    assert by_dict == squad_metrics.evaluate_v1(V1["data"], V1_PREDICTIONS)
    assert len(messages) == 1 and "1 of 5 questions have no prediction" in messages[0] and "q4" in messages[0]
    assert evaluate_squad(V1, V1_PREDICTIONS) == by_dict  # no log: not told, same scores
    (tmp_path / "dev.json").write_text(json.dumps(V2))
    (tmp_path / "na.json").write_text(json.dumps(NA_PROBS))
    by_path = evaluate_squad(tmp_path / "dev.json", V2_PREDICTIONS, na_probs=str(tmp_path / "na.json"), na_prob_thresh=0.5)
    assert by_path == evaluate_squad(V2, V2_PREDICTIONS, NA_PROBS, 0.5)
    assert by_path == squad_metrics.evaluate_v2(V2["data"], V2_PREDICTIONS, NA_PROBS, 0.5)
    with pytest.raises(ValueError, match="pass version 2.0"):
        evaluate_squad(V2, V2_PREDICTIONS, version="1.1")
    for arguments, error, argument in (
        ((tmp_path / "missing.json", V1_PREDICTIONS), errors.MissingFileError, "data"),
        ((V1, tmp_path / "missing.json"), errors.MissingFileError, "predictions"),
        ((V1, 3), errors.ArgumentTypeError, "predictions"),
        ((V1, V1_PREDICTIONS, NA_PROBS), errors.ArgumentError, "na_probs"),
    ):
        with pytest.raises(error) as caught:
            evaluate_squad(*arguments)
        assert caught.value.argument == argument
    with pytest.raises(errors.ArgumentError) as caught:
        evaluate_squad(V1, V1_PREDICTIONS, version="3.0")
    assert caught.value.argument == "version"
