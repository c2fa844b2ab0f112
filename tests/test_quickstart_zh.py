"""`keras-bert-app quickstart --language zh`: the review corpus, the command line, bad input, end to end."""

import csv
import json

import keras
import pytest

from keras_bert_app import cli, errors
from keras_bert_app.demo import chinese_corpus
from keras_bert_app.demo import chinese_report
from keras_bert_app.demo import chinese_settings
from keras_bert_app.demo import quickstart as quickstart_module


def test_split_chinese_sentences_on_chinese_punctuation_and_spaces():
    text = "物流很快，包装也好。就是价格贵了点！还会再买吗？会的；推荐 值得一买 iPhone 4 很好用"
    assert chinese_corpus.split_chinese_sentences(text) == [
        "物流很快，", "包装也好。", "就是价格贵了点！", "还会再买吗？", "会的；", "推荐", "值得一买 iPhone 4 很好用",
    ]
    assert chinese_corpus.split_chinese_sentences("  一句话  ") == ["一句话"]
    assert chinese_corpus.split_chinese_sentences("好！！！真的好……") == ["好！！！", "真的好……"]


def _review_files(folder, negative, positive):
    folder.mkdir(exist_ok=True)
    (folder / "neg.txt").write_text("\n".join(negative) + "\n", encoding="utf-8")
    (folder / "pos.txt").write_text("\n".join(positive) + "\n", encoding="utf-8")
    return folder


def test_reviews_are_deduplicated_and_ambiguous_ones_dropped(tmp_path):
    folder = _review_files(tmp_path, ["太差了", "太差了", "", "一般般", "坏了，退货"], ["很好", "一般般", "很好", "满意！"])
    assert chinese_corpus.read_reviews(folder) == [
        ("太差了", "negative"), ("坏了，退货", "negative"), ("很好", "positive"), ("满意！", "positive"),
    ]


def test_corpus_holds_the_train_reviews_only_and_labels_are_balanced(tmp_path):
    negative = [f"第{i}本书太差了，不推荐。纸张也不好" for i in range(30)]
    positive = [f"第{i}个手机很好，推荐！物流也快" for i in range(30)]
    folder = _review_files(tmp_path / "reviews", negative, positive)
    result = chinese_corpus.make_chinese_corpus(tmp_path / "data", None, 12, 10, seed=3, log=lambda line: None,
                                                reviews_folder=folder)
    assert (result["reviews"], result["train_articles"], result["dev_articles"], result["labeled_articles"]) == (60, 48, 12, 10)
    with (tmp_path / "data" / "dev.csv").open(newline="", encoding="utf-8") as file:
        dev = [row["text"] for row in csv.DictReader(file)]
    with (tmp_path / "data" / "labeled.csv").open(newline="", encoding="utf-8") as file:
        labels = [row["label"] for row in csv.DictReader(file)]
    documents = (tmp_path / "data" / "corpus.txt").read_text(encoding="utf-8").split("\n\n")
    assert len(documents) == 48 and all(len(document.splitlines()) == 3 for document in documents)
    assert not {"".join(document.splitlines()) for document in documents} & set(dev)  # dev reviews held out
    assert sorted(labels) == ["negative"] * 5 + ["positive"] * 5
    # A fixed seed: the same split again; another seed, another split.
    chinese_corpus.make_chinese_corpus(tmp_path / "again", None, 12, 10, seed=3, log=lambda line: None, reviews_folder=folder)
    assert (tmp_path / "again" / "dev.csv").read_bytes() == (tmp_path / "data" / "dev.csv").read_bytes()
    chinese_corpus.make_chinese_corpus(tmp_path / "other", None, 12, 10, seed=4, log=lambda line: None, reviews_folder=folder)
    assert (tmp_path / "other" / "dev.csv").read_bytes() != (tmp_path / "data" / "dev.csv").read_bytes()


def test_report_counts_gaps_within_two_standard_errors_as_noise():
    rows = [(0, 0.85, 0.80), (1, 0.86, 0.85), (2, 0.84, 0.86)]
    text = chinese_report.reading(rows, {"pretrained_cls": 0.80, "random_cls": 0.70, "pretrained_mean": 0.75,
                                         "random_mean": 0.745}, 2000)
    # mean gain +1.3 points; two standard errors near 0.84 on 2,000 reviews: 1.6 points
    assert "fine-tuned +1.3 points, within noise on average over 3 seeds (ahead beyond noise with 1 of 3)" in text
    assert "frozen `[CLS]` features +10.0 points, ahead" in text and "frozen mean features +0.5 points, within noise" in text
    assert chinese_report.mean_std([0.5, 0.7]) == "0.6000 ± 0.1414"


# === The command line: the language and the masking reach the stage function ===
def test_command_passes_language_and_masking(tmp_path, monkeypatch):
    # README: `keras-bert-app quickstart --language zh [--masking token]`
    calls = []
    monkeypatch.setattr(quickstart_module, "quickstart", lambda **kwargs: calls.append(kwargs) or {"report": "r"})
    assert cli.main(["quickstart", "--language", "zh"]) == 0
    assert calls[-1]["language"] == "zh" and calls[-1]["masking"] is None
    assert calls[-1]["vocab_size"] is None and calls[-1]["dupe_factor"] is None  # None: the Chinese defaults
    assert cli.main(["quickstart", "--language", "zh", "--masking", "ngram", "--max-articles", "40"]) == 0
    assert calls[-1]["masking"] == "ngram" and calls[-1]["max_articles"] == 40


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--masking", "ngram"], "masking is a choice of the Chinese one"),
        (["--language", "zh", "--corpus", "x.txt"], "reads the snownlp reviews"),
        (["--language", "zh", "--vocab-size", "50"], "vocab_size must be 0"),
        (["--language", "zh", "--steps", "0"], "steps"),
    ],
)
def test_bad_options_are_one_line_and_exit_code_2(tmp_path, capsys, argv, message):
    assert cli.main(["quickstart", "--output", str(tmp_path / "run"), *argv]) == 2
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_unknown_language_or_masking_from_python_is_a_typed_error(tmp_path):
    import keras_bert_app as kba

    with pytest.raises(errors.ArgumentError) as raised:
        kba.quickstart(tmp_path / "run", language="fr", log=lambda line: None)
    assert raised.value.argument == "language"
    with pytest.raises(errors.ArgumentError) as raised:
        kba.quickstart(tmp_path / "run", language="zh", masking="span", log=lambda line: None)
    assert raised.value.argument == "masking" and "whole_word" in str(raised.value)
    assert not (tmp_path / "run").exists()


def test_missing_jieba_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "jieba", None)  # `import jieba` raises ImportError
    assert cli.main(["quickstart", "--language", "zh", "--output", str(tmp_path / "run")]) == 2
    assert "pip install" in capsys.readouterr().err and not (tmp_path / "run").exists()


# === The Chinese stages through the entry point, with stand-ins for the training stages ===
@pytest.mark.filterwarnings("ignore:No artists with labels")  # the stand-ins leave no training curves to plot
def test_chinese_data_stages_and_report_with_stand_in_training(tmp_path, monkeypatch, capsys):
    pytest.importorskip("snownlp")
    pytest.importorskip("jieba")
    pytest.importorskip("matplotlib")
    from keras_bert_app.demo import pipeline

    calls = []
    monkeypatch.setattr(pipeline, "pretrain_stage", lambda output, settings, log, learning_rate: calls.append(
        ("pretrain", learning_rate)) or {"checkpoint_every": 1, "final": {"mlm_accuracy": 0.25, "nsp_accuracy": 0.75}})
    monkeypatch.setattr(pipeline, "finetune_stage", lambda output, settings, start, run_dir, log, learning_rate, per_epoch_dev: calls.append(
        ("finetune", start.relative_to(output).as_posix(), run_dir.name, settings["seed"], per_epoch_dev)) or {"dev_accuracy": 0.5 + 0.1 * (start.name == "preset"),
                                                                            "dev_examples": 10, "train_examples": 16})
    monkeypatch.setattr(pipeline, "probe_stage", lambda output, settings, log: {
        "pretrained_cls": 0.9, "pretrained_mean": 0.8, "random_cls": 0.6, "random_mean": 0.7, "token_counts": 0.65})
    monkeypatch.setattr(pipeline, "export_and_classify", lambda output, log, sentences: {
        "export": "serving/1", "predictions": [{"text": text, "label": "positive", "probability": 0.9} for text in sentences]})
    output = tmp_path / "run"
    argv = ["quickstart", "--language", "zh", "--output", str(output), "--max-articles", "40", "--sequence-length", "24",
            "--dupe-factor", "1", "--labeled-articles", "16", "--masking", "ngram", "--seed", "5"]
    assert cli.main(argv) == 0
    # Dev scored after every epoch for the first seed (the plotted runs), after the last one for the others.
    assert [call[1:] for call in calls if call[0] == "finetune"] == [
        ("pretrain/preset", "finetune_pretrained", 5, True), ("model_preset", "finetune_random", 5, True),
        ("pretrain/preset", "finetune_pretrained_seed6", 6, False), ("model_preset", "finetune_random_seed6", 6, False),
        ("pretrain/preset", "finetune_pretrained_seed7", 7, False), ("model_preset", "finetune_random_seed7", 7, False),
    ]
    data = json.loads((output / "pretraining_data" / "pretraining_data.json").read_text())
    assert data["masking"] == "ngram" and data["segmenter"] == "jieba" and data["max_seq_length"] == 24
    assert data["segmentation"]["multi_token_words"] > 0 and data["segmentation"]["fallback_tokens"] == 0
    vocabulary = (output / "data" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert json.loads((output / "model_preset" / "config.json").read_text())["encoder"]["vocabulary_size"] == len(vocabulary)
    characters = set((output / "data" / "corpus.txt").read_text(encoding="utf-8")) - set(" \n")
    assert len(characters - set(vocabulary)) <= 0.05 * len(characters)  # every character kept, not the 1,000 most frequent
    report = (output / "report.md").read_text(encoding="utf-8")
    assert "| dev accuracy, fine-tuned, pretrained encoder (3 seeds) | 0.6000 ± 0.0000 |" in report
    assert "| 7 | 0.6000 | 0.5000 | +0.1000 |" in report and "ngram masking" in report
    assert "| dev accuracy, token counts + logistic regression, no encoder (baseline) | 0.6500 |" in report
    assert f"| {chinese_settings.SAMPLE_SENTENCES[0]} | positive | 0.90 |" in report
    assert "## Where the defaults come from" in report and "snownlp" in report
    assert "Done. Report:" in capsys.readouterr().out


# === End to end, tiny: every stage of the Chinese quickstart through the entry point ===
@pytest.mark.large  # about 150 CPU seconds (each training stage builds and traces its model), as the English one
@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="runs once, on the TensorFlow backend")
def test_tiny_chinese_quickstart_end_to_end(tmp_path, monkeypatch):
    pytest.importorskip("snownlp")
    pytest.importorskip("jieba")
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(chinese_settings, "FINETUNE_SEEDS", 1)  # the default run fine-tunes with 3 seeds
    output = tmp_path / "run"
    argv = [
        "quickstart", "--language", "zh", "--output", str(output), "--steps", "2", "--max-articles", "40",
        "--sequence-length", "24", "--batch-size", "8", "--finetune-epochs", "1", "--dupe-factor", "1",
        "--labeled-articles", "16",
    ]
    assert cli.main(argv) == 0
    report = (output / "report.md").read_text(encoding="utf-8")
    stages = {p.stem: json.loads(p.read_text()) for p in (output / "stages").glob("*.json")}
    pretrained = json.loads((output / "finetune_pretrained" / "metrics.json").read_text())["dev"]["accuracy"]
    random = json.loads((output / "finetune_random" / "metrics.json").read_text())["dev"]["accuracy"]
    assert f"| 0 | {pretrained:.4f} | {random:.4f} | {pretrained - random:+.4f} |" in report
    assert "masked LM accuracy" in report and "whole-word masking" in report
    for name in ("pretrained", "random"):
        assert f"features + logistic regression, {name} encoder | {stages['features'][f'{name}_cls']:.4f} |" in report
    assert f"| dev accuracy, token counts + logistic regression, no encoder (baseline) | {stages['features']['token_counts']:.4f} |" in report
    # Whole-word masking over jieba words, on a vocabulary learned from the train reviews.
    data = json.loads((output / "pretraining_data" / "pretraining_data.json").read_text())
    assert data["masking"] == "whole_word" and data["segmenter"] == "jieba"
    vocabulary = (output / "data" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert (output / "model_preset" / "vocab.txt").read_text(encoding="utf-8").splitlines() == vocabulary
    # The exported classifier labels the Chinese sample sentences.
    predictions = stages["export"]["predictions"]
    assert [p["text"] for p in predictions] == list(chinese_settings.SAMPLE_SENTENCES)
    assert {p["label"] for p in predictions} <= {"negative", "positive"}
    assert f"| {predictions[0]['text']} | {predictions[0]['label']} |" in report
    for plot in ("pretraining.png", "finetuning.png"):
        assert (output / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # A rerun continues: every stage is already done.
    marker_times = {p.name: p.stat().st_mtime for p in (output / "stages").iterdir()}
    assert cli.main(argv) == 0
    assert marker_times == {p.name: p.stat().st_mtime for p in (output / "stages").iterdir()}
