"""`keras-bert-app predict [squad]`: run a fine-tuned preset on a file (`kba.predict`).

    keras-bert-app predict --preset RUN/preset --input test.tsv --output predictions.jsonl
    keras-bert-app predict squad --preset RUN/preset --data questions.json --output OUT

The first writes JSON lines (each input line, its prediction and logits;
NER: words and tags). `predict squad` answers the questions of a
SQuAD-format file and writes `predictions.json`, `nbest_predictions.json`
(and v2.0 `null_odds.json`) into the folder OUT.
"""


def add_arguments(parser):
    parser.add_argument(
        "variant", nargs="?", choices=("squad",), metavar="squad",
        help="answer the questions of a SQuAD-format file (--data) with a `finetune squad` preset",
    )
    parser.add_argument("--preset", required=True, help="a finetune run folder or its preset/ folder (or an HF task checkpoint folder, converted once)")
    parser.add_argument("--input", help="file to predict, in the task's format")
    parser.add_argument("--data", help="squad: SQuAD-format JSON with the questions (answers not needed)")
    parser.add_argument(
        "--output", required=True,
        help="JSON lines file to write; squad: folder for predictions.json, nbest_predictions.json (and null_odds.json)",
    )
    parser.add_argument("--batch-size", type=int, default=32, help="batch size (default 32)")
    parser.add_argument(
        "--no-bucketing", action="store_true",
        help="pad every batch to the preset's sequence length (default: to the longest example rounded up "
        "to a bucket length, examples grouped by length; predictions in input order either way)",
    )
    parser.add_argument(
        "--null-score-diff-threshold", type=float,
        help="squad v2.0: no-answer threshold (default: the one tuned by finetune)",
    )


def run(args):
    from keras_bert_app import errors
    from keras_bert_app.training.predict import predict

    if args.variant == "squad":
        if args.data is None or args.input is not None:
            raise errors.ArgumentError("input", "predict squad takes the questions as --data FILE (not --input).")
        source, options = args.data, {"null_score_diff_threshold": args.null_score_diff_threshold}
    else:
        if args.input is None or args.data is not None:
            raise errors.ArgumentError("input", "predict takes the file as --input FILE (--data is for `predict squad`).")
        if args.null_score_diff_threshold is not None:
            raise errors.ArgumentError("null_score_diff_threshold", "--null-score-diff-threshold is for `predict squad`.")
        source, options = args.input, {}
    predict(
        args.preset, source, args.output, args.batch_size, task=args.variant, bucketing=not args.no_bucketing,
        log=print,
        **{name: value for name, value in options.items() if value is not None},
    )
    return 0
