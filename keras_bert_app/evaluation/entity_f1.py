"""Entity-level precision / recall / F1 as CoNLL's `conlleval` computes them.

An entity (chunk) counts as correct only when the predicted span has exactly
the gold start, end and type. Chunk boundaries follow conlleval's rules,
which read both IOB1 (`I-` starts a chunk unless it continues one of the
same type; `B-` only splits two adjacent chunks of one type) and BIO/IOB2
(every chunk starts with `B-`). Sentences are separate sequences: no chunk
crosses a sentence boundary.
"""

import collections


def parse_tag(tag):
    """"B-PER" -> ("B", "PER"); "O" -> ("O", ""). Raises on anything else."""
    if tag == "O":
        return "O", ""
    prefix, _, entity_type = str(tag).partition("-")
    if prefix not in ("B", "I") or not entity_type:
        raise ValueError(f"Expected a tag 'O', 'B-TYPE' or 'I-TYPE'; got {tag!r}.")
    return prefix, entity_type


def entity_spans(tags):
    """The chunks of one sentence as a list of `(type, start, end)`, end exclusive.

    Args:
        tags: sequence of str tags ("O", "B-PER", "I-PER", ...), IOB1 or BIO.
    """
    spans = []
    start, previous_prefix, previous_type = None, "O", ""
    for index, tag in enumerate(list(tags) + ["O"]):
        prefix, entity_type = parse_tag(tag)
        if start is not None and _chunk_ends(previous_prefix, prefix, previous_type, entity_type):
            spans.append((previous_type, start, index))
            start = None
        if _chunk_starts(previous_prefix, prefix, previous_type, entity_type):
            start = index
        previous_prefix, previous_type = prefix, entity_type
    return spans


def _chunk_ends(previous_prefix, prefix, previous_type, entity_type):
    # conlleval's endOfChunk for the B/I/O tags.
    if previous_prefix == "O":
        return False
    return prefix in ("B", "O") or previous_type != entity_type


def _chunk_starts(previous_prefix, prefix, previous_type, entity_type):
    # conlleval's startOfChunk for the B/I/O tags.
    if prefix == "O":
        return False
    return prefix == "B" or previous_prefix == "O" or previous_type != entity_type


def entity_scores(gold_sentences, predicted_sentences):
    """conlleval's figures for a list of tagged sentences.

    Args:
        gold_sentences: list of sentences, each a list of gold tags.
        predicted_sentences: list of sentences, each a list of predicted tags
            (same lengths as the gold ones).

    Returns:
        dict with `precision`, `recall`, `f1` (fractions, 0 when undefined),
        `accuracy` (token level), `num_gold`, `num_predicted`, `num_correct`
        and `per_type`: `{type: {precision, recall, f1, num_gold,
        num_predicted, num_correct}}`.
    """
    if len(gold_sentences) != len(predicted_sentences):
        raise ValueError(
            f"Expected one predicted sentence per gold sentence; got "
            f"{len(predicted_sentences)} for {len(gold_sentences)}."
        )
    counts = collections.defaultdict(lambda: [0, 0, 0])  # type -> gold, predicted, correct
    tokens = correct_tokens = 0
    for index, (gold, predicted) in enumerate(zip(gold_sentences, predicted_sentences)):
        gold, predicted = list(gold), list(predicted)
        if len(gold) != len(predicted):
            raise ValueError(
                f"Sentence {index}: {len(gold)} gold tags but {len(predicted)} predicted tags."
            )
        tokens += len(gold)
        correct_tokens += sum(g == p for g, p in zip(gold, predicted))
        gold_spans, predicted_spans = set(entity_spans(gold)), set(entity_spans(predicted))
        for entity_type, _, _ in gold_spans:
            counts[entity_type][0] += 1
        for entity_type, _, _ in predicted_spans:
            counts[entity_type][1] += 1
        for entity_type, _, _ in gold_spans & predicted_spans:
            counts[entity_type][2] += 1
    totals = [sum(c[i] for c in counts.values()) for i in range(3)]
    scores = _scores(*totals)
    scores["accuracy"] = correct_tokens / tokens if tokens else 0.0
    scores["per_type"] = {name: _scores(*counts[name]) for name in sorted(counts)}
    return scores


def _scores(num_gold, num_predicted, num_correct):
    precision = num_correct / num_predicted if num_predicted else 0.0
    recall = num_correct / num_gold if num_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "num_gold": num_gold,
        "num_predicted": num_predicted,
        "num_correct": num_correct,
    }
