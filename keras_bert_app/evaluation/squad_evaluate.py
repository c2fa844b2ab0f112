"""`kba.evaluate_squad`: the official SQuAD v1.1 / v2.0 scores of a predictions file.

```python
import keras_bert_app as kba

# {"exact_match": ..., "f1": ...}
kba.evaluate_squad("dev-v1.1.json", "predictions.json")
kba.evaluate_squad("dev-v2.0.json", "predictions.json", na_probs="null_odds.json")
```

Returns what the official `evaluate-v1.1.py` / `evaluate-v2.0.py` print (the
version comes from the data file unless given). The command line:
`keras-bert-app evaluate squad --data D --predictions P [--na-prob-file N]`.
"""

import json
import os
from typing import Callable, Optional, Union

from keras_bert_app import errors
from keras_bert_app.data.text_file import read_text

JsonSource = Union[str, os.PathLike, dict]


def evaluate_squad(
    data: JsonSource,
    predictions: JsonSource,
    na_probs: Optional[JsonSource] = None,
    na_prob_thresh: float = 1.0,
    version: Optional[str] = None,
    *,
    log: Optional[Callable[[str], None]] = None,
) -> dict:
    """Score SQuAD predictions against the gold answers, as the official scripts do.

    Args:
        data: the SQuAD JSON file with the gold answers (path), or its parsed object.
        predictions: JSON question id -> answer text (path or dict).
        na_probs: v2.0: JSON question id -> no-answer score (path or dict,
            e.g. a run's `null_odds.json`), or None.
        na_prob_thresh: float. v2.0: predict no answer when the no-answer
            score is above this.
        version: "1.1", "2.0" or None (from the data file).
        log: callable taking a str, told about questions without a
            prediction (they score 0); None: not told.

    Returns:
        dict: v1.1 `exact_match`, `f1`; v2.0 `exact`, `f1`, `total`,
        `HasAns_*`, `NoAns_*` and `best_*`, in the official scripts' order.

    Raises:
        keras_bert_app.errors.MissingFileError: a path that is not there.
        keras_bert_app.errors.ArgumentError: `na_probs` for v1.1 data, a bad version.
        ValueError: files that are not SQuAD data or predictions.
    """
    from keras_bert_app.data.squad import parse_squad, read_squad
    from keras_bert_app.evaluation import squad_metrics

    if version is not None:
        errors.check_choice("version", version, ("1.1", "2.0"))
    errors.check_number("na_prob_thresh", na_prob_thresh)
    if isinstance(data, dict):
        squad = parse_squad(data, version=version)
    else:
        squad = read_squad(errors.check_file("data", data), version=version)
    predictions, source = _json_object("predictions", predictions, "predictions")
    not_text = [key for key, value in predictions.items() if not isinstance(value, str)]
    if not_text:
        raise errors.DataError(f"{source}: answers must be strings; {len(not_text)} are not (first: {not_text[:3]}).")
    missing = squad_metrics.missing_predictions(squad.articles, predictions)
    if missing and log is not None:
        log(
            f"warning: {len(missing)} of {len(squad)} questions have no prediction and score 0 "
            f"(first: {missing[:5]})."
        )
    if squad.version == "1.1":
        if na_probs is not None:
            raise errors.ArgumentError("na_probs", "na_probs (--na-prob-file) is for SQuAD v2.0; the data file is v1.1.")
        return squad_metrics.evaluate_v1(squad.articles, predictions)
    if na_probs is not None:
        na_probs, _ = _json_object("na_probs", na_probs, "no-answer scores")
    return squad_metrics.evaluate_v2(squad.articles, predictions, na_probs, na_prob_thresh)


def _json_object(argument, value, what):
    """`(dict, source)` from a dict or a JSON file of one object keyed by question id."""
    errors.check_type(argument, value, (str, os.PathLike, dict), "a path or a dict")
    if isinstance(value, dict):
        return value, f"<{argument}>"
    path = errors.check_file(argument, value)
    try:
        content = json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise errors.DataError(f"{path}: not a JSON file ({error}).") from None
    if not isinstance(content, dict):
        raise errors.DataError(
            f"{path}: expected a JSON object of {what} keyed by question id; got {type(content).__name__}."
        )
    return content, str(path)
