"""ELECTRA's packing: plain two-segment examples, no pair label (google-research/electra `ExampleBuilder`).

Sentences of one document are gathered until they reach the target length
(5% of the time a random shorter one), then split in two segments: the
first takes sentences while under half the target (10% of the time all of
them), the rest go to the second. Examples never cross documents and carry
no pair label. ELECTRA builds them once and masks them anew at every step;
so does `dynamic_pretraining_dataset(pairing="segments")`.
"""

import numpy as np

# The reference's chances: one segment only, and a random target length.
ONE_SEGMENT_PROBABILITY = 0.1
RANDOM_LENGTH_PROBABILITY = 0.05


def electra_segments(corpus, max_seq_length, rng, cls_token_id, sep_token_id):
    """Pack a tokenized corpus into ELECTRA's two-segment examples.

    Args:
        corpus: `corpus.TokenizedCorpus`.
        max_seq_length: int. Length of an example, special tokens included.
        rng: `numpy.random.Generator` (the packing is drawn once per seed).
        cls_token_id, sep_token_id: int.

    Returns:
        `(token_ids, segment_ids, num_tokens)`: int32 `[num_examples,
        max_seq_length]` twice (0 after the end) and int64 `[num_examples]`.
    """
    starts = corpus.sentence_starts
    examples = []
    target = max_seq_length
    for document in range(corpus.num_documents):
        first, end = corpus.document_sentence_range(document)
        gathered, length = [], 0
        for sentence in range(first, end):
            gathered.append(corpus.token_ids[starts[sentence] : starts[sentence + 1]])
            length += len(gathered[-1])
            if length >= target:
                examples.append(_split(gathered, target, max_seq_length, rng))
                target = _next_target(max_seq_length, rng)
                gathered, length = [], 0
        if length:
            examples.append(_split(gathered, target, max_seq_length, rng))
            target = _next_target(max_seq_length, rng)
    token_ids = np.zeros((len(examples), max_seq_length), np.int32)
    segment_ids = np.zeros_like(token_ids)
    num_tokens = np.zeros(len(examples), np.int64)
    for row, (first_segment, second_segment) in enumerate(examples):
        ids = [cls_token_id, *first_segment, sep_token_id]
        segments = [0] * len(ids)
        if len(second_segment):
            ids += [*second_segment, sep_token_id]
            segments += [1] * (len(second_segment) + 1)
        token_ids[row, : len(ids)] = ids
        segment_ids[row, : len(ids)] = segments
        num_tokens[row] = len(ids)
    return token_ids, segment_ids, num_tokens


def _next_target(max_seq_length, rng):
    if rng.random() < RANDOM_LENGTH_PROBABILITY:
        return int(rng.integers(5, max_seq_length + 1))
    return max_seq_length


def _split(sentences, target, max_seq_length, rng):
    """The two segments of gathered sentences, as the reference's `_create_example`."""
    first_target = 100_000 if rng.random() < ONE_SEGMENT_PROBABILITY else (target - 3) // 2
    first, second = [], []
    for sentence in sentences:
        # To the first segment while it is empty or stays under its target (50% of the time past it,
        # while the second is still empty).
        if (
            not first
            or len(first) + len(sentence) < first_target
            or (not second and len(first) < first_target and rng.random() < 0.5)
        ):
            first.extend(sentence.tolist())
        else:
            second.extend(sentence.tolist())
    first = first[: max_seq_length - 2]
    second = second[: max(0, max_seq_length - len(first) - 3)]
    return first, second
