"""ALBERT's sentence-order pairs, ported from the published algorithm, and a surface-rule statistic.

The port follows `create_instances_from_document` of google-research/albert's
`create_pretraining_data.py` with its default `random_next_sentence=False`,
written here from reading it, on documents of already tokenized sentences:

- the documents are shuffled once; for each pass and each document, one
  target length: `max_seq_length - 3`, or with probability `short_seq_prob`
  a random length in `[2, max_seq_length - 3]`;
- sentences accumulate into a chunk until the target is reached or the
  document ends; A is a random non-empty prefix of the chunk's sentences;
- a chunk of one sentence gets a B from a random other document (from a
  random sentence on, up to the rest of the target), label 1, as in NSP;
- otherwise B is the rest of the chunk and, with probability 0.5, A and B are
  swapped (label 1; in order: label 0);
- then BERT's `truncate_seq_pair`: while the pair is longer than
  `max_seq_length - 3`, one token goes from the longer segment (B when they
  are as long), from its front or its back with probability 0.5 each.

Masking is left out: it does not change which tokens a segment holds.

The statistic (`best_rule_accuracy`) asks whether a segment's surface gives
its label away: lookup tables on a few surface features of the two segments
(`surface_features`: does each end with sentence-final punctuation, start
inside a word, start with punctuation; which is longer) are fitted on one
half of the pairs, the best on that half is scored on the other half, and
the two halves' scores are averaged. 0.5 is chance.
"""

import itertools
import random

import numpy as np

IN_ORDER = 0
SWAPPED_OR_RANDOM = 1
FINAL_PUNCTUATION = {".", "!", "?"}
CLOSING = {'"', "'", ")", "]"}
FEATURE_NAMES = (
    "a_ends_sentence", "b_ends_sentence", "a_starts_inside_word", "b_starts_inside_word",
    "a_starts_with_punctuation", "b_starts_with_punctuation", "a_longer",
)
MAX_RULE_FEATURES = 3


def _truncate(tokens_a, tokens_b, max_num_tokens, rng):
    """BERT's `truncate_seq_pair`, in place."""
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def _document_pairs(documents, index, max_seq_length, short_seq_prob, rng):
    document = documents[index]
    max_num_tokens = max_seq_length - 3
    target_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_length = rng.randint(2, max_num_tokens)
    pairs, chunk, chunk_length, i = [], [], 0, 0
    while i < len(document):
        chunk.append(document[i])
        chunk_length += len(document[i])
        if i == len(document) - 1 or chunk_length >= target_length:
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            tokens_a = [token for sentence in chunk[:a_end] for token in sentence]
            from_other_document = len(chunk) == 1
            if from_other_document:
                label = SWAPPED_OR_RANDOM
                for _ in range(10):
                    other = rng.randint(0, len(documents) - 1)
                    if other != index:
                        break
                tokens_b = []
                for sentence in documents[other][rng.randint(0, len(documents[other]) - 1):]:
                    tokens_b.extend(sentence)
                    if len(tokens_b) >= target_length - len(tokens_a):
                        break
                i -= len(chunk) - a_end
            else:
                tokens_b = [token for sentence in chunk[a_end:] for token in sentence]
                label = IN_ORDER
                if rng.random() < 0.5:
                    tokens_a, tokens_b, label = tokens_b, tokens_a, SWAPPED_OR_RANDOM
            _truncate(tokens_a, tokens_b, max_num_tokens, rng)
            pairs.append((tokens_a, tokens_b, label, from_other_document))
            chunk, chunk_length = [], 0
        i += 1
    return pairs


def sentence_order_pairs(documents, max_seq_length=128, short_seq_prob=0.1, dupe_factor=1, seed=12345):
    """ALBERT's sentence-order pairs of some documents.

    Args:
        documents: list of documents, each a list of sentences, each a list
            of tokens (any hashable: strings or ids).
        max_seq_length: int. Length of `[CLS] A [SEP] B [SEP]` at most.
        short_seq_prob: float.
        dupe_factor: int. Passes over the documents.
        seed: int. Seed of the one `random.Random`.

    Returns:
        list of `(tokens_a, tokens_b, label, from_other_document)`: label 0
        in order, 1 swapped, or (`from_other_document`, a chunk of one
        sentence) 1 with B from another document.
    """
    rng = random.Random(seed)
    documents = [document for document in documents if document]
    rng.shuffle(documents)
    return [
        pair
        for _ in range(dupe_factor)
        for index in range(len(documents))
        for pair in _document_pairs(documents, index, max_seq_length, short_seq_prob, rng)
    ]


def _ends_sentence(tokens):
    if tokens and tokens[-1] in CLOSING:
        tokens = tokens[:-1]
    return bool(tokens) and tokens[-1] in FINAL_PUNCTUATION


def _is_punctuation(token):
    return not any(character.isalnum() for character in token)


def surface_features(tokens_a, tokens_b):
    """The `FEATURE_NAMES` of a pair of WordPiece token strings, as 0/1 ints."""
    return (
        int(_ends_sentence(tokens_a)),
        int(_ends_sentence(tokens_b)),
        int(tokens_a[0].startswith("##")),
        int(tokens_b[0].startswith("##")),
        int(_is_punctuation(tokens_a[0])),
        int(_is_punctuation(tokens_b[0])),
        int(len(tokens_a) > len(tokens_b)),
    )


def _rules(num_features):
    """Every set of at most `MAX_RULE_FEATURES` features, and all of them."""
    subsets = [
        subset for size in range(1, MAX_RULE_FEATURES + 1)
        for subset in itertools.combinations(range(num_features), size)
    ]
    return subsets + [tuple(range(num_features))]


def _fit(cells, labels, num_cells):
    """The majority label of each cell (0 where a cell is empty or tied)."""
    ones = np.bincount(cells, weights=labels, minlength=num_cells)
    counts = np.bincount(cells, minlength=num_cells)
    return (2 * ones > counts).astype(np.int64)


def best_rule_accuracy(features, labels, seed=0):
    """Held-out accuracy of the best surface rule predicting the label.

    Args:
        features: int array `[num_pairs, num_features]` of 0/1
            (`surface_features` of each pair).
        labels: int array `[num_pairs]` of 0/1.
        seed: int. Seed of the split into halves.

    Returns:
        `(accuracy, rule)`: the held-out accuracy averaged over the two
        halves, and the feature names of the rule chosen on the first half.
    """
    features, labels = np.asarray(features, np.int64), np.asarray(labels, np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    halves = order[: len(order) // 2], order[len(order) // 2 :]
    scores, chosen = [], None
    for fit, held_out in (halves, halves[::-1]):
        best = None
        for rule in _rules(features.shape[1]):
            cells = features[:, list(rule)] @ (1 << np.arange(len(rule)))
            table = _fit(cells[fit], labels[fit], 1 << len(rule))
            fit_accuracy = np.mean(table[cells[fit]] == labels[fit])
            if best is None or fit_accuracy > best[0]:
                best = fit_accuracy, rule, np.mean(table[cells[held_out]] == labels[held_out])
        scores.append(best[2])
        chosen = chosen or [FEATURE_NAMES[index] for index in best[1]]
    return float(np.mean(scores)), chosen
