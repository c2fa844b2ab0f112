"""`finetune classify` and `predict` as the README writes them, and the same through the Python API:
`kba.finetune` (same seed, same numbers), `kba.predict`, `kba.evaluate`."""

import json
import os
import shlex

import pytest

import keras_bert_app as kba
from keras_bert_app import cli, errors
from tests.tasks.tiny_presets import write_tiny_preset

README_FINETUNE = (
    "keras-bert-app finetune classify --train train.csv --dev dev.csv --text-column text --label-column label "
    "--preset runs/mini/preset --output runs/topics"
)
README_PREDICT = "keras-bert-app predict --preset runs/topics/preset --input new.csv --output predictions.jsonl"
SPORT = ["The striker scored twice", "The team won the cup", "A late goal won the match", "The coach praised the players"]
BUSINESS = ["Shares fell after the results", "The bank raised interest rates", "Profits rose this year",
            "The market closed lower"]


def _csv(rows):
    return "text,label\n" + "".join(f"{text},{label}\n" for text, label in rows)


@pytest.fixture(scope="module")
def topics(tmp_path_factory, shared_data):
    """A folder where the README's `finetune classify` line has run, as written."""
    workspace = tmp_path_factory.mktemp("topics")
    write_tiny_preset(workspace / "runs" / "mini" / "preset", shared_data / "vocab" / "bert_uncased_vocab.txt",
                      max_sequence_length=128)
    rows = [(text, "sport") for text in SPORT] + [(text, "business") for text in BUSINESS]
    (workspace / "train.csv").write_text(_csv(rows), encoding="utf-8")
    (workspace / "dev.csv").write_text(_csv(rows[::3]), encoding="utf-8")
    (workspace / "new.csv").write_text(_csv(rows[::3]), encoding="utf-8")  # labels in it are ignored
    cwd = os.getcwd()
    os.chdir(workspace)
    try:
        assert cli.main(shlex.split(README_FINETUNE)[1:]) == 0
    finally:
        os.chdir(cwd)
    return workspace


def _records(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_readme_finetune_classify_writes_the_run_folder(topics):
    run = topics / "runs" / "topics"
    assert {path.name for path in run.iterdir()} == {"metrics.json", "logs", "dev_predictions.jsonl", "preset"}
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["task"] == {"reader": "classify", "sequence_length": 128, "text_column": "text",
                               "text_pair_column": None, "label_column": "label", "regression": False}
    assert list(metrics) == ["task", "train_examples", "train_seconds", "first_step_seconds",
                             "examples_per_second_after_first_step", "dev"] and metrics["train_examples"] == 8
    assert metrics["first_step_seconds"] > 0 and metrics["examples_per_second_after_first_step"] > 0
    assert set(metrics["dev"]) == {"accuracy", "f1", "examples"} and metrics["dev"]["examples"] == 3
    config = json.loads((run / "preset" / "config.json").read_text())
    assert config["task"]["label_names"] == ["business", "sport"]  # sorted train labels
    assert config["task"]["data"] == metrics["task"]
    assert len((run / "logs" / "history.csv").read_text().splitlines()) == 1 + 3  # header + the paper's 3 epochs
    assert [record["line"] for record in _records(run / "dev_predictions.jsonl")] == [2, 3, 4]


def test_readme_predict_line(topics, monkeypatch, capsys):
    monkeypatch.chdir(topics)
    assert cli.main(shlex.split(README_PREDICT)[1:]) == 0
    assert "Wrote 3 predictions" in capsys.readouterr().out
    records = _records(topics / "predictions.jsonl")
    assert [record["line"] for record in records] == [2, 3, 4]
    labels = ["business", "sport"]
    assert all(record["prediction"] == labels[max(range(2), key=record["logits"].__getitem__)] for record in records)
    # new.csv is dev.csv: the run's dev predictions again.
    dev = _records(topics / "runs" / "topics" / "dev_predictions.jsonl")
    assert [record["prediction"] for record in records] == [record["prediction"] for record in dev]


def test_predict_and_evaluate_in_python(topics, tmp_path):
    preset = topics / "runs" / "topics" / "preset"
    path = kba.predict(preset, topics / "new.csv", tmp_path / "out" / "p.jsonl", batch_size=2)
    assert path == tmp_path / "out" / "p.jsonl" and len(_records(path)) == 3
    metrics = json.loads((topics / "runs" / "topics" / "metrics.json").read_text())
    assert kba.evaluate(str(preset), topics / "dev.csv") == pytest.approx(metrics["dev"])
    for call, argument in (
        (lambda: kba.predict(preset, tmp_path / "missing.csv", tmp_path / "p.jsonl"), "input"),
        (lambda: kba.predict(preset, topics / "new.csv", tmp_path / "p.jsonl", batch_size="2"), "batch_size"),
        (lambda: kba.predict(preset, topics / "new.csv", tmp_path / "p.jsonl", text_colum="x"), "text_colum"),
        (lambda: kba.evaluate(topics / "runs" / "mini" / "preset", topics / "dev.csv"), "preset"),
        (lambda: kba.evaluate(tmp_path / "nowhere", topics / "dev.csv"), "preset"),
    ):
        with pytest.raises(errors.ArgumentError) as caught:
            call()
        assert caught.value.argument == argument


def test_finetune_in_python_reproduces_the_command_line_run(topics, tmp_path):
    task = kba.get_task("classify")(
        train=topics / "train.csv", dev=str(topics / "dev.csv"), text_column="text", label_column="label"
    )
    result = kba.finetune(task, topics / "runs" / "mini" / "preset", tmp_path / "again", verbose=0)
    assert isinstance(result, kba.FinetuneResult)
    assert (result.output, result.preset) == (tmp_path / "again", tmp_path / "again" / "preset")
    assert json.loads((result.output / "metrics.json").read_text()) == result.metrics
    command_line = json.loads((topics / "runs" / "topics" / "metrics.json").read_text())
    for metrics in (command_line, result.metrics):
        for timing in ("train_seconds", "first_step_seconds", "examples_per_second_after_first_step"):
            metrics.pop(timing)
    assert result.metrics == command_line  # same seed, same numbers
    run = topics / "runs" / "topics"
    assert (result.output / "dev_predictions.jsonl").read_text() == (run / "dev_predictions.jsonl").read_text()
    assert task.label_names is None  # the instance passed in is not changed by the run
