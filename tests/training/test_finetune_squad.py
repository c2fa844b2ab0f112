"""A tiny `finetune squad` run for v1.1 and v2.0, then `predict squad` and `evaluate squad` on it."""

import argparse
import json

import numpy as np
import pytest

from keras_bert_app.training import finetune_squad

COLORS = ["red", "blue", "green", "black", "white", "orange"]
THINGS = ["car", "house", "door", "bird", "ship", "tree", "lamp", "chair"]
FILLER = "the old town had many quiet streets and people walked there every day".split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


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


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    folder = tmp_path_factory.mktemp("tiny_preset")
    vocabulary = SPECIALS + sorted(set(COLORS + THINGS + FILLER + ["what", "color", "is", ".", "?"]))
    BertTokenizer(vocabulary, lowercase=True).save_to_preset(folder)
    BertEncoder(
        vocabulary_size=len(vocabulary), num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=64,
    ).save_to_preset(folder)
    return folder


def parse(add_arguments, argv):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args([str(value) for value in argv])


@pytest.mark.parametrize("version", [pytest.param("1.1", marks=pytest.mark.large), "2.0"])
def test_finetune_predict_evaluate(version, preset, tmp_path, capsys):
    from keras_bert_app.evaluation.squad_evaluate import add_squad_arguments
    from keras_bert_app.evaluation.squad_evaluate import run_squad

    data = write_squad(tmp_path / "train.json", version)
    run = tmp_path / "run"
    args = parse(finetune_squad.add_arguments, [
        "--version", version, "--train", data, "--dev", data, "--preset", preset, "--output", run,
        "--sequence-length", 32, "--doc-stride", 8, "--max-query-length", 10, "--epochs", 2,
        "--batch-size", 8, "--learning-rate", 1e-3,
    ])
    assert finetune_squad.run(args) == 0
    metrics = json.loads((run / "metrics.json").read_text())
    predictions = json.loads((run / "predictions.json").read_text())
    question_ids = [qa["id"] for article in json.loads(data.read_text())["data"]
                    for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    assert sorted(predictions) == sorted(question_ids)
    assert metrics["train_features"] > metrics["train_examples"]  # several windows each
    config = json.loads((run / "preset" / "config.json").read_text())
    assert config["task"]["class_name"] == "BertQuestionAnswerer"
    assert config["task"]["data"]["doc_stride"] == 8

    # `predict squad` with the saved preset gives the same answers.
    out = tmp_path / "predict"
    assert finetune_squad.run_predict(parse(finetune_squad.add_predict_arguments, [
        "--preset", run / "preset", "--data", data, "--output", out,
    ])) == 0
    assert json.loads((out / "predictions.json").read_text()) == predictions

    # `evaluate squad` on the written files prints the scores the run stored.
    argv = ["--data", data, "--predictions", run / "predictions.json"]
    if version == "2.0":
        threshold = config["task"]["data"]["null_score_diff_threshold"]
        argv += ["--na-prob-file", run / "null_odds.json", "--na-prob-thresh", threshold]
    capsys.readouterr()
    assert run_squad(parse(add_squad_arguments, argv)) == 0
    printed = json.loads(capsys.readouterr().out)
    dev = {k: v for k, v in metrics["dev"].items() if k not in ("examples", "features")}
    assert printed == pytest.approx(dev)
    if version == "2.0":
        assert (run / "null_odds.json").is_file()
        assert set(printed) >= {"HasAns_f1", "NoAns_f1", "best_f1", "best_f1_thresh"}
        # The tuned threshold gives the best dev F1, and sits between the
        # questions' null score differences, not on one (where a rounding
        # error in `predict` would flip that question).
        assert printed["f1"] == pytest.approx(printed["best_f1"])
        odds = json.loads((run / "null_odds.json").read_text()).values()
        assert min(abs(value - threshold) for value in odds) > 1e-5
    else:
        assert set(printed) == {"exact_match", "f1"}
