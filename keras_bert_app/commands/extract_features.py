"""`keras-bert-app extract-features`: per-token features from chosen layers (`kba.extract_features`).

    keras-bert-app extract-features --input in.txt --preset P --layers=-1,-2,-3,-4 --output out.jsonl

`--layers` takes its value after `=` when the value begins with a minus sign:
argparse reads a separate word `-1,-2` as an option of its own (a single
negative number, `--layers -1`, parses either way).
"""


def add_arguments(parser):
    parser.add_argument("--input", required=True, help="text file, one example a line ('a ||| b' for pairs)")
    parser.add_argument("--preset", required=True, help="preset name or folder (with weights)")
    parser.add_argument("--output", required=True, help="JSON lines file to write")
    parser.add_argument("--layers", default="-1,-2,-3,-4",
                        help="comma-separated layer indices, counted from 0 or from the last (-1); write it "
                        "with '=' as in --layers=-1,-2 (default -1,-2,-3,-4: the last four)")
    parser.add_argument(
        "--sequence-length", type=int,
        help="tokens per example (default 128, or the preset's max_sequence_length when shorter)",
    )
    parser.add_argument("--batch-size", type=int, default=8, help="batch size (default 8)")
    parser.add_argument(
        "--no-bucketing", action="store_true",
        help="pad every batch to --sequence-length (default: to its longest example rounded up to a bucket length)",
    )


def run(args):
    from keras_bert_app import errors
    from keras_bert_app.training.extract_features import extract_features

    try:
        layers = tuple(int(part) for part in args.layers.split(","))
    except ValueError:
        raise errors.ArgumentError(
            "layers", f"--layers must be comma-separated integers such as -1,-2; got {args.layers!r}."
        ) from None
    extract_features(
        args.input, args.preset, args.output, layers=layers, sequence_length=args.sequence_length,
        batch_size=args.batch_size, bucketing=not args.no_bucketing, log=print,
    )
    return 0
