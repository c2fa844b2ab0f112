"""A tiny `finetune squad` run for v1.1 and v2.0, then `predict squad` and `evaluate squad` on it,
all through the command line, with the README's lines as written."""

import json
import shlex

import numpy as np
import pytest

import keras_bert_app as kba
from keras_bert_app import cli, errors
from tests.tasks.tiny_presets import SPECIALS, write_tiny_preset

COLORS = ["red", "blue", "green", "black", "white", "orange"]
THINGS = ["car", "house", "door", "bird", "ship", "tree", "lamp", "chair"]
FILLER = "the old town had many quiet streets and people walked there every day".split()

README_FINETUNE = (
    "keras-bert-app finetune squad --version 2.0 --train train-v2.0.json --dev dev-v2.0.json --preset P --output runs/squad"
)
README_EVALUATE = (
    "keras-bert-app evaluate squad --data dev-v2.0.json --predictions runs/squad/predictions.json "
    "--na-prob-file runs/squad/null_odds.json"
)
README_PREDICT = "keras-bert-app predict squad --preset runs/squad/preset --data dev-v2.0.json --output OUT"
SMALL_WINDOWS = ["--sequence-length", 32, "--doc-stride", 8, "--max-query-length", 10, "--epochs", 2,
                 "--batch-size", 8, "--learning-rate", 1e-3]


def write_squad(path, version, num_paragraphs=10, seed=0):
    rng = np.random.default_rng(seed)
    articles = []
    for p in range(num_paragraphs):
        colors = rng.permutation(COLORS)[:3]
        things = rng.permutation(THINGS)[:3]
        context, qas = "", []
        for i, (color, thing) in enumerate(zip(colors, things)):
            context += " ".join(rng.permutation(FILLER)[:8]) + ". "
            start = len(context) + len("The ") + len(thing) + len(" is ")
            context += f"The {thing} is {color}. "
            qas.append({"id": f"p{p}q{i}", "question": f"What color is the {thing}?",
                        "answers": [{"text": color, "answer_start": start}], "is_impossible": False})
        if version == "2.0":
            missing = next(t for t in THINGS if t not in things)
            qas.append({"id": f"p{p}none", "question": f"What color is the {missing}?",
                        "answers": [], "is_impossible": True})
        articles.append({"title": f"T{p}", "paragraphs": [{"context": context.strip(), "qas": qas}]})
    path.write_text(json.dumps({"version": "v2.0" if version == "2.0" else "1.1", "data": articles}))
    return path


VOCABULARY = SPECIALS + sorted(set(COLORS + THINGS + FILLER + ["what", "color", "is", ".", "?"]))


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    """A made-up vocabulary of the questions' words and a 2-layer encoder.

    Seeded: these few steps barely train it, so its questions' null score
    differences crowd together (1e-7 to 1e-4 apart, depending on the
    initialisation), so `evaluate` and `predict` must compute the logits as
    `finetune` did (XLA included) to score the near-ties the same way.
    """
    folder = tmp_path_factory.mktemp("tiny_preset")
    return write_tiny_preset(folder, VOCABULARY, max_sequence_length=64, num_layers=2, seed=7)


def run_cli(argv):
    return cli.main(shlex.split(argv)[1:] if isinstance(argv, str) else [str(value) for value in argv])


@pytest.mark.parametrize("version", [pytest.param("1.1", marks=pytest.mark.large), "2.0"])
def test_finetune_predict_evaluate(version, preset, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "P").symlink_to(preset, target_is_directory=True)
    data = write_squad(tmp_path / f"dev-v{version}.json", version)
    run = tmp_path / "runs" / "squad"
    assert run_cli(["finetune", "squad", "--version", version, "--train", data, "--dev", data,
                    "--preset", "P", "--output", run, *SMALL_WINDOWS]) == 0
    metrics = json.loads((run / "metrics.json").read_text())
    predictions = json.loads((run / "predictions.json").read_text())
    question_ids = [qa["id"] for article in json.loads(data.read_text())["data"]
                    for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    assert sorted(predictions) == sorted(question_ids)
    assert metrics["train_features"] > metrics["train_examples"]  # several windows each
    assert list(metrics) == ["task", "train_examples", "train_features", "train_skipped", "train_seconds",
                             "first_step_seconds", "examples_per_second_after_first_step", "dev"]
    config = json.loads((run / "preset" / "config.json").read_text())
    assert config["task"]["class_name"] == "BertQuestionAnswerer"
    assert config["task"]["data"]["doc_stride"] == 8
    assert config["task"]["data"] == metrics["task"]
    assert (run / "logs" / "history.csv").is_file()

    # `predict squad` with the saved preset gives the same answers.
    capsys.readouterr()
    assert run_cli(README_PREDICT.replace("dev-v2.0.json", data.name)) == 0
    assert json.loads((tmp_path / "OUT" / "predictions.json").read_text()) == predictions
    assert "Wrote" in capsys.readouterr().out

    # `evaluate squad` on the written files prints the scores the run stored.
    argv = ["evaluate", "squad", "--data", data, "--predictions", run / "predictions.json"]
    if version == "2.0":
        threshold = config["task"]["data"]["null_score_diff_threshold"]
        argv += ["--na-prob-file", run / "null_odds.json", "--na-prob-thresh", threshold]
    assert run_cli(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    dev = {k: v for k, v in metrics["dev"].items() if k not in ("examples", "features")}
    assert printed == pytest.approx(dev)
    # `kba.evaluate` on the preset scores the dev file the same way.
    assert kba.evaluate(run / "preset", data) == pytest.approx(metrics["dev"])
    if version == "2.0":
        assert (run / "null_odds.json").is_file()
        assert set(printed) >= {"HasAns_f1", "NoAns_f1", "best_f1", "best_f1_thresh"}
        # The tuned threshold gives the best dev F1, and sits between the
        # questions' null score differences, not on one (where a rounding
        # error in `predict` would flip that question).
        assert printed["f1"] == pytest.approx(printed["best_f1"])
        odds = sorted(set(json.loads((run / "null_odds.json").read_text()).values()))
        assert threshold not in odds
        below, above = max(v for v in odds if v < threshold), min(v for v in odds if v > threshold)
        assert threshold == pytest.approx((below + above) / 2, rel=0, abs=1e-9)  # halfway between neighbours
        # The README's `evaluate squad` line, as written (the official default threshold 1.0).
        assert run_cli(README_EVALUATE) == 0
        assert list(json.loads(capsys.readouterr().out))[:3] == ["exact", "f1", "total"]
    else:
        assert set(printed) == {"exact_match", "f1"}


def test_readme_finetune_squad_line(tmp_path, monkeypatch, capsys):
    """The README's `finetune squad` line as written: the paper's SQuAD recipe (384 tokens, 2 epochs, 3e-5)."""
    monkeypatch.chdir(tmp_path)
    write_tiny_preset(tmp_path / "P", VOCABULARY, max_sequence_length=384)
    write_squad(tmp_path / "train-v2.0.json", "2.0", num_paragraphs=3)
    write_squad(tmp_path / "dev-v2.0.json", "2.0", num_paragraphs=2, seed=1)
    assert run_cli(README_FINETUNE) == 0
    out = capsys.readouterr().out
    assert "for 2 epochs x 1 steps, batch 32, learning rate 3e-05" in out and "Tuned the no-answer threshold" in out
    metrics = json.loads((tmp_path / "runs" / "squad" / "metrics.json").read_text())
    assert metrics["task"]["sequence_length"] == 384 and metrics["task"]["doc_stride"] == 128
    assert isinstance(metrics["task"]["null_score_diff_threshold"], float)
    assert (metrics["train_examples"], metrics["dev"]["examples"]) == (12, 8)
    assert {path.name for path in (tmp_path / "runs" / "squad").iterdir()} == {
        "metrics.json", "logs", "preset", "predictions.json", "nbest_predictions.json", "null_odds.json"}


def test_predict_squad_refuses_other_presets(tmp_path, capsys):
    """`predict squad` on a preset that is not a SQuAD run: one line on stderr, exit code 2."""
    from keras_bert_app.models.bert_classifier import BertClassifier
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    folder = tmp_path / "classifier"
    vocabulary = SPECIALS + ["a", "b"]
    BertTokenizer(vocabulary).save_to_preset(folder)
    encoder = BertEncoder(vocabulary_size=len(vocabulary), num_layers=1, num_heads=1, hidden_dim=4, intermediate_dim=8)
    BertClassifier(encoder, num_classes=2).save_to_preset(folder, label_names=["x", "y"])
    entry = json.loads((folder / "config.json").read_text())["task"]
    from keras_bert_app import presets

    presets.write_config_entry(folder, "task", {**entry, "data": {"reader": "classify", "sequence_length": 8,
                                                                  "text_column": "t", "label_column": "l"}})
    questions = write_squad(tmp_path / "q.json", "1.1", num_paragraphs=1)
    assert run_cli(["predict", "squad", "--preset", folder, "--data", questions, "--output", tmp_path / "out"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "holds a fine-tuned classify task, not squad" in err
    with pytest.raises(errors.ArgumentError) as caught:
        kba.predict(folder, questions, tmp_path / "out", task="squad")
    assert caught.value.argument == "preset"
    # Without a fine-tuned task at all.
    assert run_cli(["predict", "--preset", "bert_tiny_uncased", "--input", questions, "--output", tmp_path / "o"]) == 2
    assert "has no fine-tuned task" in capsys.readouterr().err
