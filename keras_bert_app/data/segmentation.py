"""Chinese word boundaries for whole-word and n-gram masking (a word segmenter).

BERT's tokenizer makes every CJK ideograph a token, so `##` pieces never
mark Chinese words. Here each run of CJK ideographs is cut into words by a
segmenter (jieba by default, as Chinese-BERT-wwm does with LTP), aligned with
the tokens by byte offsets: one flag per token, "a word starts here" (outside
segmented runs: the token is not a `##` piece). A token where segmenter and
tokens disagree is its own unit, counted in `fallback_tokens`. The corpus is
segmented once, when it is read (`TokenizedCorpus.word_starts`).
"""

import logging
import re

import numpy as np

from keras_bert_app import errors

SEGMENTERS = ("jieba",)
INSTALL_HINT = 'pip install "keras-bert-app[zh]" (or pip install jieba)'
# jieba.posseg tags of named entities: person (nr, nrfg, nrt), place (ns),
# organisation (nt).
ENTITY_TAGS = ("nr", "ns", "nt")

# CJK Unified Ideographs blocks, as BERT's tokenizer (`_is_chinese_char`)
# lists them: exactly the characters it makes tokens of their own.
CJK_RUN = re.compile(
    "[\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\U0002a700-\U0002b73f"
    "\U0002b740-\U0002b81f\U0002b820-\U0002ceaf\uf900-\ufaff\U0002f800-\U0002fa1f]+"
)


def require_segmenter(segmenter):
    """Check that segmenter `segmenter` (a name) can run, without loading its dictionary.

    Raises:
        keras_bert_app.errors.ArgumentError: an unknown name, or jieba not
            installed (the message says how to install it).
    """
    errors.check_choice("segmenter", segmenter, SEGMENTERS)
    try:
        import jieba
    except ImportError:
        raise errors.ArgumentError(
            "segmenter", f"segmenter 'jieba' needs the jieba package, which is not installed: {INSTALL_HINT}."
        ) from None
    return jieba


def _import_jieba():
    jieba = require_segmenter("jieba")
    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba


def jieba_segmenter():
    """jieba's default (precise) mode with HMM for unknown words: str -> list of str.

    jieba is imported here, so the package works without it until a
    segmenter is asked for. Its dictionary is loaded now (about a second),
    before any worker process forks.

    Raises:
        keras_bert_app.errors.ArgumentError: jieba is not installed (the
            message says how to install it).
    """
    return _import_jieba().lcut


def jieba_entity_segmenter():
    """jieba's words with named entities as units: str -> list of str.

    Words come from `jieba.posseg` (its part-of-speech tagger); consecutive
    words tagged as named entities (`ENTITY_TAGS`: person, place,
    organisation) are joined into one unit, so entity-level masking (ERNIE)
    masks "美国纽约" or "北京大学医学部" whole. Slower than `jieba_segmenter`
    (the tagger runs an HMM).
    """
    _import_jieba()
    import jieba.posseg

    def segment(run):
        words, previous_is_entity = [], False
        for pair in jieba.posseg.lcut(run):
            is_entity = pair.flag.startswith(ENTITY_TAGS)
            if is_entity and previous_is_entity:
                words[-1] += pair.word
            else:
                words.append(pair.word)
            previous_is_entity = is_entity
        return words

    return segment


def resolve_segmenter(segmenter, entities=False):
    """`None`, a segmenter name (`"jieba"`) or a callable -> `None` or a callable `str -> list of str`.

    A callable receives one run of CJK ideographs and returns its words,
    which must spell the run (runs they do not spell are counted as
    fallbacks and masked character by character). `entities=True` (with
    `"jieba"` only) joins named entities into units (`jieba_entity_segmenter`).
    """
    if entities and segmenter != "jieba":
        raise errors.ArgumentError(
            "entity_masking", f"entity masking needs segmenter='jieba' (its part-of-speech tags); got {segmenter!r}."
        )
    if segmenter is None or callable(segmenter):
        return segmenter
    if segmenter == "jieba":
        return jieba_entity_segmenter() if entities else jieba_segmenter()
    if isinstance(segmenter, str):
        raise errors.ArgumentError(
            "segmenter", f"segmenter must be one of {list(SEGMENTERS)} or a callable; got {segmenter!r}."
        )
    raise errors.ArgumentTypeError(
        "segmenter", f"segmenter must be a name {list(SEGMENTERS)} or a callable; got {type(segmenter).__name__}."
    )


def _utf8_widths(text):
    """Bytes of each character of `text` in UTF-8: int64 `[len(text)]`."""
    code_points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    return 1 + (code_points >= 0x80) + (code_points >= 0x800) + (code_points >= 0x10000).astype(np.int64)


def line_words(line, segmenter):
    """Words of the CJK runs of one line, as UTF-8 byte spans.

    Returns:
        `(starts, ends, unspelled)`: int64 arrays `[num_words]` of byte
        offsets into `line.encode()`, and the number of characters in runs
        whose words did not spell the run (those runs are cut into single
        characters).
    """
    starts, ends, unspelled = [], [], 0
    byte_position, char_position = 0, 0
    for match in CJK_RUN.finditer(line):
        byte_position += len(line[char_position : match.start()].encode("utf-8"))
        char_position = match.end()
        run = match.group()
        words = [word for word in segmenter(run) if word]
        if "".join(words) != run:
            unspelled += len(run)
            words = list(run)
        # Byte offset of each word boundary inside the run.
        if run.isascii() or max(run) < "\U00010000":
            widths = np.full(len(run), 3, dtype=np.int64)
        else:
            widths = _utf8_widths(run)
        char_bounds = np.cumsum([0] + [len(word) for word in words])
        byte_bounds = byte_position + np.concatenate([[0], np.cumsum(widths)])[char_bounds]
        starts.append(byte_bounds[:-1])
        ends.append(byte_bounds[1:])
        byte_position = int(byte_bounds[-1])
    if not starts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, 0
    return np.concatenate(starts), np.concatenate(ends), unspelled


def segment_batch(lines, token_ids, token_starts, token_ends, row_lengths, is_continuation, segmenter):
    """Word-start flags for the tokens of a batch of lines.

    Args:
        lines: list of str. The lines as given to the tokenizer.
        token_ids: int array `[num_tokens]`. The tokens of all lines, line
            after line.
        token_starts, token_ends: int arrays `[num_tokens]`. Each token's
            UTF-8 byte span in its line (`tokenize_with_offsets`).
        row_lengths: int array `[len(lines)]`. Tokens per line.
        is_continuation: bool array `[vocabulary_size]`. `##` pieces.
        segmenter: callable `str -> list of str` (see `resolve_segmenter`).

    Returns:
        `(word_starts, counts)`: bool `[num_tokens]`, True where a word (the
        unit that whole-word masking masks together) starts; and a dict of
        counts: `words` and `multi_token_words` (segmenter words that hold
        tokens), `segmented_tokens` (tokens inside them) and
        `fallback_tokens` (tokens left on their own because segmentation and
        tokens disagree).
    """
    token_ids = np.asarray(token_ids)
    num_tokens = len(token_ids)
    line_bytes = np.array([len(line.encode("utf-8")) + 1 for line in lines], dtype=np.int64)
    line_base = np.concatenate([[0], np.cumsum(line_bytes)[:-1]])
    word_starts, word_ends, unspelled = [], [], 0
    for line, base in zip(lines, line_base.tolist()):
        starts, ends, line_unspelled = line_words(line, segmenter)
        word_starts.append(starts + base)
        word_ends.append(ends + base)
        unspelled += line_unspelled
    word_starts = np.concatenate(word_starts) if word_starts else np.zeros(0, np.int64)
    word_ends = np.concatenate(word_ends) if word_ends else np.zeros(0, np.int64)

    # Global byte spans of the tokens, and the word holding each one's first
    # and last byte (-1: none).
    token_line_base = np.repeat(line_base, row_lengths)
    local_starts = np.asarray(token_starts, dtype=np.int64)
    local_last = np.maximum(np.asarray(token_ends, dtype=np.int64) - 1, local_starts)
    first_byte, last_byte = token_line_base + local_starts, token_line_base + local_last
    first_word = _word_of(first_byte, word_starts, word_ends)
    last_word = _word_of(last_byte, word_starts, word_ends)
    # A word may also start strictly inside a token (a token that swallows
    # the beginning of a run or of a word).
    swallows = np.searchsorted(word_starts, last_byte, side="right") != np.searchsorted(
        word_starts, first_byte, side="right"
    )
    in_word = (first_word >= 0) & (first_word == last_word) & ~swallows
    fallback = ~in_word & ((first_word >= 0) | (last_word >= 0) | swallows)

    starts = ~is_continuation[token_ids] if num_tokens else np.zeros(0, bool)
    previous_word = np.concatenate([[-1], np.where(in_word, first_word, -1)[:-1]])
    starts = np.where(in_word, first_word != previous_word, starts)
    starts |= fallback
    starts[1:] |= fallback[:-1]  # the token after a fallback starts a unit too
    words_with_tokens = np.unique(first_word[in_word])
    tokens_per_word = np.bincount(np.searchsorted(words_with_tokens, first_word[in_word]),
                                  minlength=len(words_with_tokens))
    counts = {
        "words": len(words_with_tokens),
        "multi_token_words": int((tokens_per_word > 1).sum()),
        "segmented_tokens": int(in_word.sum()),
        "fallback_tokens": int(fallback.sum()),
        "unspelled_characters": unspelled,
    }
    return starts.astype(bool), counts


def _word_of(byte_positions, word_starts, word_ends):
    """Index of the word holding each byte position, -1 where none does."""
    if not len(word_starts):
        return np.full(len(byte_positions), -1, dtype=np.int64)
    index = np.searchsorted(word_starts, byte_positions, side="right") - 1
    inside = (index >= 0) & (byte_positions < word_ends[np.maximum(index, 0)])
    return np.where(inside, index, -1)


def summary_line(counts):
    """One line about a corpus' segmentation: words, and the tokens masked on their own."""
    return (
        f"segmented {counts['segmented_tokens']} CJK tokens into {counts['words']} words "
        f"({counts['multi_token_words']} of several tokens); {counts['fallback_tokens']} token(s) "
        f"masked on their own where words and tokens disagree"
        + (f", {counts['unspelled_characters']} character(s) in runs the segmenter did not spell"
           if counts["unspelled_characters"] else "")
    )
