"""SQuAD v1.1 and v2.0 scores, as defined by the official evaluation scripts.

v1.1 (`evaluate-v1.1.py`): `exact_match` and `f1`, each the maximum over the
gold answers, averaged over every question of the file (a question without
a prediction scores 0), times 100.

v2.0 (`evaluate-v2.0.py`): `exact`, `f1`, `total`, the same on the
answerable (`HasAns_*`) and unanswerable (`NoAns_*`) questions, where the
gold answer of an unanswerable question is "", and a question whose
no-answer probability is above `na_prob_thresh` counts as answered "".
Given the no-answer probabilities, `best_exact`/`best_f1` are the scores at
the best threshold (`best_exact_thresh`/`best_f1_thresh`). Unlike the
official v2.0 script, a question without a prediction scores 0.

Answers are compared after the official normalisation: lower case, ASCII
punctuation removed, the articles a/an/the removed, whitespace collapsed.
"""

import collections
import re
import string

PUNCTUATION = frozenset(string.punctuation)
ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text):
    """Lower case, drop punctuation and articles, collapse whitespace."""
    text = "".join(char for char in text.lower() if char not in PUNCTUATION)
    text = ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction, gold):
    """1 when the normalised strings are equal, else 0."""
    return int(normalize_answer(prediction) == normalize_answer(gold))


def f1_v1(prediction, gold):
    """Token F1 of the normalised answers (v1.1: 0 when either is empty)."""
    return _token_f1(normalize_answer(prediction).split(), normalize_answer(gold).split(), 0)


def f1_v2(prediction, gold):
    """Token F1 of the normalised answers (v2.0: when either is empty, 1 if both are)."""
    prediction_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not prediction_tokens or not gold_tokens:
        return int(prediction_tokens == gold_tokens)
    return _token_f1(prediction_tokens, gold_tokens, 0)


def _token_f1(prediction_tokens, gold_tokens, no_overlap):
    common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return no_overlap
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _questions(articles):
    for article in articles:
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


def missing_predictions(articles, predictions):
    """The question ids of `articles` that `predictions` has no entry for."""
    return [str(qa["id"]) for qa in _questions(articles) if str(qa["id"]) not in predictions]


def evaluate_v1(articles, predictions):
    """Official SQuAD v1.1 scores.

    Args:
        articles: the `data` list of a SQuAD JSON file.
        predictions: dict question id -> predicted answer text.

    Returns:
        `{"exact_match": float, "f1": float}` (percentages).
    """
    total = exact = f1 = 0.0
    for qa in _questions(articles):
        total += 1
        qas_id = str(qa["id"])
        if qas_id not in predictions:
            continue
        golds = [answer["text"] for answer in qa.get("answers", [])]
        if not golds:
            raise ValueError(
                f"Question {qas_id!r} has no gold answer; SQuAD v1.1 scoring needs one "
                "(score a v2.0 file with the v2.0 metrics)."
            )
        prediction = predictions[qas_id]
        exact += max(exact_match(prediction, gold) for gold in golds)
        f1 += max(f1_v1(prediction, gold) for gold in golds)
    if not total:
        raise ValueError("The SQuAD data has no questions to score.")
    return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}


def raw_scores(articles, predictions):
    """`(has_answer, exact, f1)`: dicts question id -> bool / v2.0 score of the prediction as given (no threshold)."""
    has_answer, exact_raw, f1_raw = {}, {}, {}
    for qa in _questions(articles):
        qas_id = str(qa["id"])
        golds = [answer["text"] for answer in qa.get("answers", []) if normalize_answer(answer["text"])]
        has_answer[qas_id] = bool(golds)
        golds = golds or [""]
        prediction = predictions.get(qas_id)
        if prediction is None:
            exact_raw[qas_id] = f1_raw[qas_id] = 0
            continue
        exact_raw[qas_id] = max(exact_match(prediction, gold) for gold in golds)
        f1_raw[qas_id] = max(f1_v2(prediction, gold) for gold in golds)
    if not has_answer:
        raise ValueError("The SQuAD data has no questions to score.")
    return has_answer, exact_raw, f1_raw


def evaluate_v2(articles, predictions, na_probs=None, na_prob_thresh=1.0):
    """Official SQuAD v2.0 scores.

    Args:
        articles: the `data` list of a SQuAD JSON file.
        predictions: dict question id -> predicted answer ("" = no answer).
        na_probs: dict question id -> no-answer probability (or any score
            where higher means "no answer", e.g. `null_odds.json`), or None
            (all 0).
        na_prob_thresh: float. Above it a question is predicted unanswerable.

    Returns:
        dict with `exact`, `f1`, `total`, `HasAns_*` and `NoAns_*` (when there
        are such questions), and with `na_probs` given `best_exact`,
        `best_exact_thresh`, `best_f1`, `best_f1_thresh`.
    """
    has_answer, exact_raw, f1_raw = raw_scores(articles, predictions)
    given_probs = na_probs is not None
    if given_probs:
        missing = [qas_id for qas_id in has_answer if qas_id not in na_probs]
        if missing:
            raise ValueError(
                f"The no-answer probabilities lack {len(missing)} of the {len(has_answer)} "
                f"questions (first: {missing[:3]})."
            )
    else:
        na_probs = {qas_id: 0.0 for qas_id in has_answer}
    exact = _apply_threshold(exact_raw, na_probs, has_answer, na_prob_thresh)
    f1 = _apply_threshold(f1_raw, na_probs, has_answer, na_prob_thresh)
    scores = _average(exact, f1, list(has_answer))
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        ids = [qas_id for qas_id, answerable in has_answer.items() if answerable == wanted]
        if ids:
            for key, value in _average(exact, f1, ids).items():
                scores[f"{prefix}_{key}"] = value
    if given_probs:
        for name, raw in (("exact", exact_raw), ("f1", f1_raw)):
            best, threshold = best_threshold(predictions, raw, na_probs, has_answer)
            scores[f"best_{name}"] = best
            scores[f"best_{name}_thresh"] = threshold
    return scores


def _apply_threshold(scores, na_probs, has_answer, na_prob_thresh):
    """Questions with na_prob > threshold score 1 if unanswerable, else 0."""
    return {
        qas_id: float(not has_answer[qas_id]) if na_probs[qas_id] > na_prob_thresh else score
        for qas_id, score in scores.items()
    }


def _average(exact, f1, ids):
    total = len(ids)
    return {
        "exact": 100.0 * sum(exact[i] for i in ids) / total,
        "f1": 100.0 * sum(f1[i] for i in ids) / total,
        "total": total,
    }


def best_threshold(predictions, raw_scores, na_probs, has_answer):
    """`(best score, threshold)` over no-answer thresholds, as `evaluate-v2.0.py`.

    Starting from "every question unanswered" (each unanswerable one scores 1),
    questions are answered in order of increasing no-answer probability:
    an answerable one adds its raw score, an unanswerable one with a
    non-empty prediction loses its point. The threshold is the probability
    of the last question answered at the best running score (0.0 if none).
    """
    score = best = sum(1 for answerable in has_answer.values() if not answerable)
    threshold = 0.0
    for qas_id in sorted(na_probs, key=lambda key: na_probs[key]):
        if qas_id not in raw_scores:
            continue
        if has_answer[qas_id]:
            score += raw_scores[qas_id]
        elif predictions.get(qas_id):
            score -= 1
        if score > best:
            best, threshold = score, na_probs[qas_id]
    return 100.0 * best / len(raw_scores), threshold
