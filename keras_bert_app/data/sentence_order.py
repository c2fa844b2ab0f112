"""Sentence pairs for sentence-order prediction (ALBERT, Lan et al. 2019, section 4.1).

NSP's random next sentence comes from another document, so topic alone can
solve it. SOP keeps two consecutive segments of one document and swaps them
half of the time: only their order tells.

The reference, google-research/albert's `create_pretraining_data.py` (with
its default `random_next_sentence=False`), makes the chunks and segment A as
BERT's script does (`pretraining_pairs`), takes B as the rest of the chunk,
swaps A and B with probability 0.5 (label 1), and only then cuts the pair to
`max_seq_length - 3` tokens with BERT's `truncate_seq_pair`: one token at a
time from the longer segment, from its front or its back at random. So a
segment may start or end mid-sentence whichever its place, and its ends do
not tell the order. This module does the same, the cut being
`pretraining_pairs.truncate_pair`; labels are stored under
`next_sentence_labels` as ALBERT does.

One difference, on purpose: where a chunk holds one sentence, the reference
pairs it with a segment of another document (label 1, as NSP's random next
sentence), so a few of its "swapped" labels are really "random". Here a
chunk closes only with at least two sentences (a document's last sentence
left alone is not used, and a one-sentence document gives no pair), so every
label is about order only.
"""

from keras_bert_app.data.pretraining_pairs import _random_int
from keras_bert_app.data.pretraining_pairs import target_sequence_length
from keras_bert_app.data.pretraining_pairs import truncate_pair

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
        taken from the later segment, `IN_ORDER` from the earlier one. Each
        span lies within its segment; the two segments meet at a sentence
        boundary, and a cut span may no longer reach it.
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
        earlier = offsets[chunk_start], offsets[a_end]
        later = offsets[a_end], offsets[sentence + 1]
        if rng.random() < 0.5:
            span_a, span_b, label = later, earlier, SWAPPED
        else:
            span_a, span_b, label = earlier, later, IN_ORDER
        spans.append((*truncate_pair(span_a, span_b, max_num_tokens, rng), label))
        chunk_start = sentence + 1
    return spans, is_short


def count_single_sentence_documents(corpus):
    """Documents of fewer than two sentences: they give no sentence-order pair."""
    return int(sum(
        end - first < 2 for first, end in map(corpus.document_sentence_range, range(corpus.num_documents))
    ))
