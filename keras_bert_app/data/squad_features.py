"""SQuAD examples -> fixed-length windows for `BertQuestionAnswerer` (as the original BERT).

Each example becomes one or more features `[CLS] question [SEP] window [SEP]`:
the question is cut to `max_query_length` pieces, and windows of the context
pieces slide by `doc_stride`. A piece that several windows hold belongs to
the one where it has the most context (the "max context" rule). Training
labels are the smallest span of pieces that covers the answer, or (0, 0) =
`[CLS]` for a window without the whole answer and for v2.0 impossible
questions.
"""

import dataclasses
import re

import numpy as np

WORD = re.compile(r"\S+")
# Words are tokenized in chunks (TF graph calls) of this many.
TOKENIZE_CHUNK = 8192


@dataclasses.dataclass
class SquadFeatures:
    """The windows of a list of examples.

    Attributes:
        inputs: dict of int32 [features, seq]: `token_ids`, `segment_ids`,
            `padding_mask`.
        start_positions: int32 [features]. Sequence position of the answer
            start (0 = [CLS] when the window has no answer).
        end_positions: int32 [features].
        example_index: int32 [features]. Index of the feature's example.
        context_start: int32 [features]. Sequence position of the first
            context piece.
        window_start: int32 [features]. Index of that piece among the
            example's context pieces.
        context_length: int32 [features]. Context pieces in the window.
        max_context: bool [features, seq]. The position's piece belongs to
            this window (max-context rule); False outside the context.
        piece_offsets: list (one per example) of int [pieces, 2] arrays: the
            character `[start, end)` of each context piece in the context.
        examples: list of `SquadExample`.
        skipped: list of `(qas_id, reason)`: training examples left out
            because their answer cannot be located.
    """

    inputs: dict
    start_positions: np.ndarray
    end_positions: np.ndarray
    example_index: np.ndarray
    context_start: np.ndarray
    window_start: np.ndarray
    context_length: np.ndarray
    max_context: np.ndarray
    piece_offsets: list
    examples: list
    skipped: list

    def __len__(self):
        return len(self.example_index)

    def labels(self):
        """The `fit` labels of `BertQuestionAnswerer`."""
        return {"start_logits": self.start_positions, "end_logits": self.end_positions}

    def piece_span_text(self, feature, start, end):
        """The context text of sequence positions `start..end` (inclusive) of a feature."""
        example = self.examples[self.example_index[feature]]
        offsets = self.piece_offsets[self.example_index[feature]]
        first = self.window_start[feature] + start - self.context_start[feature]
        last = self.window_start[feature] + end - self.context_start[feature]
        return example.context[offsets[first, 0] : offsets[last, 1]]


def featurize_squad(
    examples,
    tokenizer,
    max_seq_length=384,
    doc_stride=128,
    max_query_length=64,
    training=False,
):
    """Window and label SQuAD examples.

    Args:
        examples: list of `SquadExample`.
        tokenizer: `keras_bert_app.BertTokenizer`.
        max_seq_length: int. Tokens per feature, [CLS] and [SEP]s included.
        doc_stride: int. Context pieces between the starts of two windows.
        max_query_length: int. Question pieces kept (the rest is cut).
        training: bool. Label the answer spans; examples whose answer cannot
            be located are left out and listed in `skipped`.

    Returns:
        `SquadFeatures`.
    """
    if doc_stride < 1 or max_query_length < 0:
        raise ValueError(
            f"doc_stride must be >= 1 and max_query_length >= 0; got {doc_stride} and {max_query_length}."
        )
    from keras_bert_app.data.squad import check_answers

    contexts = _tokenize_contexts(examples, tokenizer)
    questions = _tokenize_texts([example.question for example in examples], tokenizer)
    builder = _FeatureBuilder(tokenizer, max_seq_length, doc_stride)
    skipped = []
    piece_offsets = []
    for index, example in enumerate(examples):
        piece_ids, offsets = contexts[example.context]
        piece_offsets.append(offsets)
        if not len(piece_ids):
            raise ValueError(f"Question {example.qas_id!r}: its context has no tokens.")
        answer = None
        if training:
            reason = check_answers(example)
            if reason is None and not example.is_impossible:
                text, start = example.answers[0]
                answer = _piece_span(offsets, start, start + len(text))
                reason = None if answer is not None else "the answer has no tokens"
            if reason is not None:
                skipped.append((example.qas_id, reason))
                continue
        query_ids = questions[index][0][:max_query_length]
        if max_seq_length - len(query_ids) - 3 < 1:
            raise ValueError(
                f"Question {example.qas_id!r} has {len(query_ids)} pieces (after cutting to "
                f"max_query_length={max_query_length}): with [CLS] and two [SEP] no room is left "
                f"for the context in max_seq_length={max_seq_length}; lower max_query_length."
            )
        builder.add(index, query_ids, piece_ids, answer)
    features = builder.build()
    return SquadFeatures(**features, piece_offsets=piece_offsets, examples=list(examples), skipped=skipped)


class _FeatureBuilder:
    """Accumulates windows as lists, then stacks them into arrays."""

    def __init__(self, tokenizer, max_seq_length, doc_stride):
        self.cls_id = tokenizer.cls_token_id
        self.sep_id = tokenizer.sep_token_id
        self.max_seq_length = max_seq_length
        self.doc_stride = doc_stride
        self.columns = {name: [] for name in (
            "token_ids", "segment_ids", "start_positions", "end_positions", "example_index",
            "context_start", "window_start", "context_length", "max_context",
        )}

    def add(self, example_index, query_ids, piece_ids, answer):
        context_start = len(query_ids) + 2
        max_tokens_for_doc = self.max_seq_length - context_start - 1
        windows = _windows(len(piece_ids), max_tokens_for_doc, self.doc_stride)
        for window_index, (window_start, length) in enumerate(windows):
            token_ids = [self.cls_id, *query_ids, self.sep_id]
            token_ids += list(piece_ids[window_start : window_start + length]) + [self.sep_id]
            segment_ids = [0] * context_start + [1] * (length + 1)
            max_context = np.zeros(self.max_seq_length, bool)
            for i in range(length):
                max_context[context_start + i] = _is_max_context(windows, window_index, window_start + i)
            start = end = 0
            if answer is not None and window_start <= answer[0] and answer[1] < window_start + length:
                start = answer[0] - window_start + context_start
                end = answer[1] - window_start + context_start
            padding = self.max_seq_length - len(token_ids)
            row = self.columns
            row["token_ids"].append(token_ids + [0] * padding)
            row["segment_ids"].append(segment_ids + [0] * padding)
            row["start_positions"].append(start)
            row["end_positions"].append(end)
            row["example_index"].append(example_index)
            row["context_start"].append(context_start)
            row["window_start"].append(window_start)
            row["context_length"].append(length)
            row["max_context"].append(max_context)

    def build(self):
        columns = self.columns
        token_ids = np.asarray(columns.pop("token_ids"), "int32").reshape(-1, self.max_seq_length)
        segment_ids = np.asarray(columns.pop("segment_ids"), "int32").reshape(-1, self.max_seq_length)
        max_context = np.asarray(columns.pop("max_context"), bool).reshape(-1, self.max_seq_length)
        features = {name: np.asarray(values, "int32") for name, values in columns.items()}
        features["inputs"] = {
            "token_ids": token_ids,
            "segment_ids": segment_ids,
            "padding_mask": (token_ids != 0).astype("int32"),
        }
        features["max_context"] = max_context
        return features


def _windows(num_pieces, max_tokens_for_doc, doc_stride):
    """`(start, length)` of each window over `num_pieces` context pieces."""
    windows, start = [], 0
    while start < num_pieces:
        length = min(num_pieces - start, max_tokens_for_doc)
        windows.append((start, length))
        if start + length == num_pieces:
            break
        start += min(length, doc_stride)
    return windows


def _is_max_context(windows, window_index, position):
    """Whether window `window_index` gives piece `position` its most context.

    The score of a window is min(pieces left, pieces right) + 0.01 * length;
    the first best window wins.
    """
    best_score, best_index = None, None
    for index, (start, length) in enumerate(windows):
        end = start + length - 1
        if not start <= position <= end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_index = score, index
    return best_index == window_index


def _piece_span(offsets, char_start, char_end):
    """The first and last piece that overlap characters `[char_start, char_end)`, or None."""
    overlapping = np.nonzero((offsets[:, 1] > char_start) & (offsets[:, 0] < char_end))[0]
    if not len(overlapping):
        return None
    return int(overlapping[0]), int(overlapping[-1])


def _tokenize_contexts(examples, tokenizer):
    """Each distinct context -> (piece ids, [pieces, 2] character offsets in it)."""
    contexts = list(dict.fromkeys(example.context for example in examples))
    words_of = [[(m.group(), m.start()) for m in WORD.finditer(context)] for context in contexts]
    pieces_of_word = _tokenize_words({word for words in words_of for word, _ in words}, tokenizer)
    result = {}
    for context, words in zip(contexts, words_of):
        ids, offsets = [], []
        for word, word_start in words:
            word_ids, word_offsets = pieces_of_word[word]
            ids.extend(word_ids)
            offsets.extend((word_start + start, word_start + end) for start, end in word_offsets)
        result[context] = (ids, np.asarray(offsets, "int64").reshape(-1, 2))
    return result


def _tokenize_words(words, tokenizer):
    """Each distinct word -> (piece ids, [(char start, char end)] in the word)."""
    words = sorted(words)
    pieces = {}
    for begin in range(0, len(words), TOKENIZE_CHUNK):
        chunk = words[begin : begin + TOKENIZE_CHUNK]
        for word, piece in zip(chunk, zip(*_tokenize_with_char_offsets(chunk, tokenizer))):
            ids, starts, ends = piece
            pieces[word] = (ids, list(zip(starts, ends)))
    return pieces


def _tokenize_texts(texts, tokenizer):
    """Each text -> (piece ids, char starts, char ends) lists."""
    results = []
    for begin in range(0, len(texts), TOKENIZE_CHUNK):
        chunk = texts[begin : begin + TOKENIZE_CHUNK]
        results.extend(zip(*_tokenize_with_char_offsets(chunk, tokenizer)))
    return results


def _tokenize_with_char_offsets(texts, tokenizer):
    """`(ids, char starts, char ends)`, each a list (per text) of int lists."""
    if not texts:
        return [], [], []
    from keras_bert_app.preprocessing.offsets import byte_to_char_offsets

    ids, starts, ends = tokenizer.tokenize_with_offsets(list(texts))
    starts = byte_to_char_offsets(list(texts), starts)
    ends = byte_to_char_offsets(list(texts), ends)
    return ids.to_list(), starts.to_list(), ends.to_list()
