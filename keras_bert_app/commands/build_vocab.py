"""`keras-bert-app build-vocab`: learn a WordPiece vocabulary from a corpus (`kba.build_vocabulary`).

    keras-bert-app build-vocab --corpus corpus/*.txt --vocab-size 8000 --output vocab.txt
"""

import argparse
import sys

from keras_bert_app.commands.options import keywords


def add_arguments(parser):
    parser.add_argument(
        "--corpus", nargs="+", required=True, metavar="FILE",
        help="UTF-8 text files, one sentence a line",
    )
    parser.add_argument(
        "--vocab-size", type=int, required=True, metavar="N",
        help="target vocabulary size, special tokens included (the result is within 5%% below)",
    )
    parser.add_argument("--output", required=True, metavar="PATH", help="where to write vocab.txt")
    parser.add_argument(
        "--lowercase", action=argparse.BooleanOptionalAction, default=True,
        help="lower-case and strip accents (uncased; the default) or not (--no-lowercase)",
    )
    parser.add_argument(
        "--max-unique-characters", type=int, default=1000, metavar="N",
        help="alphabet size: the N most frequent characters (default 1000)",
    )


def run(args):
    from keras_bert_app.preprocessing.vocabulary_training import build_vocabulary

    print(
        f"build-vocab: learning ~{args.vocab_size} WordPieces from {len(args.corpus)} file(s) "
        f"({'lowercase' if args.lowercase else 'cased'})",
        file=sys.stderr,
    )
    output = build_vocabulary(
        args.corpus,
        args.output,
        **keywords(args, "vocab_size", "lowercase", "max_unique_characters"),
    )
    with open(output, encoding="utf-8") as file:
        num_tokens = sum(1 for _ in file)
    print(f"build-vocab: wrote {num_tokens} tokens to {output}", file=sys.stderr)
    return 0
