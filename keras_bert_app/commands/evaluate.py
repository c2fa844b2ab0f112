"""`keras-bert-app evaluate [squad]`: official metrics (`kba.evaluate`, `kba.evaluate_squad`).

    keras-bert-app evaluate --preset RUN/preset --input dev.tsv [--output metrics.json]
    keras-bert-app evaluate --conlleval tagged.txt
    keras-bert-app evaluate squad --data dev-v1.1.json --predictions predictions.json
    keras-bert-app evaluate squad --data dev-v2.0.json --predictions predictions.json \\
        --na-prob-file null_odds.json

The first prints the task's official metrics on a labelled file, read the
way the model was trained. `--conlleval` scores a file in conlleval's input
layout. `evaluate squad` prints the JSON the official `evaluate-v1.1.py` /
`evaluate-v2.0.py` print; questions without a prediction are reported on
stderr.
"""

import json
import pathlib
import sys


def add_arguments(parser):
    parser.add_argument(
        "variant", nargs="?", choices=("squad",), metavar="squad",
        help="score a SQuAD predictions file (--data, --predictions) as the official scripts do",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--preset", help="a finetune run folder or its preset/ folder, or an HF task checkpoint folder (with --input)")
    source.add_argument("--conlleval", help="a token-per-line file: ... GOLD PREDICTED")
    parser.add_argument("--input", help="labelled file in the task's format (with --preset)")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size (default 32)")
    parser.add_argument(
        "--no-bucketing", action="store_true",
        help="with --preset: pad every batch to the preset's sequence length (default: to the longest "
        "example rounded up to a bucket length, examples grouped by length)",
    )
    parser.add_argument("--data", help="squad: the SQuAD JSON file with the gold answers")
    parser.add_argument("--predictions", help="squad: JSON question id -> answer text")
    parser.add_argument("--na-prob-file", help="squad v2.0: JSON question id -> no-answer score (null_odds.json)")
    parser.add_argument(
        "--na-prob-thresh", type=float, default=1.0,
        help="squad v2.0: predict no answer when the no-answer score is above this (default 1.0)",
    )
    parser.add_argument(
        "--version", choices=("1.1", "2.0"), help="squad: score as SQuAD 1.1 or 2.0 (default: from the data file)"
    )
    parser.add_argument("--output", help="also write the metrics as JSON here")


def run(args):
    from keras_bert_app import errors

    if args.variant == "squad":
        from keras_bert_app.evaluation.squad_evaluate import evaluate_squad

        if args.data is None or args.predictions is None:
            raise errors.ArgumentError("data", "evaluate squad needs --data and --predictions.")
        metrics = evaluate_squad(
            args.data, args.predictions, args.na_prob_file, args.na_prob_thresh, args.version,
            log=lambda message: print(message, file=sys.stderr),
        )
    elif args.conlleval:
        from keras_bert_app.evaluation.conlleval import evaluate_conlleval

        metrics = evaluate_conlleval(args.conlleval)
    elif args.preset:
        from keras_bert_app.training.predict import evaluate

        if not args.input:
            raise errors.ArgumentError("input", "--preset needs --input, the labelled file to evaluate on.")
        metrics = evaluate(args.preset, args.input, args.batch_size, bucketing=not args.no_bucketing, log=print)
    else:
        raise errors.ArgumentError("preset", "evaluate needs --preset (with --input), --conlleval, or `squad`.")
    text = json.dumps(metrics, indent=2)
    print(text)
    if args.output:
        path = pathlib.Path(args.output).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    return 0
