"""Sentence pairs for next-sentence prediction (BERT paper, section 3.1, A.1).

The algorithm of the original `create_pretraining_data.py`, on token ids:

- per document, one target length: `max_seq_length - 3`, or with probability
  `short_seq_prob` a random length in `[2, max_seq_length - 3]`;
- sentences accumulate into a chunk until the target is reached (or the
  document ends);
- segment A is a random non-empty prefix of the chunk;
- with probability 0.5, or always when the chunk holds one sentence, B is
  taken from a random *other* document starting at a random sentence (label
  1, "random"), and the unused sentences of the chunk go back to the
  document; otherwise B is the rest of the chunk (label 0, "IsNext");
- the pair is cut to `max_seq_length - 3` tokens by removing tokens from the
  longer side, each from its front or its back at random.

Differences from the original, on purpose: the other document is drawn
uniformly from the *other* documents (the original retries and may keep the
same one), and truncation draws the number of tokens removed from the front
with one binomial draw (the same distribution). A corpus of one document is
refused.

Pairs are made as spans of the corpus' token array (`create_pair_spans`), so
other per-token arrays (word starts) follow the tokens (`pack_span_values`).
"""

import numpy as np

IS_NEXT = 0
RANDOM_NEXT = 1


def target_sequence_length(rng, max_num_tokens, short_seq_prob):
    """The target number of tokens of A + B for one document.

    Returns:
        `(target_length, is_short)`.
    """
    if rng.random() < short_seq_prob:
        return 2 + _random_int(rng, max_num_tokens - 1), True
    return max_num_tokens, False


def truncated_lengths(length_a, length_b, max_num_tokens):
    """Lengths of A and B after the original truncation.

    The original removes one token at a time from the longer side (from B
    when both are as long) until the pair fits.
    """
    excess = length_a + length_b - max_num_tokens
    if excess <= 0:
        return length_a, length_b
    if length_a > length_b:
        cut = min(excess, length_a - length_b)
        length_a -= cut
    else:
        cut = min(excess, length_b - length_a)
        length_b -= cut
    rest = excess - cut
    return length_a - rest // 2, length_b - (rest + 1) // 2


def truncate_pair(span_a, span_b, max_num_tokens, rng):
    """The original `truncate_seq_pair` on two spans of the corpus' tokens.

    While the pair is longer than `max_num_tokens`, one token goes from the
    longer span (from B when both are as long), from its front or its back
    at random (`truncated_lengths`, then one binomial draw per cut span).

    Returns:
        `(span_a, span_b)`, each a `(start, end)` pair within the given one.
    """
    length_a, length_b = truncated_lengths(span_a[1] - span_a[0], span_b[1] - span_b[0], max_num_tokens)
    return _cut(span_a, length_a, rng), _cut(span_b, length_b, rng)


def _cut(span, new_length, rng):
    """Remove `end - start - new_length` tokens of a span, each from the front or back."""
    start, end = span
    removed = end - start - new_length
    if removed == 0:
        return span
    front = int(rng.binomial(removed, 0.5))
    return start + front, start + front + new_length


def _random_int(rng, high):
    """A uniform int in `[0, high)` (one float draw: faster than `integers`)."""
    return min(int(rng.random() * high), high - 1)


def _random_next_segment(corpus, document_index, target_length, rng):
    """The span of B in a random other document, from a random sentence on."""
    other = _random_int(rng, corpus.num_documents - 1)
    if other >= document_index:
        other += 1
    first, end = corpus.document_sentence_range(other)
    start_sentence = first + _random_int(rng, end - first)
    starts = corpus.sentence_starts[start_sentence : end + 1]
    # Take sentences until the target is reached (at least one) or the
    # document ends.
    last = int(np.searchsorted(starts, starts[0] + target_length, side="left"))
    last = min(max(last, 1), len(starts) - 1)
    return int(starts[0]), int(starts[last])


def create_pairs(corpus, document_index, rng, max_seq_length, short_seq_prob):
    """The sentence pairs of one document, as token arrays.

    `create_pair_spans` with the spans' tokens: a list of `(tokens_a,
    tokens_b, label)` (int32 arrays `[length_a]`, `[length_b]`), and
    `is_short`.
    """
    spans, is_short = create_pair_spans(corpus, document_index, rng, max_seq_length, short_seq_prob)
    tokens = corpus.token_ids
    pairs = [(tokens[a[0] : a[1]], tokens[b[0] : b[1]], label) for a, b, label in spans]
    return pairs, is_short


def create_pair_spans(corpus, document_index, rng, max_seq_length, short_seq_prob):
    """The sentence pairs of one document, as spans of the corpus' tokens.

    Args:
        corpus: `TokenizedCorpus` with at least two documents.
        document_index: int. The document to pair.
        rng: `numpy.random.Generator`. All randomness comes from it.
        max_seq_length: int. Length of `[CLS] A [SEP] B [SEP]` at most.
        short_seq_prob: float. Probability of a short target length.

    Returns:
        `(spans, is_short)`: `spans` is a list of `(span_a, span_b, label)`,
        each span a `(start, end)` pair of offsets into `corpus.token_ids`,
        label `IS_NEXT` (0) or `RANDOM_NEXT` (1); `is_short` says whether the
        document drew a short target length. Spans let other per-token
        arrays of the corpus (word starts) follow the tokens.
    """
    if corpus.num_documents < 2:
        raise ValueError(
            "Next-sentence pairs need at least 2 documents (B is drawn from "
            f"another document half of the time), got {corpus.num_documents}. "
            "Separate the documents of the corpus with blank lines."
        )
    max_num_tokens = max_seq_length - 3
    target_length, is_short = target_sequence_length(rng, max_num_tokens, short_seq_prob)
    first, end = corpus.document_sentence_range(document_index)
    # Token offsets of the document's sentences.
    offsets = corpus.sentence_starts[first : end + 1].tolist()
    num_sentences = end - first
    spans = []
    chunk_start = 0  # first sentence of the current chunk
    sentence = 0
    while sentence < num_sentences:
        chunk_length = offsets[sentence + 1] - offsets[chunk_start]
        if sentence == num_sentences - 1 or chunk_length >= target_length:
            num_chunk_sentences = sentence + 1 - chunk_start
            a_end = chunk_start + 1
            if num_chunk_sentences >= 2:
                a_end += _random_int(rng, num_chunk_sentences - 1)
            span_a = offsets[chunk_start], offsets[a_end]
            if num_chunk_sentences == 1 or rng.random() < 0.5:
                label = RANDOM_NEXT
                span_b = _random_next_segment(corpus, document_index, target_length - (span_a[1] - span_a[0]), rng)
                # The sentences of the chunk after A are put back.
                sentence = a_end - 1
            else:
                label = IS_NEXT
                span_b = offsets[a_end], offsets[sentence + 1]
            spans.append((*truncate_pair(span_a, span_b, max_num_tokens, rng), label))
            chunk_start = sentence + 1
        sentence += 1
    return spans, is_short


def pack_pairs(pairs, max_seq_length, cls_token_id, sep_token_id):
    """`[CLS] A [SEP] B [SEP]` for each pair, padded with 0.

    Args:
        pairs: list of `(tokens_a, tokens_b, label)` from `create_pairs`.
        max_seq_length: int. The padded length.
        cls_token_id: int. Id of `[CLS]`.
        sep_token_id: int. Id of `[SEP]`.

    Returns:
        `(token_ids, segment_ids, num_tokens)`: int32 arrays `[num_pairs,
        max_seq_length]` (segment 0 covers `[CLS] A [SEP]`, segment 1 covers
        `B [SEP]`, padding is 0) and int64 `[num_pairs]`.
    """
    token_ids = np.zeros((len(pairs), max_seq_length), dtype=np.int32)
    segment_ids = np.zeros_like(token_ids)
    num_tokens = np.zeros(len(pairs), dtype=np.int64)
    for row, (tokens_a, tokens_b, _) in enumerate(pairs):
        b_start = len(tokens_a) + 2
        end = b_start + len(tokens_b) + 1
        token_ids[row, 1 : b_start - 1] = tokens_a
        token_ids[row, b_start : end - 1] = tokens_b
        segment_ids[row, b_start:end] = 1
        num_tokens[row] = end
    token_ids[:, 0] = cls_token_id
    rows = np.arange(len(pairs))
    token_ids[rows, [len(a) + 1 for a, _, _ in pairs]] = sep_token_id
    token_ids[rows, num_tokens - 1] = sep_token_id
    return token_ids, segment_ids, num_tokens


def pack_span_values(values, spans, max_seq_length):
    """Per-token values of the corpus, laid out as `pack_pairs` lays out tokens.

    Args:
        values: array `[num_corpus_tokens]`, e.g. `TokenizedCorpus.word_starts`.
        spans: list of `(span_a, span_b, label)` from `create_pair_spans`.
        max_seq_length: int. The padded length.

    Returns:
        array `[num_pairs, max_seq_length]` of `values.dtype`: the values of
        A's tokens at `1 ..`, of B's after A's `[SEP]`, zero at `[CLS]`,
        `[SEP]` and padding.
    """
    packed = np.zeros((len(spans), max_seq_length), dtype=values.dtype)
    for row, ((a_start, a_end), (b_start, b_end), _) in enumerate(spans):
        length_a = a_end - a_start
        packed[row, 1 : 1 + length_a] = values[a_start:a_end]
        packed[row, length_a + 2 : length_a + 2 + b_end - b_start] = values[b_start:b_end]
    return packed
