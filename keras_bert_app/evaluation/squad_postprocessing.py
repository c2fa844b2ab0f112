"""Start/end logits of SQuAD windows -> answer texts, as the original BERT `run_squad.py`.

For every window the `n_best_size` highest start and end logits are paired;
invalid pairs (outside the context, not the window's max-context piece, end
before start, longer than `max_answer_length`) are dropped, the rest of all
windows ranked by start + end logit, and the first `n_best_size` distinct
texts form the n-best list. A span's text is the context between its first
piece's first character and its last piece's last character.

SQuAD v2.0: the null score is the smallest `[CLS]` start + end logit over the
question's windows; the empty answer "" joins the n-best list with it, and
the prediction is "" when `null score - best non-null score > threshold`.
`null_odds.json` holds that difference for every question (the
no-answer score `evaluate-v2.0.py` takes as `--na-prob-file`).
"""

import collections
import dataclasses
import json
import math
import pathlib

import numpy as np

# The null odds of a question without any valid non-null span (JSON has no inf).
NO_SPAN_NULL_ODDS = 1e9


@dataclasses.dataclass
class SquadPredictions:
    """Answers of a set of questions.

    Attributes:
        predictions: dict question id -> answer text ("" = no answer).
        nbest: dict question id -> list of dicts `text`, `probability`,
            `start_logit`, `end_logit`, best first.
        null_odds: dict question id -> null score - best non-null score
            (v2.0), or None (v1.1).
    """

    predictions: dict
    nbest: dict
    null_odds: dict = None

    def write(self, folder):
        """Write `predictions.json`, `nbest_predictions.json` and (v2.0) `null_odds.json`."""
        folder = pathlib.Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        files = {"predictions.json": self.predictions, "nbest_predictions.json": self.nbest}
        if self.null_odds is not None:
            files["null_odds.json"] = self.null_odds
        paths = []
        for name, content in files.items():
            path = folder / name
            path.write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            paths.append(path)
        return paths


def squad_predictions(
    features,
    start_logits,
    end_logits,
    version_2=False,
    n_best_size=20,
    max_answer_length=30,
    null_score_diff_threshold=0.0,
):
    """The answers of the examples behind `features`.

    Args:
        features: `keras_bert_app.data.squad_features.SquadFeatures`.
        start_logits: float [features, seq].
        end_logits: float [features, seq].
        version_2: bool. SQuAD v2.0: questions may have no answer.
        n_best_size: int. Start and end candidates per window, and length
            of the n-best list.
        max_answer_length: int. Longest answer, in pieces.
        null_score_diff_threshold: float. v2.0: answer "" when the null score
            beats the best span by more than this.

    Returns:
        `SquadPredictions`.
    """
    start_logits = np.asarray(start_logits, "float64")
    end_logits = np.asarray(end_logits, "float64")
    expected = (len(features), features.max_context.shape[1])
    if start_logits.shape != expected or end_logits.shape != expected:
        raise ValueError(
            f"Expected start and end logits of shape {expected} (features, seq); got "
            f"{start_logits.shape} and {end_logits.shape}."
        )
    features_of = collections.defaultdict(list)
    for feature, example_index in enumerate(features.example_index):
        features_of[int(example_index)].append(feature)
    predictions, nbest_lists = {}, {}
    null_odds = {} if version_2 else None
    for example_index in sorted(features_of):
        example = features.examples[example_index]
        candidates = []  # (score, feature, start, end, start_logit, end_logit)
        null = None
        for feature in features_of[example_index]:
            starts, ends = start_logits[feature], end_logits[feature]
            candidates += _window_candidates(features, feature, starts, ends, n_best_size, max_answer_length)
            null_score = starts[0] + ends[0]
            if version_2 and (null is None or null_score < null[0]):
                null = (null_score, feature, 0, 0, starts[0], ends[0])
        if null is not None:
            candidates.append(null)
        candidates.sort(key=lambda candidate: -candidate[0])  # stable, as the original
        nbest = _nbest(features, candidates, n_best_size)
        if version_2 and "" not in (entry["text"] for entry in nbest):
            nbest.append(_entry("", null[4], null[5]))
        if not nbest:
            nbest.append(_entry("", 0.0, 0.0))
        _add_probabilities(nbest)
        nbest_lists[example.qas_id] = nbest
        best_non_null = next((entry for entry in nbest if entry["text"]), None)
        if not version_2:
            predictions[example.qas_id] = nbest[0]["text"]
            continue
        if best_non_null is None:
            score_diff = NO_SPAN_NULL_ODDS
        else:
            score_diff = float(null[0] - best_non_null["start_logit"] - best_non_null["end_logit"])
        null_odds[example.qas_id] = score_diff
        answer = best_non_null["text"] if best_non_null is not None else ""
        predictions[example.qas_id] = "" if score_diff > null_score_diff_threshold else answer
    return SquadPredictions(predictions, nbest_lists, null_odds)


def _window_candidates(features, feature, starts, ends, n_best_size, max_answer_length):
    """The valid (start, end) pairs among the window's top starts x top ends, in that order."""
    top_starts = np.argsort(-starts, kind="stable")[:n_best_size]
    top_ends = np.argsort(-ends, kind="stable")[:n_best_size]
    first = features.context_start[feature]
    last = first + features.context_length[feature] - 1
    start_grid, end_grid = np.meshgrid(top_starts, top_ends, indexing="ij")  # (n, n)
    valid = (
        (start_grid >= first) & (start_grid <= last) & (end_grid >= first) & (end_grid <= last)
        & features.max_context[feature][start_grid]
        & (end_grid >= start_grid)
        & (end_grid - start_grid + 1 <= max_answer_length)
    )
    return [
        (starts[s] + ends[e], feature, int(s), int(e), starts[s], ends[e])
        for s, e in zip(start_grid[valid], end_grid[valid])
    ]


def _nbest(features, candidates, n_best_size):
    nbest, seen = [], set()
    for _, feature, start, end, start_logit, end_logit in candidates:
        if len(nbest) >= n_best_size:
            break
        text = features.piece_span_text(feature, start, end) if start > 0 else ""
        if text in seen:
            continue
        seen.add(text)
        nbest.append(_entry(text, start_logit, end_logit))
    return nbest


def _entry(text, start_logit, end_logit):
    # The original's key order; "probability" is filled in once the list is complete.
    return {"text": text, "probability": None, "start_logit": float(start_logit), "end_logit": float(end_logit)}


def _add_probabilities(nbest):
    """Softmax of start + end logit over the n-best list, stored as "probability"."""
    scores = [entry["start_logit"] + entry["end_logit"] for entry in nbest]
    top = max(scores)
    exps = [math.exp(score - top) for score in scores]
    total = sum(exps)
    for entry, value in zip(nbest, exps):
        entry["probability"] = value / total
