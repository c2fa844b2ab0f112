"""Our ids equal HF `tokenizers.BertWordPieceTokenizer`'s (the Rust reference).

TensorFlow backend only (the tokenizer is TF ops on every backend; once is
enough). tools/benchmark_tokenizer.py checks every line of the corpus; here a
slice keeps CI fast.
"""

import keras
import pytest
import tensorflow as tf

from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer
from keras_bert_app.preprocessing.offsets import byte_to_char_offsets

tokenizers = pytest.importorskip("tokenizers")
pytestmark = pytest.mark.skipif(
    keras.config.backend() != "tensorflow", reason="checked once, under TensorFlow"
)

VOCABULARIES = {
    "uncased": ("bert_uncased_vocab.txt", True),
    "cased": ("bert_cased_vocab.txt", False),
}
MIXED_CHINESE = [
    "BERT 是 Google 在2018年提出的预训练语言模型，它在 GLUE 上取得了 state-of-the-art 的结果！",
    "今天天氣很好，我們去公園散步吧。Let's go to the park at 3:30 p.m.",
    "《红楼梦》的作者是曹雪芹（约1715年－约1763年）。",
    "東京タワーは333メートルです。Tokyo Tower is 333 m tall.",
    "价格：￥１２８．００，折扣 20%；数量×3 → 总计 ¥307.2",
    "한국어 텍스트와 中文 混合 Ünïcödé café naïve",
    "表情符号 😀🎉 和 emoji 👍 也要处理。",
    "𠀀𠀁 Extension B 汉字 and 丽 compatibility ideograph",
    "",
    "   ",
]


def hf_tokenizer(path, lowercase, max_input_chars_per_word=200):
    tokenizer = tokenizers.BertWordPieceTokenizer(
        str(path), lowercase=lowercase, strip_accents=None, clean_text=True,
        handle_chinese_chars=True,
    )
    tokenizer._tokenizer.model.max_input_chars_per_word = max_input_chars_per_word
    return tokenizer


def assert_same_as_hf(ours, hf, lines):
    expected = [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
    fast = ours(lines).to_list()
    ids, starts, ends = ours.tokenize_with_offsets(lines)
    for i, line in enumerate(lines):
        assert fast[i] == expected[i], f"line {i}: {line[:200]!r}"
    assert ids.to_list() == expected
    # Offsets: HF gives character offsets into the original string.
    char_starts = byte_to_char_offsets(lines, starts).to_list()
    char_ends = byte_to_char_offsets(lines, ends).to_list()
    for i, encoding in enumerate(hf.encode_batch(lines, add_special_tokens=False)):
        assert list(zip(char_starts[i], char_ends[i])) == encoding.offsets, f"line {i}"


@pytest.mark.parametrize("name", sorted(VOCABULARIES))
def test_same_ids_and_offsets_as_hf_on_wikipedia(shared_data, enwiki_lines, name):
    vocabulary, lowercase = VOCABULARIES[name]
    path = shared_data / "vocab" / vocabulary
    lines = enwiki_lines[::10]  # ~2,000 lines, ~260 kB
    assert_same_as_hf(BertTokenizer(path, lowercase=lowercase), hf_tokenizer(path, lowercase), lines)


@pytest.mark.parametrize("lowercase", [False, True])
def test_same_ids_as_hf_on_mixed_chinese(shared_data, lowercase):
    path = shared_data / "vocab" / "bert_chinese_vocab.txt"
    ours = BertTokenizer(path, lowercase=lowercase)
    assert_same_as_hf(ours, hf_tokenizer(path, lowercase), MIXED_CHINESE)
    assert ours.unk_token_id not in ours("预训练语言模型，它在上取得了的结果！").numpy().tolist()


def test_unicode_whitespace_is_never_a_token_though_the_chinese_vocabulary_has_one(shared_data):
    """bert_chinese_vocab.txt holds "\u2028" and "##\u2028"; like all whitespace it separates words (original, HF)."""
    path = shared_data / "vocab" / "bert_chinese_vocab.txt"
    lines = ["a\u2028b", "\u2028", "中\u2028文 x \u2028 y", "a\u2029b\u3000c\u00a0d\u202fe", "Ω\u2028Ä"]
    for lowercase in (True, False):
        ours = BertTokenizer(path, lowercase=lowercase)
        assert_same_as_hf(ours, hf_tokenizer(path, lowercase), lines)
        assert ours("a\u2028b").numpy().tolist() == ours("a b").numpy().tolist()


def test_word_cap_is_the_originals_200_characters_hf_uses_100(shared_data):
    path = shared_data / "vocab" / "bert_uncased_vocab.txt"
    ours = BertTokenizer(path, lowercase=True)
    word = "ab" * 75  # 150 characters
    ids = ours(word).numpy().tolist()
    assert ids != [ours.unk_token_id] and len(ids) > 1
    # HF's default cap (100) makes it [UNK]; with the original's 200 it agrees.
    hf_default = tokenizers.BertWordPieceTokenizer(str(path), lowercase=True)
    assert hf_default.encode(word, add_special_tokens=False).ids == [ours.unk_token_id]
    assert hf_tokenizer(path, True).encode(word, add_special_tokens=False).ids == ids
    # And with the same cap as HF, the same ids.
    capped = BertTokenizer(path, lowercase=True, max_input_chars_per_word=100)
    assert capped(word).numpy().tolist() == [ours.unk_token_id]
    assert capped("ab" * 50).numpy().tolist() == hf_default.encode("ab" * 50, add_special_tokens=False).ids


# Where we differ from HF tokenizers 0.23 on "a?b", one code point "?" at a
# time (planes 0-2, tags, variation selectors), with tensorflow 2.21:
# - U+2B820..U+2B91F (CJK Extension E): the original BERT's `_is_chinese_char`
#   isolates them; HF's Rust copy of the ranges starts at U+2B920 (a typo).
# - The rest are characters whose Unicode category HF's tables (the
#   `unicode_categories` crate, Unicode 9) do not know or have older than
#   TensorFlow's RE2/ICU tables: HF treats them as letters of the word (so
#   "a?b" is one [UNK]) where we see punctuation (split off), a format
#   character (dropped) or, when lowercasing, a nonspacing mark (stripped);
#   U+166D was punctuation until Unicode 12 (HF splits it off, we do not).
# None of these occurs in the Wikipedia sample or in ordinary text.
DIFFERENCES = (
    "061D 0890-0891 08E2 09FD 0A76 0C77 0C84 166D 1B4E-1B4F 1B7D-1B7F 2E43-2E4F 2E52-2E5D "
    "10D6E 10EAD 10F55-10F59 10F86-10F89 110CD 111C9 113D4-113D5 113D7-113D8 1144B-1144F "
    "1145A-1145B 1145D 11660-1166C 116B9 1183B 11944-11946 119E2 11A3F-11A46 11A9A-11A9C "
    "11A9E-11AA2 11B00-11B09 11BE1 11C41-11C45 11C70-11C71 11EF7-11EF8 11F43-11F4F 11FFF "
    "12FF1-12FF2 13430-1343F 16D6D-16D6F 16E97-16E9A 16FE2 1E5FF 1E95E-1E95F 2B820-2B91F"
)
# Nonspacing marks (and a few then-unassigned code points) HF's tables do
# not have as marks, so it keeps them when lowercasing and we strip them.
DIFFERENCES_WHEN_LOWERCASING = (
    "07FD 0898-089F 08CA-08E1 09FE 0AFA-0AFF 0B55 0C04 0C3C 0D00 0D3B-0D3C 0D81 0EBA 0ECE 1734 "
    "180F 1885-1886 1ABF-1ACE 1DF6-1DFB A82C A8C5 A8FF A9BD 10D24-10D27 10EAB-10EAC "
    "10EFD-10EFF 10F46-10F50 10F82-10F85 11070 11073-11074 110C2 111CF 1123E 11241 1133B "
    "11438-1143F 11442-11444 11446 1145E 1182F-11837 11839-1183A 1193B-1193C 1193E 11943 "
    "119D4-119D7 119DA-119DB 119E0 11A01-11A0A 11A33-11A38 11A3B-11A3E 11A47 11A51-11A56 "
    "11A59-11A5B 11A8A-11A96 11A98-11A99 11C30-11C36 11C38-11C3D 11C3F 11C92-11CA7 "
    "11CAA-11CB0 11CB2-11CB3 11CB5-11CB6 11D31-11D36 11D3A 11D3C-11D3D 11D3F-11D45 11D47 "
    "11D90-11D91 11D95 11D97 11EF3-11EF4 11F00-11F01 11F36-11F3A 11F40 11F42 13440 "
    "13447-13455 16F4F 16FE4 1CF00-1CF2D 1CF30-1CF46 1E000-1E006 1E008-1E018 1E01B-1E021 "
    "1E023-1E024 1E026-1E02A 1E08F 1E130-1E136 1E2AE 1E2EC-1E2EF 1E4EC-1E4EF 1E944-1E94A"
)


def code_points_of(ranges):
    code_points = set()
    for item in ranges.split():
        first, _, last = item.partition("-")
        code_points.update(range(int(first, 16), int(last or first, 16) + 1))
    return code_points


@pytest.mark.parametrize("name", sorted(VOCABULARIES))
def test_every_code_point_matches_hf_but_the_documented_ones(shared_data, name):
    vocabulary, lowercase = VOCABULARIES[name]
    path = shared_data / "vocab" / vocabulary
    ours = BertTokenizer(path, lowercase=lowercase)
    hf = hf_tokenizer(path, lowercase)
    # Planes 0-2 and the tags/variation selectors; planes 3-13 are unassigned
    # and 15-16 private use (dropped), spot-checked below.
    code_points = [c for c in range(0x30000) if not 0xD800 <= c <= 0xDFFF]
    code_points += list(range(0xE0000, 0xE0200)) + [0x31350, 0xF0000, 0x10FFFD]
    lines = [f"a{chr(c)}b" for c in code_points]
    expected = hf.encode_batch(lines, add_special_tokens=False)
    fast = ours(tf.constant(lines)).to_list()
    exact = ours.tokenize_with_offsets(tf.constant(lines))[0].to_list()
    differences = set()
    for c, encoding, fast_ids, exact_ids in zip(code_points, expected, fast, exact):
        assert fast_ids == exact_ids, hex(c)
        if fast_ids != encoding.ids:
            differences.add(c)
    documented = code_points_of(DIFFERENCES)
    if lowercase:
        documented |= code_points_of(DIFFERENCES_WHEN_LOWERCASING)
    assert sorted(map(hex, differences - documented)) == []
    assert sorted(map(hex, documented - differences)) == []
