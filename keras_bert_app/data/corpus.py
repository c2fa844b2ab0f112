"""Read a pretraining corpus in the original BERT format and tokenize it.

The format of the original `create_pretraining_data.py`: one sentence per
line, a blank line between documents, UTF-8 text, any number of files (globs
and `.gz` allowed). Sentences are kept as the tokenizer sees them; a line that
tokenizes to nothing is skipped and a document left without sentences is
dropped, as the original does.

The tokenized corpus is three flat NumPy arrays (token ids, sentence
offsets, document offsets), which worker processes share after a fork; with
a word segmenter (Chinese) a fourth flags where words start (`segmentation`).
"""

import glob
import os

import numpy as np

from keras_bert_app.data.masking import continuation_flags
from keras_bert_app.data.segmentation import segment_batch
from keras_bert_app.preprocessing.corpus_lines import read_lines

LINES_PER_BATCH = 8192


def expand_input_files(patterns):
    """The sorted list of files named by paths and glob patterns.

    Args:
        patterns: str or list of str. File paths or glob patterns
            (`data/*.txt`, `wiki/**/*.gz`).

    Returns:
        list of str. Each file once, in the order the patterns were given
        (files of one glob sorted by name).
    """
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [patterns]
    files = []
    for pattern in patterns:
        pattern = os.fspath(pattern)
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern, recursive=True))
            matches = [path for path in matches if os.path.isfile(path)]
            if not matches:
                raise FileNotFoundError(f"Input pattern {pattern!r} matches no file.")
        elif os.path.isdir(pattern):
            raise ValueError(
                f"Input {pattern!r} is a directory: expected corpus files "
                f"(pass a glob such as {os.path.join(pattern, '*.txt')!r})."
            )
        elif not os.path.isfile(pattern):
            raise FileNotFoundError(f"Input file {pattern!r} does not exist.")
        else:
            matches = [pattern]
        for path in matches:
            if path not in files:
                files.append(path)
    if not files:
        raise ValueError("No input files given.")
    return files


class TokenizedCorpus:
    """A tokenized corpus: documents of sentences of token ids.

    Args:
        token_ids: int32 array `[num_tokens]`. All tokens, sentence after
            sentence.
        sentence_starts: int64 array `[num_sentences + 1]`. Offset of each
            sentence in `token_ids`, then the total.
        document_starts: int64 array `[num_documents + 1]`. Index of the
            first sentence of each document, then the number of sentences.
        word_starts: optional bool array `[num_tokens]`. True where a word
            starts (from a word segmenter; see `segmentation.segment_batch`).
        segmentation: optional dict of counts from the segmenter (words,
            multi-token words, segmented and fallback tokens).
    """

    def __init__(self, token_ids, sentence_starts, document_starts, word_starts=None, segmentation=None):
        self.token_ids = np.asarray(token_ids, dtype=np.int32)
        self.sentence_starts = np.asarray(sentence_starts, dtype=np.int64)
        self.document_starts = np.asarray(document_starts, dtype=np.int64)
        self.word_starts = None if word_starts is None else np.asarray(word_starts, dtype=bool)
        if self.word_starts is not None and self.word_starts.shape != self.token_ids.shape:
            raise ValueError(
                f"word_starts must have one flag per token ({self.token_ids.shape}); got {self.word_starts.shape}."
            )
        self.segmentation = segmentation

    @property
    def num_documents(self):
        return len(self.document_starts) - 1

    @property
    def num_sentences(self):
        return len(self.sentence_starts) - 1

    @property
    def num_tokens(self):
        return len(self.token_ids)

    def document_sentence_range(self, document_index):
        """`(first, end)` sentence indices of a document."""
        return int(self.document_starts[document_index]), int(self.document_starts[document_index + 1])

    def sentence_tokens(self, sentence_index):
        start, end = self.sentence_starts[sentence_index : sentence_index + 2]
        return self.token_ids[start:end]

    def documents(self):
        """Yield each document as a list of int32 arrays, one per sentence."""
        for index in range(self.num_documents):
            first, end = self.document_sentence_range(index)
            yield [self.sentence_tokens(i) for i in range(first, end)]


def _tokenize_lines(tokenizer, lines):
    """Token ids of a batch of lines: (flat int32 ids, int64 row lengths)."""
    import tensorflow as tf

    ragged = tokenizer(tf.constant(lines))
    if not isinstance(ragged, tf.RaggedTensor):
        raise ValueError(
            "The tokenizer must return a tf.RaggedTensor of token ids for a "
            f"batch of strings, got {type(ragged).__name__}."
        )
    flat = ragged.flat_values.numpy().astype(np.int32)
    return flat, ragged.row_lengths().numpy()


def _segmented_lines(tokenizer, segmenter, is_continuation, lines):
    """Token ids and word-start flags of a batch of lines, and the segmenter's counts."""
    import tensorflow as tf

    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(lines))
    flat = ids.flat_values.numpy().astype(np.int32)
    lengths = ids.row_lengths().numpy()
    word_starts, counts = segment_batch(
        lines, flat, starts.flat_values.numpy(), ends.flat_values.numpy(), lengths, is_continuation, segmenter
    )
    return flat, lengths, word_starts, counts


def tokenize_corpus(files, tokenizer, progress=None, segmenter=None, open_binary=None, allow_empty=False):
    """Read corpus files and tokenize them in batches of lines.

    Args:
        files: list of str. Corpus files (see `expand_input_files`).
        tokenizer: a callable mapping a `tf.string` tensor `[batch]` to a
            `tf.RaggedTensor` of token ids `[batch, None]`, such as
            `keras_bert_app.BertTokenizer`. With `segmenter`, it must also
            have `tokenize_with_offsets` and `get_vocabulary`.
        progress: optional callable, called with the number of lines read
            after each batch (for a progress bar).
        segmenter: optional callable `str -> list of str` (see
            `segmentation.resolve_segmenter`). When given, the CJK runs of
            each line are cut into words and `word_starts` is filled.
        open_binary: optional callable opening a file as a binary stream
            (see `corpus_lines.read_lines`; Beam's `FileSystems.open`).
        allow_empty: bool. Return a corpus of no document rather than
            raising (one file of a corpus read file by file).

    Returns:
        `TokenizedCorpus`. Lines that tokenize to nothing are skipped,
        documents without sentences dropped.

    Raises:
        ValueError: if a file cannot be read or decoded (naming the file and
            line), or if the corpus holds no document.
    """
    token_chunks = []
    word_start_chunks = []
    segmentation = {}
    if segmenter is not None:
        if not callable(getattr(tokenizer, "tokenize_with_offsets", None)):
            raise ValueError(
                "A word segmenter needs a tokenizer with tokenize_with_offsets (such as "
                f"keras_bert_app.BertTokenizer), to align words with tokens; got {type(tokenizer).__name__}."
            )
        is_continuation = continuation_flags(tokenizer.get_vocabulary())
    sentence_lengths = []
    document_sizes = []  # sentences per document, documents in order
    state = {"sentences_in_document": 0}

    def end_document():
        if state["sentences_in_document"]:
            document_sizes.append(state["sentences_in_document"])
        state["sentences_in_document"] = 0

    def flush(lines, boundaries_after):
        # `boundaries_after[i]`: number of blank lines seen after lines[i].
        if not lines:
            return
        if segmenter is None:
            flat, lengths = _tokenize_lines(tokenizer, lines)
        else:
            flat, lengths, word_starts, counts = _segmented_lines(tokenizer, segmenter, is_continuation, lines)
            word_start_chunks.append(word_starts)
            for key, value in counts.items():
                segmentation[key] = segmentation.get(key, 0) + value
        token_chunks.append(flat)
        for length, boundary in zip(lengths.tolist(), boundaries_after):
            if length:
                sentence_lengths.append(length)
                state["sentences_in_document"] += 1
            if boundary:
                end_document()
        if progress is not None:
            progress(len(lines))

    for path in files:
        lines, boundaries = [], []
        for _, text in read_lines(path, open_binary):
            if text:
                lines.append(text)
                boundaries.append(False)
                if len(lines) >= LINES_PER_BATCH:
                    flush(lines, boundaries)
                    lines, boundaries = [], []
            elif boundaries:
                boundaries[-1] = True
            else:
                end_document()
        if boundaries:
            boundaries[-1] = True  # a document never spans two files
        flush(lines, boundaries)
        end_document()

    if not document_sizes and not allow_empty:
        raise ValueError(
            f"The corpus {files} holds no document: expected one sentence per "
            "line with a blank line between documents, got only blank lines "
            "or lines that tokenize to nothing."
        )
    token_ids = np.concatenate(token_chunks) if token_chunks else np.zeros(0, np.int32)
    sentence_starts = np.cumsum([0] + sentence_lengths, dtype=np.int64)
    document_starts = np.cumsum([0] + document_sizes, dtype=np.int64)
    if segmenter is None:
        return TokenizedCorpus(token_ids, sentence_starts, document_starts)
    word_starts = np.concatenate(word_start_chunks) if word_start_chunks else np.zeros(0, bool)
    return TokenizedCorpus(token_ids, sentence_starts, document_starts, word_starts, segmentation)


def concatenate_corpora(parts):
    """One `TokenizedCorpus` of corpora read separately (files, in order), as if read together.

    Documents never span two files, so the corpus of several files is its
    files' corpora one after the other; segmentation counts add up.
    """
    token_ids = np.concatenate([np.zeros(0, np.int32)] + [part.token_ids for part in parts])
    sentence_starts, document_starts = [np.zeros(1, np.int64)], [np.zeros(1, np.int64)]
    num_tokens = num_sentences = 0
    for part in parts:
        sentence_starts.append(part.sentence_starts[1:] + num_tokens)
        document_starts.append(part.document_starts[1:] + num_sentences)
        num_tokens, num_sentences = num_tokens + part.num_tokens, num_sentences + part.num_sentences
    segmented = [part for part in parts if part.word_starts is not None]
    if not segmented:
        return TokenizedCorpus(token_ids, np.concatenate(sentence_starts), np.concatenate(document_starts))
    segmentation = {}
    for part in segmented:
        for key, value in (part.segmentation or {}).items():
            segmentation[key] = segmentation.get(key, 0) + value
    word_starts = np.concatenate([np.zeros(0, bool)] + [part.word_starts for part in segmented])
    return TokenizedCorpus(token_ids, np.concatenate(sentence_starts), np.concatenate(document_starts),
                           word_starts, segmentation)
