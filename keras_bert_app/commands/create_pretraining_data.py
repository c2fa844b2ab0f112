"""`keras-bert-app create-pretraining-data`: corpus -> masked sentence-pair TFRecords (`kba.create_pretraining_data`).

    keras-bert-app create-pretraining-data --input wiki/*.txt --output data/ \\
        --vocab vocab.txt --max-seq-length 128 --dupe-factor 10 --num-shards 8
    keras-bert-app create-pretraining-data --input zh/*.txt --output data/ \\
        --vocab bert_chinese_vocab.txt --whole-word-masking --segmenter jieba
    keras-bert-app create-pretraining-data --input wiki/*.txt --output sop/ --vocab vocab.txt --pairing sop
    keras-bert-app create-pretraining-data --input wiki/*.txt --output albert/ --preset albert_folder/ \
        --pairing sop --masking ngram
    keras-bert-app create-pretraining-data --input 'gs://bucket/wiki/*.txt' --output gs://bucket/data/ \
        --vocab vocab.txt --runner beam --beam-option runner=DataflowRunner --beam-option project=my-project \
        --beam-option region=us-central1 --beam-option temp_location=gs://bucket/tmp
"""

import argparse
import os

from keras_bert_app.commands.options import keywords


def add_masking_arguments(parser, when=""):
    """The masking flags, shared with `pretrain --corpus`; `when` adds to --segmenter's help."""
    parser.add_argument("--whole-word-masking", action="store_true",
                        help="mask a word's tokens together (## pieces; with --segmenter, Chinese words); "
                             "the same as --masking whole_word")
    parser.add_argument("--masking", choices=["token", "whole_word", "ngram"], default="token",
                        help="token (the paper), whole_word, or ngram: n consecutive whole words, "
                             "p(n) proportional to 1/n (ALBERT/ERNIE phrase masking)")
    parser.add_argument("--max-ngram", type=int, default=3, metavar="N", help="longest n-gram with --masking ngram")
    parser.add_argument("--segmenter", choices=["jieba"], default=None,
                        help=f"cut runs of Chinese characters into words for whole-word/n-gram masking{when} "
                             '(needs jieba: pip install "keras-bert-app[zh]")')
    parser.add_argument("--entity-masking", action="store_true",
                        help="with --segmenter jieba: person, place and organisation names are units "
                             "(jieba.posseg tags nr, ns, nt; ERNIE's entity-level masking)")


def add_pairing_argument(parser, default="nsp", default_help="nsp"):
    """The --pairing flag, shared with `pretrain --corpus`."""
    parser.add_argument("--pairing", choices=["nsp", "sop", "full_sentences"], default=default,
                        help="how sequences are made: nsp (BERT's next-sentence pairs), sop (ALBERT's "
                             "sentence-order pairs: consecutive segments of one document, swapped half the time, "
                             "label 1 = swapped), full_sentences (RoBERTa: whole sentences packed across "
                             f"documents, no pair label); default {default_help}")


def add_arguments(parser):
    parser.add_argument("--input", nargs="+", required=True, metavar="FILE",
                        help="corpus files or globs (.gz allowed): one sentence per line, blank line between documents")
    parser.add_argument("--output", required=True, metavar="DIR", help="directory for the *.tfrecord shards")
    tokenizer = parser.add_mutually_exclusive_group(required=True)
    tokenizer.add_argument("--vocab", metavar="FILE", help="WordPiece vocabulary, one token a line")
    tokenizer.add_argument("--preset", metavar="PRESET",
                           help="tokenize as this preset does (name or folder): its WordPiece vocabulary and casing, "
                                "or ALBERT's SentencePiece model (whole words: a \u2581 piece and the pieces after it)")
    parser.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=None,
                        help="with --vocab: lowercase and strip accents (uncased models). Default: as the "
                             "vocabulary is, lowercase unless it holds uppercase word pieces (a cased one)")
    parser.add_argument("--max-seq-length", type=int, default=128,
                        help="tokens per sequence pair, [CLS] and [SEP]s included (default 128)")
    parser.add_argument("--max-predictions-per-seq", type=int, default=20,
                        help="at most this many masked positions per sequence (default 20)")
    parser.add_argument("--masked-lm-prob", type=float, default=0.15,
                        help="share of the tokens chosen for the masked LM (default 0.15)")
    parser.add_argument("--short-seq-prob", type=float, default=0.1,
                        help="chance of a shorter target length for a pair, as in the original (default 0.1)")
    parser.add_argument("--dupe-factor", type=int, default=10, help="passes over the corpus, each with new masks (default 10)")
    parser.add_argument("--seed", type=int, default=12345,
                        help="random seed of pairing and masking (default 12345, the original's)")
    add_masking_arguments(parser)
    add_pairing_argument(parser)
    parser.add_argument("--num-shards", type=int, default=1, help="number of output files (default 1)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="worker processes (with --runner beam: the DirectRunner's); "
                             "default: the number of CPUs")
    parser.add_argument("--runner", choices=["local", "beam"], default="local",
                        help="local: worker processes on this machine; beam: the same generator as an Apache Beam "
                             "pipeline writing the same records (DirectRunner by default; Dataflow, Flink, Spark by "
                             'their --beam-option flags; needs pip install "keras-bert-app[beam]")')
    parser.add_argument("--beam-option", action="append", default=None, metavar="KEY=VALUE", dest="beam_options",
                        help="a Beam pipeline option, passed through unchanged (repeat it): runner=DataflowRunner, "
                             "project=..., region=..., temp_location=gs://..., flink_master=host:8081, ...")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the shards of an earlier run in --output (refused otherwise)")


def run(args):
    from keras_bert_app.data.create_pretraining_data import create_pretraining_data

    summary = create_pretraining_data(
        args.input,
        args.output,
        _tokenizer(args),
        log=print,
        beam_options=_beam_options(args),
        **keywords(
            args, "lowercase", "max_seq_length", "max_predictions_per_seq", "masked_lm_prob", "short_seq_prob",
            "dupe_factor", "seed", "whole_word_masking", "masking", "max_ngram", "segmenter", "entity_masking",
            "pairing", "num_shards", "workers", "overwrite", "runner",
        ),
    )
    print(
        f"{summary['documents']} documents, {summary['instances']} instances, "
        f"{summary['tokens']} tokens; masked fraction "
        f"{summary['masked_fraction']:.4f}, {_pairing_line(summary)}, short targets "
        f"{summary['short_target_fraction']:.3f}; "
        f"{len(summary['shards'])} shard(s) in {args.output} "
        f"({summary['seconds']:.1f} s)"
    )
    empty = len(summary["shards"]) - min(summary["instances"], len(summary["shards"]))
    if empty:
        print(f"{empty} of the {len(summary['shards'])} shards hold no instance: fewer instances than --num-shards "
              f"({summary['instances']}); pretrain passes over them.")
    return 0


def _tokenizer(args):
    """The --vocab file, or the --preset's own tokenizer (its casing: --lowercase is refused with it)."""
    if args.vocab is not None:
        return args.vocab
    from keras_bert_app import errors
    from keras_bert_app.preprocessing.preset_tokenizer import tokenizer_from_preset

    if args.lowercase is not None:
        raise errors.ArgumentError(
            "lowercase", "--lowercase/--no-lowercase go with --vocab; with --preset the preset's own casing applies."
        )
    return tokenizer_from_preset(args.preset)


def _beam_options(args):
    """--beam-option KEY=VALUE flags as Beam's `--KEY=VALUE` (a bare KEY: a switch), refused without --runner beam."""
    if args.beam_options is None:
        return None
    from keras_bert_app import errors

    if args.runner != "beam":
        raise errors.ArgumentError("beam_options", "--beam-option goes with --runner beam.")
    return [f"--{option.removeprefix('--')}" for option in args.beam_options]


def _pairing_line(summary):
    if summary["pairing"] == "sop":
        return (f"sentence-order pairs: swapped fraction {summary['swapped_fraction']:.4f}, "
                f"{summary['single_sentence_documents']} single-sentence document(s) skipped")
    if summary["pairing"] == "full_sentences":
        return f"full sentences: real-token fraction {summary['real_token_fraction']:.4f}"
    return f"IsNext fraction {summary['is_next_fraction']:.4f}"
