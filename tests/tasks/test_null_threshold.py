"""`finetune squad --version 2.0`'s no-answer threshold: the best dev F1, between two questions' null score differences."""

import pytest

from keras_bert_app.evaluation.squad_metrics import evaluate_v2
from keras_bert_app.tasks.question_answering import null_threshold_of_best_f1


def _articles(questions):
    """One paragraph; `questions` is (id, gold answer or None)."""
    qas = [{"id": qid, "question": "q?", "answers": [] if gold is None else [{"text": gold, "answer_start": 0}],
            "is_impossible": gold is None} for qid, gold in questions]
    return [{"title": "t", "paragraphs": [{"context": "red blue green", "qas": qas}]}]


def test_when_answering_nothing_scores_best_every_question_is_left_unanswered():
    # Null score differences of either sign (logit differences, not probabilities): the official sweep
    # reports 0.0 as the best threshold when no question is worth answering, which here would answer two.
    articles = _articles([("a", None), ("b", None), ("c", "red")])
    predictions = {"a": "blue", "b": "green", "c": "blue"}  # every answer wrong
    null_odds = {"a": -2.0, "b": -1.0, "c": 0.5}
    scores = evaluate_v2(articles, predictions, null_odds)
    assert scores["best_f1_thresh"] == 0.0 and scores["best_f1"] == pytest.approx(200 / 3)
    threshold = null_threshold_of_best_f1(articles, predictions, null_odds)
    assert threshold < -2.0
    assert evaluate_v2(articles, predictions, null_odds, threshold)["f1"] == pytest.approx(scores["best_f1"])


@pytest.mark.parametrize("shift", [-10.0, 0.0, 10.0])
def test_the_threshold_gives_the_best_f1_halfway_between_two_questions(shift):
    articles = _articles([("a", "red"), ("b", None), ("c", "green"), ("d", None)])
    predictions = {"a": "red", "b": "blue", "c": "green", "d": "red"}
    null_odds = {"a": shift - 3.0, "b": shift + 2.0, "c": shift - 1.0, "d": shift + 4.0}
    threshold = null_threshold_of_best_f1(articles, predictions, null_odds)
    # a and c answered (right), b and d not: every question scores.
    assert evaluate_v2(articles, predictions, null_odds, threshold)["f1"] == pytest.approx(100.0)
    assert threshold == pytest.approx(shift + 0.5)  # halfway between c's -1 and b's 2


def test_questions_of_equal_null_score_differences_are_answered_together():
    # x (-5, right) and a (1.0, right) should be answered, b (1.0, unanswerable, answered anyway) should not: no
    # threshold splits a and b, so the best is x alone (66.7), not "answer nothing" (33.3) nor both (66.7 too, later).
    articles = _articles([("x", "red"), ("a", "green"), ("b", None)])
    predictions = {"x": "red", "a": "green", "b": "blue"}
    null_odds = {"x": -5.0, "a": 1.0, "b": 1.0}
    threshold = null_threshold_of_best_f1(articles, predictions, null_odds)
    assert -5.0 < threshold < 1.0
    assert evaluate_v2(articles, predictions, null_odds, threshold)["f1"] == pytest.approx(200 / 3)
