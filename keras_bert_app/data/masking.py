"""Masked-LM predictions for sequences (BERT paper, section 3.1, A.1).

Three schemes (`MASKING_SCHEMES`): `token` (the paper), `whole_word` (a
word's tokens together) and `ngram` (n consecutive whole words, n drawn with
p(n) proportional to 1/n up to `max_ngram`, as ALBERT and ERNIE mask
phrases).

As in the original `create_pretraining_data.py`: `num_to_predict =
min(max_predictions_per_seq, max(1, round(num_tokens * masked_lm_prob)))`
positions are drawn among the tokens that are not `[CLS]`/`[SEP]`; each
becomes `[MASK]` with probability 0.8, a random token with 0.1, and is kept
with 0.1. With whole-word masking a word's pieces (`continuation_flags`)
are drawn together, and a word that would overshoot is skipped.

`mask_batch` is the original's algorithm (the 80/10/10 drawn per token).
`mask_units_batch` masks units given by word-start flags (a segmenter's
words, `##` words, or n-grams of them) and draws the 80/10/10 once per
unit, so all tokens of a word are `[MASK]`, kept, or random together.
"""

import numpy as np

from keras_bert_app import errors

MASKING_SCHEMES = ("token", "whole_word", "ngram")


def masking_scheme(masking="token", max_ngram=3, whole_word_masking=False, segmenter=None):
    """The scheme's name (`token`, `whole_word` or `ngram`) from the settings; typed errors naming the bad one.

    `whole_word_masking=True` turns `token` into `whole_word`; a `segmenter`
    needs a scheme of words (`whole_word` or `ngram`).
    """
    errors.check_type("masking", masking, str)
    errors.check_choice("masking", masking, MASKING_SCHEMES)
    errors.check_int("max_ngram", max_ngram, minimum=1)
    errors.check_type("whole_word_masking", whole_word_masking, bool)
    scheme = "whole_word" if whole_word_masking and masking == "token" else masking
    if segmenter is not None and scheme == "token":
        raise errors.ArgumentError(
            "segmenter",
            "segmenter only changes whole-word and n-gram masking: add whole_word_masking=True "
            "(--whole-word-masking) or masking='ngram' (--masking ngram).",
        )
    return scheme


SENTENCEPIECE_SPACE = "\u2581"  # ▁, SentencePiece's mark of a piece that starts after a space


def continuation_flags(vocabulary):
    """Bool array `[vocabulary_size]`: True for the pieces that continue a word.

    WordPiece (BERT): the `##` pieces. SentencePiece (ALBERT; a vocabulary
    with `▁` pieces and no `##` piece): a piece continues a word when it does
    not start with `▁` and is letters only (combining marks allowed), none of
    them a CJK ideograph. So control pieces (`<unk>`, `[CLS]`), punctuation,
    digits and CJK characters start words of their own, as ALBERT's
    `create_pretraining_data.py` reads pieces (it keeps ASCII letters only,
    for its English models; other letters continue here, for other scripts).
    """
    vocabulary = list(vocabulary)
    if any(token.startswith("##") for token in vocabulary) or not any(
        token.startswith(SENTENCEPIECE_SPACE) for token in vocabulary
    ):
        return np.array([token.startswith("##") for token in vocabulary], dtype=bool)
    return np.array([_continues_sentencepiece_word(token) for token in vocabulary], dtype=bool)


def _continues_sentencepiece_word(piece):
    import unicodedata

    from keras_bert_app.data.segmentation import CJK_RUN

    return (
        bool(piece)
        and not piece.startswith(SENTENCEPIECE_SPACE)
        and all(char.isalpha() or unicodedata.category(char).startswith("M") for char in piece)
        and not CJK_RUN.search(piece)
    )


def _whole_word_rows(token_ids, num_tokens, counts, special, is_continuation, rng):
    """Whole-word positions, row by row: `[batch, max_predictions_per_seq]`.

    A word starts at a candidate that is not a `##` piece (or that follows a
    special token); its pieces are the candidates up to the next start. Words
    are drawn as `_unit_positions` draws them (one-word units).
    """
    positions = np.zeros((len(token_ids), counts.max(initial=0)), dtype=np.int64)
    num_masked = np.zeros(len(token_ids), dtype=np.int64)
    for row in range(len(token_ids)):
        candidates = np.flatnonzero(~special[row, : num_tokens[row]])
        chosen, _ = _unit_positions(candidates, ~is_continuation[token_ids[row, candidates]], counts[row], 1, rng)
        positions[row, : len(chosen)] = np.sort(chosen)
        num_masked[row] = len(chosen)
    return positions, num_masked


def mask_batch(token_ids, num_tokens, rng, special_token_ids, mask_token_id, vocabulary_size, masked_lm_prob,
               max_predictions_per_seq, is_continuation=None):
    """Draw the masked positions of a batch of sequences and corrupt them.

    Args:
        token_ids: int array `[batch, seq_length]`. Packed sequences, padded
            after `num_tokens`.
        num_tokens: int array `[batch]`. Length of each sequence.
        rng: `numpy.random.Generator`.
        special_token_ids: sequence of int. Ids never masked (`[CLS]`,
            `[SEP]`).
        mask_token_id: int. Id of `[MASK]`.
        vocabulary_size: int. Random replacements are drawn from
            `[0, vocabulary_size)`, the whole vocabulary as in the original.
        masked_lm_prob: float. Fraction of tokens to predict.
        max_predictions_per_seq: int. Most positions to predict.
        is_continuation: optional bool array `[vocabulary_size]` (see
            `continuation_flags`). When given, whole words are masked.

    Returns:
        `(masked_token_ids, positions, labels, weights)`: the corrupted
        sequences `[batch, seq_length]`; the masked positions, sorted, the
        original ids there and 1.0 weights, each `[batch,
        max_predictions_per_seq]` and 0-padded.
    """
    batch_size, seq_length = token_ids.shape
    special, counts = _special_and_counts(token_ids, num_tokens, special_token_ids, masked_lm_prob,
                                          max_predictions_per_seq)
    if is_continuation is None:
        # The `counts` lowest of uniform scores: a uniform random subset.
        scores = rng.random((batch_size, seq_length))
        scores[special] = 2.0
        if max_predictions_per_seq < seq_length:
            # The max_predictions_per_seq lowest, then in order of score.
            lowest = np.argpartition(scores, max_predictions_per_seq - 1, axis=1)
            lowest = lowest[:, :max_predictions_per_seq]
            order = np.take_along_axis(scores, lowest, axis=1).argsort(axis=1)
            positions = np.take_along_axis(lowest, order, axis=1)
        else:
            positions = np.argsort(scores, axis=1)
        num_masked = counts
    else:
        positions, num_masked = _whole_word_rows(token_ids, num_tokens, counts, special, is_continuation, rng)
    width = max_predictions_per_seq
    padded_positions = np.zeros((batch_size, width), dtype=np.int64)
    padded_positions[:, : positions.shape[1]] = positions[:, :width]
    valid = np.arange(width) < num_masked[:, None]
    # Sort the chosen positions, padding last.
    padded_positions = np.sort(np.where(valid, padded_positions, seq_length), axis=1)
    padded_positions[~valid] = 0
    draws = rng.random((batch_size, width))
    return _corrupt(token_ids, padded_positions, valid, draws, rng, mask_token_id, vocabulary_size)


def _special_and_counts(token_ids, num_tokens, special_token_ids, masked_lm_prob, max_predictions_per_seq):
    """Positions never masked `[batch, seq_length]` and how many to mask per row `[batch]`."""
    seq_length = token_ids.shape[1]
    special = np.arange(seq_length) >= num_tokens[:, None]
    for special_token_id in special_token_ids:
        special |= token_ids == special_token_id
    # Python's `round` is half-to-even, as `np.round` is.
    counts = np.round(num_tokens * masked_lm_prob).astype(np.int64)
    counts = np.minimum(max_predictions_per_seq, np.maximum(1, counts))
    counts = np.minimum(counts, seq_length - special.sum(axis=1))
    return special, counts


def _corrupt(token_ids, positions, valid, draws, rng, mask_token_id, vocabulary_size):
    """The 80/10/10 corruption at sorted `positions` `[batch, width]`, given one uniform draw per slot."""
    batch_size, width = positions.shape
    rows = np.broadcast_to(np.arange(batch_size)[:, None], valid.shape)
    labels = np.where(valid, token_ids[rows, positions], 0)
    random_ids = rng.integers(0, vocabulary_size, (batch_size, width))
    replacements = np.where(draws < 0.8, mask_token_id, labels)
    replacements = np.where(draws >= 0.9, random_ids, replacements)
    masked_token_ids = token_ids.copy()
    masked_token_ids[rows[valid], positions[valid]] = replacements[valid]
    return masked_token_ids, positions, labels, valid.astype(np.float32)


def ngram_probabilities(max_ngram):
    """p(n) for n = 1 .. max_ngram, proportional to 1/n (ALBERT): float64 `[max_ngram]`."""
    weights = 1.0 / np.arange(1, max_ngram + 1)
    return weights / weights.sum()


def _unit_positions(candidates, is_start, count, max_ngram, rng):
    """Randomly drawn units (words, or n-grams of words), `count` positions at most.

    Args:
        candidates: int array `[num_candidates]`, the maskable positions.
        is_start: bool array `[num_candidates]`, True where a word starts.
        count: int. Positions to choose at most.
        max_ngram: int. Longest n-gram, in words (1: whole words).
        rng: `numpy.random.Generator`.

    Returns:
        `(positions, units)`: int arrays of the chosen positions and, for
        each, the index of its unit (0, 1, ... in order of choice).
    """
    # A word never spans a special token; nor does an n-gram (a "run" is a
    # stretch of consecutive candidates).
    run_starts = np.diff(candidates, prepend=-2) != 1
    word_bounds = np.append(np.flatnonzero(is_start | run_starts), len(candidates)).tolist()
    num_words = len(word_bounds) - 1
    run_of_word = np.cumsum(run_starts)[word_bounds[:-1]].tolist()
    order = rng.permutation(num_words).tolist()
    if max_ngram > 1:
        cumulative = np.cumsum(ngram_probabilities(max_ngram))
        lengths = (1 + np.searchsorted(cumulative[:-1], rng.random(num_words), side="right")).tolist()
    else:
        lengths = [1] * num_words
    covered = [False] * num_words
    positions, units, num_units = [], [], 0
    for word, length in zip(order, lengths):
        room = count - len(positions)
        if room <= 0:
            break
        if covered[word]:
            continue
        last = word
        while (last + 1 < min(word + length, num_words) and not covered[last + 1]
               and run_of_word[last + 1] == run_of_word[word]):
            last += 1
        # Shorter n-grams when the longer would overshoot; a word that would
        # overshoot on its own is skipped, as whole-word masking does.
        while last > word and word_bounds[last + 1] - word_bounds[word] > room:
            last -= 1
        if word_bounds[last + 1] - word_bounds[word] > room:
            continue
        covered[word : last + 1] = [True] * (last + 1 - word)
        chosen = candidates[word_bounds[word] : word_bounds[last + 1]].tolist()
        units.extend([num_units] * len(chosen))
        positions.extend(chosen)
        num_units += 1
    return positions, units


def mask_units_batch(token_ids, num_tokens, word_starts, rng, special_token_ids, mask_token_id, vocabulary_size,
                     masked_lm_prob, max_predictions_per_seq, max_ngram=1):
    """Mask whole words or n-grams of them, with the 80/10/10 drawn per unit.

    Args:
        token_ids, num_tokens, rng, special_token_ids, mask_token_id,
        vocabulary_size, masked_lm_prob, max_predictions_per_seq: as for
            `mask_batch`.
        word_starts: bool array `[batch, seq_length]`. True where a word
            starts (a segmenter's word, or a token that is not a `##`
            piece). The first token after a special token always starts one.
        max_ngram: int. 1 masks whole words; more masks n-grams of n
            consecutive words, p(n) proportional to 1/n for n up to
            `max_ngram` (an n-gram that would overshoot the count is
            shortened, a word that would is skipped).

    Returns:
        `(masked_token_ids, positions, labels, weights)` as `mask_batch`
        returns them; the tokens of one unit are all `[MASK]` (p=0.8), all
        kept (0.1) or all random (0.1).
    """
    batch_size, seq_length = token_ids.shape
    special, counts = _special_and_counts(token_ids, num_tokens, special_token_ids, masked_lm_prob,
                                          max_predictions_per_seq)
    width = max_predictions_per_seq
    positions = np.full((batch_size, width), seq_length, dtype=np.int64)
    units = np.zeros((batch_size, width), dtype=np.int64)
    for row in range(batch_size):
        candidates = np.flatnonzero(~special[row, : num_tokens[row]])
        chosen, chosen_units = _unit_positions(candidates, word_starts[row, candidates], counts[row], max_ngram, rng)
        positions[row, : len(chosen)] = chosen
        units[row, : len(chosen)] = chosen_units
    # Sort the chosen positions, padding last; units follow their positions.
    order = np.argsort(positions, axis=1, kind="stable")
    positions = np.take_along_axis(positions, order, axis=1)
    units = np.take_along_axis(units, order, axis=1)
    valid = positions < seq_length
    positions[~valid] = 0
    # One draw per unit (units are numbered below `width`).
    draws = np.take_along_axis(rng.random((batch_size, width)), units, axis=1)
    return _corrupt(token_ids, positions, valid, draws, rng, mask_token_id, vocabulary_size)
