"""Word boundaries for Chinese whole-word masking: jieba's words aligned with
BERT's tokens by their offsets, on ordinary and awkward text, with every
disagreement counted; a missing jieba is one line saying how to install it."""

import sys

import numpy as np
import pytest

from keras_bert_app import cli, errors
from keras_bert_app.data.masking import continuation_flags
from keras_bert_app.data.segmentation import CJK_RUN
from keras_bert_app.data.segmentation import resolve_segmenter
from keras_bert_app.data.segmentation import segment_batch

jieba = pytest.importorskip("jieba")

AWKWARD_LINES = [
    "中華民國的臺灣大學很有名，繁體字也能分詞。",  # traditional characters
    "价格１２８元，全角数字和标点！（真的）",  # full-width digits and punctuation
    "用iPhone手机拍照playing games很好玩😀，unaffable的服务",  # mixed Chinese, English, emoji
    "我们今天去公园散步然后吃饭" * 770,  # 10,010 characters, no punctuation
    "㐀㐁中文𠀀𠀁字",  # CJK extension A and B (outside jieba's range, [UNK] in the vocabulary)
]


@pytest.fixture(scope="module")
def tokenizer(shared_data):
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    return BertTokenizer(vocabulary=shared_data / "vocab" / "bert_chinese_vocab.txt")


@pytest.fixture(scope="module")
def segmenter():
    return resolve_segmenter("jieba")


def segment(tokenizer, lines, segmenter):
    """(tokens as str, word-start flags, counts, the raw text of each unit) of the lines."""
    ids, starts, ends = tokenizer.tokenize_with_offsets(lines)
    flat = ids.flat_values.numpy()
    word_starts, counts = segment_batch(
        lines, flat, starts.flat_values.numpy(), ends.flat_values.numpy(), ids.row_lengths().numpy(),
        continuation_flags(tokenizer.get_vocabulary()), segmenter,
    )
    vocabulary = tokenizer.get_vocabulary()
    texts, index = [], 0
    for line, line_starts, line_ends in zip(lines, starts.numpy(), ends.numpy()):
        spans = []
        for start, end in zip(line_starts.tolist(), line_ends.tolist()):
            if word_starts[index] or not spans:
                spans.append([start, end])
            spans[-1][1] = end
            index += 1
        raw = line.encode("utf-8")
        texts.extend(raw[start:end].decode("utf-8") for start, end in spans)
    return [vocabulary[i] for i in flat.tolist()], word_starts, counts, texts


def units(tokens, word_starts):
    """The tokens grouped into units (a unit starts at each flag)."""
    grouped = []
    for token, start in zip(tokens, word_starts):
        if start or not grouped:
            grouped.append([])
        grouped[-1].append(token)
    return grouped


def test_chinese_words_and_english_wordpieces_are_units(tokenizer, segmenter):
    tokens, word_starts, counts, _ = segment(tokenizer, ["我爱北京天安门，playing games！"], segmenter)
    assert units(tokens, word_starts) == [
        ["我"], ["爱"], ["北", "京"], ["天", "安", "门"], ["，"], ["play", "##ing"], ["games"], ["！"]
    ]
    assert counts == {"words": 4, "multi_token_words": 2, "segmented_tokens": 7, "fallback_tokens": 0,
                      "unspelled_characters": 0}


def test_awkward_text_follows_jieba_with_no_fallback(tokenizer, segmenter):
    _, _, counts, texts = segment(tokenizer, AWKWARD_LINES, segmenter)
    # The units inside CJK runs are exactly jieba's words of the runs
    # (the tokenizer makes one token per CJK character, [UNK] for those its
    # vocabulary lacks, and the offsets place each in its word).
    jieba_words = [word for line in AWKWARD_LINES for run in CJK_RUN.findall(line) for word in jieba.lcut(run)]
    assert [text for text in texts if CJK_RUN.fullmatch(text)] == jieba_words
    assert {"中華民國", "数字", "标点", "手机", "拍照"} <= set(texts)
    assert texts.count("散步") == 770  # the 10,010-character line
    # Full-width digits, English words and the emoji stay WordPiece units.
    assert {"１２８", "iPhone", "playing", "😀", "unaffable"} <= set(texts)
    assert counts["fallback_tokens"] == 0 and counts["unspelled_characters"] == 0
    assert counts["segmented_tokens"] == sum(len(word) for word in jieba_words)
    assert counts["words"] == len(jieba_words)


def test_disagreements_are_counted_and_masked_on_their_own():
    is_continuation = np.zeros(10, bool)
    line = "北京天安门"  # jieba: 北京 | 天安门
    # A tokenizer whose second token spans 京天安 (across the word boundary).
    word_starts, counts = segment_batch(
        [line], np.array([1, 2, 3]), np.array([0, 3, 12]), np.array([3, 12, 15]), np.array([3]),
        is_continuation, jieba.lcut,
    )
    assert word_starts.tolist() == [True, True, True]
    assert counts["fallback_tokens"] == 1 and counts["segmented_tokens"] == 2

    # A segmenter whose words do not spell the run: cut into characters.
    def dropping(run):
        return [run[:-1]]

    tokens = np.arange(5)
    offsets = np.arange(0, 16, 3)
    word_starts, counts = segment_batch(
        [line], tokens, offsets[:-1], offsets[1:], np.array([5]), is_continuation, dropping
    )
    assert word_starts.all() and counts["unspelled_characters"] == 5


def test_custom_segmenter_and_bad_names(tokenizer):
    tokens, word_starts, _, _ = segment(tokenizer, ["北京天安门"], lambda run: [run[:3], run[3:]])
    assert units(tokens, word_starts) == [["北", "京", "天"], ["安", "门"]]
    with pytest.raises(errors.ArgumentError, match="jieba"):
        resolve_segmenter("ltp")
    with pytest.raises(errors.ArgumentTypeError):
        resolve_segmenter(3)


def test_missing_jieba_is_one_line_saying_how_to_install_it(monkeypatch, tmp_path, shared_data, capsys):
    monkeypatch.setitem(sys.modules, "jieba", None)  # `import jieba` raises ImportError
    with pytest.raises(errors.ArgumentError, match=r'pip install "keras-bert-app\[zh\]"'):
        resolve_segmenter("jieba")
    corpus = tmp_path / "zh.txt"
    corpus.write_text("第一篇。\n\n第二篇。\n", encoding="utf-8")
    code = cli.main([
        "create-pretraining-data", "--input", str(corpus), "--output", str(tmp_path / "out"),
        "--vocab", str(shared_data / "vocab" / "bert_chinese_vocab.txt"), "--whole-word-masking",
        "--segmenter", "jieba",
    ])
    error = capsys.readouterr().err.strip()
    assert code == 2 and len(error.splitlines()) == 1
    assert "pip install jieba" in error and 'pip install "keras-bert-app[zh]"' in error
    assert not (tmp_path / "out").exists()


def test_gold_check_tool_scores_words(tmp_path):
    import os

    tools = os.path.join(os.path.dirname(__file__), "..", "..", "tools")
    sys.path.insert(0, tools)
    try:
        import segmenter_gold_check
    finally:
        sys.path.remove(tools)
    gold = tmp_path / "gold.txt"
    # 我/s 爱/s 北京/be 天安门/bme ，/s １９９８/bmme 年/s — jieba: 我|爱|北京|天安门|，|...
    gold.write_text("我/s 爱/s 北/b 京/e 天/b 安/m 门/e ，/s １/b ９/m ９/m ８/e 年/s\n", encoding="utf-8")
    assert list(segmenter_gold_check.read_gold(str(gold))) == [
        ("我爱北京天安门，１９９８年", [(0, 1), (1, 2), (2, 4), (4, 7), (7, 8), (8, 12), (12, 13)])
    ]
    report = segmenter_gold_check.check(str(gold))
    assert report["masking"]["gold_words"] == 5  # the CJK-only gold words: 我 爱 北京 天安门 年
    assert report["masking"]["precision"] == report["masking"]["recall"] == 1.0
    assert report["sentence"]["gold_words"] == 7 and 0 < report["sentence"]["f1"] <= 1.0
    gold.write_text("我/x\n", encoding="utf-8")
    with pytest.raises(ValueError, match="gold.txt:1"):
        segmenter_gold_check.check(str(gold))
