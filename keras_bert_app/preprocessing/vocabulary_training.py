"""Train a WordPiece vocabulary on a corpus (`kba.build_vocabulary`, `keras-bert-app build-vocab`).

Words are split and normalised exactly as `BertTokenizer` does; the subword
vocabulary is then learned by tensorflow-text's WordPiece learner
(`wordpiece_tokenizer_learner_lib.learn`, the algorithm behind its
`bert_vocab_from_dataset`). The vocabulary starts with BERT's special tokens:
`[PAD] [UNK] [CLS] [SEP] [MASK]`.

The learner keeps the subwords seen at least a threshold number of times
and bisects for the threshold that gives the target size; `_learn` first
narrows the range by doubling the threshold from the lowest one, so that
few costly learning passes run.
"""

import collections
import os
import pathlib
from typing import Sequence

from keras_bert_app import errors
from keras_bert_app.preprocessing.vocabulary import SPECIAL_TOKENS, write_vocabulary

LINES_PER_BATCH = 1024
DEFAULT_VOCABULARY_SIZE = 30522  # BERT's English vocabularies
DEFAULT_MAX_UNIQUE_CHARACTERS = 1000
LOWEST_THRESHOLD = 10  # tensorflow-text's default lowest subword count
SLACK = 0.05  # the size may end up to 5% below the target (tensorflow-text's default)


def corpus_words(corpus_files, lowercase=True):
    """Yield 1-D `tf.string` tensors of normalised words, a batch of lines at a time, from text files.

    Lines are read by `_line_batches` (the pretraining data's reader), words
    split and normalised in a traced TensorFlow function, as `BertTokenizer`
    does.
    """
    import tensorflow as tf

    from keras_bert_app.preprocessing import bert_normalization

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def words_of(lines):  # [lines] -> [words]
        words, _, _ = bert_normalization.split_words_with_offsets(lines, lowercase)
        words = bert_normalization.normalize(words.flat_values, lowercase)
        return tf.boolean_mask(words, tf.strings.length(words) > 0)

    for batch in _line_batches([str(path) for path in corpus_files]):
        yield words_of(tf.constant(batch))


def corpus_word_counts(corpus_files, lowercase=True):
    """`[(word, count), ...]` of the normalised words of text files (empty for no words)."""
    counts = collections.Counter()
    for words in corpus_words(corpus_files, lowercase):
        counts.update(words.numpy().tolist())
    return [(word.decode("utf-8"), count) for word, count in counts.items()]


def _line_batches(files):
    """Batches of `LINES_PER_BATCH` lines, read as the pretraining data reads them (`corpus_lines.read_lines`).

    Strict UTF-8 (another encoding is refused naming its file and line, not
    learned from as replacement characters), `.gz` files decompressed, LF,
    CRLF or bare-CR line ends.
    """
    from keras_bert_app.preprocessing.corpus_lines import read_lines

    batch = []
    for path in files:
        try:
            for _, line in read_lines(path):
                if line:
                    batch.append(line)
                    if len(batch) == LINES_PER_BATCH:
                        yield batch
                        batch = []
        except ValueError as error:
            raise errors.DataError(str(error)) from None
    if batch:
        yield batch


def build_vocabulary(
    corpus: str | os.PathLike | Sequence[str | os.PathLike],
    output: str | os.PathLike,
    vocab_size: int = DEFAULT_VOCABULARY_SIZE,
    lowercase: bool = True,
    max_unique_characters: int = DEFAULT_MAX_UNIQUE_CHARACTERS,
    min_count: int | None = None,
) -> pathlib.Path:
    """Learn a WordPiece vocabulary from text files and write it, one token a line.

    The stage function behind `keras-bert-app build-vocab`: BERT's special
    tokens `[PAD] [UNK] [CLS] [SEP] [MASK]` first, then the learned pieces
    (see `train_vocabulary`).

    Args:
        corpus: str or path, or a list of them. UTF-8 text files, one
            sentence or paragraph a line (blank lines are ignored).
        output: str or path. The vocabulary file to write (its folder must exist).
        vocab_size: int. The target size, special tokens included; the
            learner stops within 5% below it.
        lowercase: bool. Lower-case and strip accents (uncased), as
            `BertTokenizer(lowercase=...)` will.
        max_unique_characters: int. The alphabet is the most frequent
            characters up to this many; words with others are left out.
        min_count: int or None. The lowest token count the learner's
            threshold search tries (tensorflow-text's default, 10, when None).

    Returns:
        pathlib.Path of the written vocabulary.

    Raises:
        keras_bert_app.errors.MissingFileError: a corpus file or the output's
            folder does not exist.
        keras_bert_app.errors.ArgumentTypeError: an argument of the wrong type.
        keras_bert_app.errors.ArgumentError: `vocab_size` not above the number
            of special tokens, or another value out of range.
        keras_bert_app.errors.DataError: the corpus gave no vocabulary (empty).
    """
    files = _corpus_files("corpus", corpus)
    output = errors.check_path("output", output)
    if output.is_dir():
        raise errors.ArgumentError("output", f"output: {output} is a folder; pass the path of the vocabulary file to write.")
    if not output.parent.is_dir():
        raise errors.MissingFileError("output", f"output: folder {str(output.parent)!r} does not exist.")
    vocabulary = _train(files, vocab_size, lowercase, max_unique_characters, min_count, size_argument="vocab_size")
    write_vocabulary(vocabulary, output)
    return output


def train_vocabulary(
    corpus_files: str | os.PathLike | Sequence[str | os.PathLike],
    vocabulary_size: int,
    lowercase: bool = True,
    output: str | os.PathLike | None = None,
    max_unique_characters: int = DEFAULT_MAX_UNIQUE_CHARACTERS,
    min_count: int | None = None,
) -> list[str]:
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

    Raises:
        The typed errors of `build_vocabulary`, naming this function's arguments.
    """
    files = _corpus_files("corpus_files", corpus_files)
    if output is not None:
        output = errors.check_path("output", output)
    vocabulary = _train(files, vocabulary_size, lowercase, max_unique_characters, min_count, size_argument="vocabulary_size")
    if output is not None:
        write_vocabulary(vocabulary, output)
    return vocabulary


def _corpus_files(argument, corpus):
    """`corpus` (one path or a list) as a non-empty list of existing files."""
    paths = [corpus] if isinstance(corpus, (str, os.PathLike)) else corpus
    errors.check_type(argument, paths, (list, tuple), "a path or a list of paths")
    if not paths:
        raise errors.ArgumentError(argument, f"{argument}: no corpus files given.")
    return [errors.check_file(argument, path) for path in paths]


def _train(corpus_files, vocabulary_size, lowercase, max_unique_characters, min_count, size_argument):
    """The learned vocabulary (special tokens first) of checked corpus files."""
    errors.check_int(size_argument, vocabulary_size)
    if vocabulary_size <= len(SPECIAL_TOKENS):
        raise errors.ArgumentError(
            size_argument,
            f"{size_argument} must be above {len(SPECIAL_TOKENS)} (the special tokens); got {vocabulary_size}.",
        )
    errors.check_type("lowercase", lowercase, bool)
    errors.check_int("max_unique_characters", max_unique_characters, minimum=1)
    if min_count is not None:
        errors.check_int("min_count", min_count, minimum=1)
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    word_counts = corpus_word_counts(corpus_files, lowercase)
    vocabulary = []
    if word_counts:
        vocabulary = _learn(
            learner.learn, word_counts, vocabulary_size,
            LOWEST_THRESHOLD if min_count is None else min_count,
            max_unique_chars=max_unique_characters,
        )
    if len(vocabulary) <= len(SPECIAL_TOKENS):
        raise errors.DataError(
            f"the corpus ({', '.join(map(str, corpus_files))}) gave no vocabulary: is it empty?"
        )
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
