"""Full-sentence packing (RoBERTa's FULL-SENTENCES, Liu et al. 2019, section 4.2).

No sentence pairs and no pair label: each sequence is filled with whole
sentences taken in order, crossing from one document into the next with a
`[SEP]` between them, until the next sentence would not fit:

    [CLS] s1 s2 s3 [SEP] t1 t2 [SEP]      (s from one document, t from the next)

A sentence longer than `max_seq_length - 2` tokens is cut into pieces of
that length. Segment ids are all 0. Sequences are described by their pieces:
`(start, end)` runs of one document's tokens, each followed by a `[SEP]`.
"""

import numpy as np


def full_sentence_pieces(corpus, document_indices, max_seq_length):
    """The sequences of documents packed back to back, in the given order.

    Args:
        corpus: `TokenizedCorpus`.
        document_indices: iterable of int. Documents, in packing order.
        max_seq_length: int. Length of a packed sequence at most.

    Returns:
        list of sequences, each a list of `(start, end)` pieces (offsets into
        `corpus.token_ids`); `1 + sum(end - start + 1)` tokens each.
    """
    longest = max_seq_length - 2  # [CLS] piece [SEP]
    sequences, pieces, used = [], [], 1  # used: tokens of the current sequence, [CLS] included
    for document in document_indices:
        first, end = corpus.document_sentence_range(document)
        offsets = corpus.sentence_starts[first : end + 1].tolist()
        open_piece = False  # the sequence's last piece is this document's
        for sentence_start, sentence_end in zip(offsets[:-1], offsets[1:]):
            for start in range(sentence_start, sentence_end, longest):
                stop = min(start + longest, sentence_end)
                cost = stop - start + (0 if open_piece else 1)  # a new piece brings its [SEP]
                if used + cost > max_seq_length:
                    sequences.append(pieces)
                    pieces, used, open_piece = [], 1, False
                    cost = stop - start + 1
                if open_piece:
                    pieces[-1] = (pieces[-1][0], stop)
                else:
                    pieces.append((start, stop))
                used += cost
                open_piece = True
    if pieces:
        sequences.append(pieces)
    return sequences


def pack_pieces(values, sequences, max_seq_length, first_value=0, separator_value=0):
    """Lay out per-token values of the corpus as packed sequences.

    Args:
        values: array `[num_corpus_tokens]` (token ids, word starts).
        sequences: from `full_sentence_pieces`.
        max_seq_length: int. The padded length.
        first_value, separator_value: the values at position 0 (`[CLS]`)
            and after each piece (`[SEP]`).

    Returns:
        `(packed, num_tokens)`: `values.dtype` `[num_sequences,
        max_seq_length]` (0 after the end) and int64 `[num_sequences]`.
    """
    packed = np.zeros((len(sequences), max_seq_length), dtype=values.dtype)
    num_tokens = np.zeros(len(sequences), dtype=np.int64)
    for row, pieces in enumerate(sequences):
        packed[row, 0] = first_value
        position = 1
        for start, end in pieces:
            packed[row, position : position + end - start] = values[start:end]
            position += end - start
            packed[row, position] = separator_value
            position += 1
        num_tokens[row] = position
    return packed, num_tokens
