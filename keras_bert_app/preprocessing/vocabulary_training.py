"""Train a WordPiece vocabulary on a corpus (`keras-bert-app build-vocab`).

Words are split and normalised exactly as `BertTokenizer` does; the subword
vocabulary is then learned by tensorflow-text's WordPiece learner
(`wordpiece_tokenizer_learner_lib.learn`, the algorithm behind its
`bert_vocab_from_dataset`). The vocabulary starts with BERT's special tokens:
`[PAD] [UNK] [CLS] [SEP] [MASK]`.

The learner keeps the subwords seen at least a threshold number of times, and
looks for the threshold that gives the target size. Each threshold it tries
costs a full learning pass in Python (seconds for a small corpus). It bisects
the whole range from the lowest threshold (10) to the largest word count, yet
the threshold that fits a vocabulary of a few thousand to 30,000 subwords is
usually far below the largest count. `_learn` first doubles the threshold
upwards from the lowest one until the vocabulary fits, then lets the learner
bisect only that last interval: 1 learning pass instead of 15 for the
quickstart's BBC News corpus, with the same vocabulary.
"""

import argparse
import collections
import pathlib
import sys

from keras_bert_app.preprocessing.vocabulary import SPECIAL_TOKENS

LINES_PER_BATCH = 1024
LOWEST_THRESHOLD = 10  # tensorflow-text's default lowest subword count
SLACK = 0.05  # the size may end up to 5% below the target (tensorflow-text's default)


def corpus_words(corpus_files, lowercase=True):
    """A tf.data.Dataset of 1-D batches of normalised words from text files."""
    import tensorflow as tf

    from keras_bert_app.preprocessing import bert_normalization

    def words_of(lines):  # [lines] -> [words]
        lines = bert_normalization.valid_utf8(lines)
        words, _, _ = bert_normalization.split_words_with_offsets(lines, lowercase)
        words = bert_normalization.normalize(words.flat_values, lowercase)
        return tf.boolean_mask(words, tf.strings.length(words) > 0)

    files = [str(path) for path in corpus_files]
    return (
        tf.data.TextLineDataset(files)
        .batch(LINES_PER_BATCH)
        .map(words_of, num_parallel_calls=tf.data.AUTOTUNE)
    )


def corpus_word_counts(corpus_files, lowercase=True):
    """`[(word, count), ...]` of the normalised words of text files (empty for no words)."""
    counts = collections.Counter()
    for words in corpus_words(corpus_files, lowercase):
        counts.update(words.numpy().tolist())
    return [(word.decode("utf-8"), count) for word, count in counts.items()]


def train_vocabulary(
    corpus_files,
    vocabulary_size,
    lowercase=True,
    output=None,
    max_unique_characters=1000,
    min_count=None,
):
    """Learn a WordPiece vocabulary from text files.

    Args:
        corpus_files: list of paths of UTF-8 text files (one sentence or
            paragraph a line; blank lines are ignored).
        vocabulary_size: int. The target size, special tokens included; the
            learner stops within 5% below it.
        lowercase: bool. Lower-case and strip accents, as
            `BertTokenizer(lowercase=...)` will.
        output: optional path; the vocabulary is written there, one token a line.
        max_unique_characters: int. The alphabet is the most frequent
            characters up to this many; words with others are left out.
        min_count: optional int, the lowest token count the learner's
            threshold search tries (tensorflow-text's default, 10, when None).

    Returns:
        list of str: the vocabulary, special tokens first.
    """
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    from keras_bert_app.preprocessing.vocabulary import write_vocabulary

    corpus_files = [pathlib.Path(path) for path in corpus_files]
    if not corpus_files:
        raise ValueError("build-vocab: no corpus files given")
    for path in corpus_files:
        if not path.is_file():
            raise FileNotFoundError(f"build-vocab: corpus file {str(path)!r} does not exist")
    if int(vocabulary_size) <= len(SPECIAL_TOKENS):
        raise ValueError(
            f"build-vocab: vocab size must be above {len(SPECIAL_TOKENS)} (the special "
            f"tokens), got {vocabulary_size}"
        )
    word_counts = corpus_word_counts(corpus_files, lowercase)
    vocabulary = []
    if word_counts:
        vocabulary = _learn(
            learner.learn, word_counts, int(vocabulary_size),
            LOWEST_THRESHOLD if min_count is None else int(min_count),
            max_unique_chars=int(max_unique_characters),
        )
    if len(vocabulary) <= len(SPECIAL_TOKENS):
        raise ValueError(
            f"build-vocab: the corpus ({', '.join(map(str, corpus_files))}) gave no "
            "vocabulary: is it empty?"
        )
    if output is not None:
        write_vocabulary(vocabulary, output)
    return vocabulary


def _learn(learn, word_counts, vocabulary_size, lowest, **params):
    """`learn` (tensorflow-text's) with its threshold search narrowed first.

    Doubles the threshold from `lowest` until the vocabulary fits in
    `vocabulary_size`; when it fits but is more than `SLACK` below it, the
    learner bisects the thresholds between the last one that was too large
    and the one that fits. The result is a vocabulary the learner gives for
    one threshold: the largest one found that fits.
    """
    largest_count = max(count for _, count in word_counts)

    def at(low, high):  # the learner's own search, over thresholds low..high
        return learn(
            word_counts, vocabulary_size, list(SPECIAL_TOKENS),
            lower_thresh=low, upper_thresh=high, slack_ratio=SLACK, **params,
        )

    threshold, too_large = lowest, None
    vocabulary = at(threshold, threshold)
    while len(vocabulary) > vocabulary_size and threshold < largest_count:
        too_large, threshold = threshold, min(2 * threshold, largest_count)
        vocabulary = at(threshold, threshold)
    if too_large is not None and len(vocabulary) < (1 - SLACK) * vocabulary_size and threshold - too_large > 1:
        bisected = at(too_large + 1, threshold - 1)
        if len(vocabulary) < len(bisected) <= vocabulary_size:
            vocabulary = bisected
    return vocabulary


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
    output = pathlib.Path(args.output)
    if output.parent and not output.parent.exists():
        raise FileNotFoundError(f"build-vocab: output folder {str(output.parent)!r} does not exist")
    print(
        f"build-vocab: learning ~{args.vocab_size} WordPieces from {len(args.corpus)} file(s) "
        f"({'lowercase' if args.lowercase else 'cased'})",
        file=sys.stderr,
    )
    vocabulary = train_vocabulary(
        args.corpus,
        args.vocab_size,
        lowercase=args.lowercase,
        output=output,
        max_unique_characters=args.max_unique_characters,
    )
    print(f"build-vocab: wrote {len(vocabulary)} tokens to {output}", file=sys.stderr)
    return 0
