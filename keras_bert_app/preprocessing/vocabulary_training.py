"""Train a WordPiece vocabulary on a corpus (`keras-bert-app build-vocab`).

Words are split and normalised exactly as `BertTokenizer` does; the subword
vocabulary is then learned by tensorflow-text's `bert_vocab_from_dataset`
(its own splitter passes our words through unchanged). The vocabulary starts
with BERT's special tokens: `[PAD] [UNK] [CLS] [SEP] [MASK]`.
"""

import argparse
import pathlib
import sys

from keras_bert_app.preprocessing.vocabulary import SPECIAL_TOKENS

LINES_PER_BATCH = 1024


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
    from tensorflow_text.tools.wordpiece_vocab.bert_vocab_from_dataset import (
        bert_vocab_from_dataset,
    )

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
    learn_params = {"max_unique_chars": int(max_unique_characters)}
    if min_count is not None:
        learn_params["lower_thresh"] = int(min_count)
    vocabulary = bert_vocab_from_dataset(
        corpus_words(corpus_files, lowercase),
        vocab_size=int(vocabulary_size),
        reserved_tokens=list(SPECIAL_TOKENS),
        bert_tokenizer_params={"lower_case": False},  # our words are normalised already
        learn_params=learn_params,
    )
    if len(vocabulary) <= len(SPECIAL_TOKENS):
        raise ValueError(
            f"build-vocab: the corpus ({', '.join(map(str, corpus_files))}) gave no "
            "vocabulary: is it empty?"
        )
    if output is not None:
        write_vocabulary(vocabulary, output)
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
