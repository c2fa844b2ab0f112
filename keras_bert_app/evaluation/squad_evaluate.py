"""`keras-bert-app evaluate squad`: official SQuAD v1.1 / v2.0 scores of a predictions file.

    keras-bert-app evaluate squad --data dev-v1.1.json --predictions predictions.json
    keras-bert-app evaluate squad --data dev-v2.0.json --predictions predictions.json \\
        --na-prob-file null_odds.json

Prints the JSON the official `evaluate-v1.1.py` / `evaluate-v2.0.py` print
(the version comes from the data file unless `--version` is given).
"""

import json
import pathlib
import sys


def add_squad_arguments(parser):
    """The options of `evaluate squad`."""
    parser.add_argument("--data", required=True, help="the SQuAD JSON file with the gold answers")
    parser.add_argument("--predictions", required=True, help="JSON: question id -> answer text")
    parser.add_argument(
        "--na-prob-file", help="v2.0: JSON question id -> no-answer score (null_odds.json)"
    )
    parser.add_argument(
        "--na-prob-thresh", type=float, default=1.0,
        help="v2.0: predict no answer when the no-answer score is above this (default 1.0)",
    )
    parser.add_argument(
        "--version", choices=("1.1", "2.0"), help="score as SQuAD 1.1 or 2.0 (default: from the data file)"
    )
    parser.add_argument("--output", help="also write the scores to this JSON file")


def run_squad(args):
    """Score `args.predictions` against `args.data`; print the scores as JSON."""
    from keras_bert_app.data.squad import read_squad
    from keras_bert_app.evaluation import squad_metrics

    data = read_squad(args.data, version=args.version)
    predictions = _read_json_object(args.predictions, "predictions")
    not_text = [key for key, value in predictions.items() if not isinstance(value, str)]
    if not_text:
        raise ValueError(f"{args.predictions}: answers must be strings; {len(not_text)} are not (first: {not_text[:3]}).")
    missing = squad_metrics.missing_predictions(data.articles, predictions)
    if missing:
        print(
            f"warning: {len(missing)} of {len(data)} questions have no prediction and score 0 "
            f"(first: {missing[:5]}).",
            file=sys.stderr,
        )
    if data.version == "1.1":
        if args.na_prob_file:
            raise ValueError("--na-prob-file is for SQuAD v2.0; the data file is v1.1.")
        scores = squad_metrics.evaluate_v1(data.articles, predictions)
    else:
        na_probs = _read_json_object(args.na_prob_file, "no-answer scores") if args.na_prob_file else None
        scores = squad_metrics.evaluate_v2(data.articles, predictions, na_probs, args.na_prob_thresh)
    text = json.dumps(scores, indent=2)
    print(text)
    if args.output:
        pathlib.Path(args.output).write_text(text + "\n", encoding="utf-8")
    return 0


def _read_json_object(path, what):
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not a JSON file ({error}).") from None
    if not isinstance(content, dict):
        raise ValueError(f"{path}: expected a JSON object of {what} keyed by question id; got {type(content).__name__}.")
    return content


add_arguments = add_squad_arguments
run = run_squad
