"""BERT's text normalisation and word splitting as TensorFlow string ops.

The original `BasicTokenizer`, as HF's `BertNormalizer` + `BertPreTokenizer`
implement it, in RE2 and ICU ops that run inside tf.data and a SavedModel:

1. clean: drop NUL, U+FFFD and the control, format and private-use characters
   (Unicode Cc, Cf, Co; tab, newline and carriage return are whitespace), and
   make the other whitespace a space;
2. each CJK ideograph is a word of its own;
3. `lowercase=True` only: NFD, drop nonspacing marks (Mn), lower-case
   character by character (as HF does: a final capital sigma becomes "σ");
4. split on whitespace; each punctuation character (ASCII non-alphanumerics
   and Unicode P*) is a word of its own.

Invalid UTF-8 is first replaced by U+FFFD (and so dropped by step 1).
"""

import tensorflow as tf
import tensorflow_text as tf_text

# Characters `clean` removes. Unassigned code points (Cn) are kept, as HF keeps
# them (the original Python drops them); they make their word [UNK].
REMOVED_CHARACTERS = r"[\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F\x{FFFD}\p{Cf}\p{Co}]"
# Text that normalisation leaves alone but for ASCII lower-casing.
PRINTABLE_ASCII = r"[\t\n\r\x20-\x7E]*"
# Whitespace that survives cleaning: Unicode White_Space less the Cc ones. Its
# non-ASCII part becomes a space in cleaning (as in HF's `clean_text`), or
# FastWordpiece would read a vocabulary token of it (bert_chinese_vocab.txt has "\u2028").
UNICODE_WHITESPACE = r"[\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]"
WHITESPACE = r"[\t\n\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]"
# CJK Unified Ideographs blocks, as the original `_is_chinese_char` lists them.
CJK_IDEOGRAPHS = (
    r"\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}"
    r"\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}"
)
# ASCII non-alphanumerics and Unicode punctuation. RE2's tables stop at
# Unicode 15; the punctuation added in Unicode 16, which TensorFlow's ICU (and
# so FastWordpiece) knows, is listed so that both agree.
PUNCTUATION = (
    r"!-/:-@\[-`{-~\p{P}\x{1B4E}\x{1B4F}\x{1B7F}\x{10D6E}\x{113D4}\x{113D5}\x{113D7}"
    r"\x{113D8}\x{11BE1}\x{16D6D}-\x{16D6F}\x{1E5FF}"
)
# Characters that are not punctuation but whose NFD without marks is:
# GREEK VARIA -> "`", NOT EQUAL TO -> "=", NOT LESS-THAN -> "<", NOT
# GREATER-THAN -> ">". Splitting raw text (to keep offsets) isolates them too
# when lowercase=True.
PUNCTUATION_AFTER_NFD = r"\x{1FEF}\x{2260}\x{226E}\x{226F}"


def valid_utf8(text):
    """Replace invalid UTF-8 sequences with U+FFFD (which cleaning then drops).

    RE2 matches nothing that is not UTF-8, so one DFA pass tells whether the
    (slower) transcoding is needed at all.
    """
    return tf.cond(
        tf.reduce_all(tf.strings.regex_full_match(text, "(?s).*")),
        lambda: text,
        lambda: tf.strings.unicode_transcode(
            text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        ),
    )


def normalize(text, lowercase):
    """Steps 1 and 3 on tf.string text of any shape (whitespace stays; past ASCII, as a space).

    `text` must be valid UTF-8 (see `valid_utf8`). Strings of printable
    ASCII (most of English text) take a short cut: only ASCII lower-casing.
    """
    flat = tf.reshape(text, [-1])
    plain = tf.strings.regex_full_match(flat, PRINTABLE_ASCII)
    plain_rows = tf.cast(tf.where(plain)[:, 0], tf.int32)
    other_rows = tf.cast(tf.where(~plain)[:, 0], tf.int32)
    plain_text = tf.gather(flat, plain_rows)
    if lowercase:
        plain_text = tf.strings.lower(plain_text)
    other_text = normalize_unicode(tf.gather(flat, other_rows), lowercase)
    normalized = tf.dynamic_stitch([plain_rows, other_rows], [plain_text, other_text])
    return tf.reshape(normalized, tf.shape(text))


def normalize_unicode(text, lowercase):
    """`normalize` for any valid UTF-8 text, without the ASCII short cut."""
    text = tf.strings.regex_replace(text, REMOVED_CHARACTERS, "")
    text = tf.strings.regex_replace(text, UNICODE_WHITESPACE, " ")
    if not lowercase:
        return text
    text = tf_text.normalize_utf8(text, "NFD")
    text = tf.strings.regex_replace(text, r"\p{Mn}", "")
    # ICU lower-cases a word-final capital sigma to "ς"; HF (Rust's
    # char::to_lowercase) always gives "σ".
    text = tf.strings.regex_replace(text, "\u03a3", "\u03c3")
    return tf.strings.lower(text, encoding="utf-8")


def isolated_characters(lowercase):
    """The RE2 class of characters that are always a word of their own."""
    extra = PUNCTUATION_AFTER_NFD if lowercase else ""
    return f"[{PUNCTUATION}{CJK_IDEOGRAPHS}{extra}]"


def split_words_with_offsets(text, lowercase):
    """Split [batch] tf.string into words, with their byte offsets.

    Works on raw (uncleaned, unnormalised) text so the offsets point into it:
    removed characters stay inside their word (`normalize` drops them later).

    Returns:
        (words, starts, ends): RaggedTensors [batch, (words)].
    """
    isolated = isolated_characters(lowercase)
    # regex_split stops at a NUL byte; U+0001 (also dropped later) keeps the offsets.
    text = tf.strings.regex_replace(text, r"\x00", "\x01")
    return tf_text.regex_split_with_offsets(text, f"{WHITESPACE}+|{isolated}", isolated)
