"""Sentence pairs for sentence-order prediction (ALBERT, Lan et al. 2019, section 4.1).

NSP's random next sentence comes from another document, so topic alone can
solve it. SOP keeps two consecutive segments of one document and swaps them
half of the time: only their order tells. The pairs follow
`pretraining_pairs.create_pair_spans`, except that B is never drawn from
another document (a chunk closes only with at least two sentences;
one-sentence documents give no pair), the pair is swapped with probability
0.5 (label `SWAPPED`, stored under `next_sentence_labels` as ALBERT does),
and truncation removes tokens from A's front and B's back only, so the two
segments still touch.
"""

from keras_bert_app.data.pretraining_pairs import _random_int
from keras_bert_app.data.pretraining_pairs import target_sequence_length
from keras_bert_app.data.pretraining_pairs import truncated_lengths

IN_ORDER = 0
SWAPPED = 1


def create_sentence_order_spans(corpus, document_index, rng, max_seq_length, short_seq_prob):
    """The sentence-order pairs of one document, as spans of the corpus' tokens.

    Args:
        corpus: `TokenizedCorpus`.
        document_index: int. The document to pair.
        rng: `numpy.random.Generator`. All randomness comes from it.
        max_seq_length: int. Length of `[CLS] A [SEP] B [SEP]` at most.
        short_seq_prob: float. Probability of a short target length.

    Returns:
        `(spans, is_short)` as `create_pair_spans`: `spans` is a list of
        `(span_a, span_b, label)` (offsets into `corpus.token_ids`), empty
        for a document of one sentence; label `SWAPPED` means `span_a` is
        the later segment (`span_b[1] == span_a[0]`), `IN_ORDER` that
        `span_a[1] == span_b[0]`.
    """
    max_num_tokens = max_seq_length - 3
    target_length, is_short = target_sequence_length(rng, max_num_tokens, short_seq_prob)
    first, end = corpus.document_sentence_range(document_index)
    offsets = corpus.sentence_starts[first : end + 1].tolist()
    num_sentences = end - first
    spans = []
    chunk_start = 0  # first sentence of the current chunk
    for sentence in range(num_sentences):
        num_chunk_sentences = sentence + 1 - chunk_start
        chunk_length = offsets[sentence + 1] - offsets[chunk_start]
        if num_chunk_sentences < 2 or (chunk_length < target_length and sentence < num_sentences - 1):
            continue
        a_end = chunk_start + 1 + _random_int(rng, num_chunk_sentences - 1)
        length_a, length_b = truncated_lengths(
            offsets[a_end] - offsets[chunk_start], offsets[sentence + 1] - offsets[a_end], max_num_tokens
        )
        span_a = offsets[a_end] - length_a, offsets[a_end]  # A keeps its end
        span_b = offsets[a_end], offsets[a_end] + length_b  # B keeps its start
        if rng.random() < 0.5:
            spans.append((span_b, span_a, SWAPPED))
        else:
            spans.append((span_a, span_b, IN_ORDER))
        chunk_start = sentence + 1
    return spans, is_short


def count_single_sentence_documents(corpus):
    """Documents of fewer than two sentences: they give no sentence-order pair."""
    return int(sum(
        end - first < 2 for first, end in map(corpus.document_sentence_range, range(corpus.num_documents))
    ))
