"""`finetune` scores the dev set once after its last epoch: the `val_*` figures of the logs and the official
metrics come from one prediction pass, equal to what Keras' own validation pass gives (the reference run)."""

import csv
import json

import keras
import pytest

from keras_bert_app import cli
from keras_bert_app.training import last_epoch_validation
from tests.training.test_finetune import CONLL_TRAIN, SWAG_HEADER, SWAG_ROWS, tiny_preset  # noqa: F401 (a fixture)

pytestmark = pytest.mark.all_backends

CLASSIFY_ROWS = ["text,label"] + [
    f"{word} {'good fine great' * (i % 3)},pos" if i % 2 else f"{word} bad,neg"
    for i, word in enumerate("the a one two red blue cat dog sun moon sky sea star".split())
]


def _task_arguments(task, folder):
    if task == "classify":
        (folder / "data.csv").write_text("\n".join(CLASSIFY_ROWS) + "\n", encoding="utf-8")
        return ["--train", folder / "data.csv", "--dev", folder / "data.csv", "--text-column", "text",
                "--label-column", "label"]
    if task == "ner":
        (folder / "data.txt").write_text(CONLL_TRAIN, encoding="utf-8")
        return ["--train", folder / "data.txt", "--dev", folder / "data.txt"]
    (folder / "data.csv").write_text("\n".join([SWAG_HEADER, *SWAG_ROWS]) + "\n", encoding="utf-8")
    return ["--train", folder / "data.csv", "--dev", folder / "data.csv"]


def _run(task, preset, folder, monkeypatch, flags):
    """`finetune TASK` for 2 epochs through the command line; its history rows, metrics and `evaluate` calls."""
    calls = []
    evaluate = keras.Model.evaluate
    monkeypatch.setattr(keras.Model, "evaluate", lambda self, *a, **k: calls.append(1) or evaluate(self, *a, **k))
    argv = ["finetune", task, "--preset", preset, "--output", folder / "run", "--epochs", "2", "--batch-size", "3",
            "--sequence-length", "32", "--learning-rate", "1e-3", "--seed", "1",
            *_task_arguments(task, folder), *flags]
    assert cli.main([str(a) for a in argv]) == 0
    monkeypatch.setattr(keras.Model, "evaluate", evaluate)
    with open(folder / "run" / "logs" / "history.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    return rows, json.loads((folder / "run" / "metrics.json").read_text())["dev"], len(calls)


@pytest.mark.parametrize("task, flags", [("classify", []), ("classify", ["--no-bucketing"]), ("ner", []), ("swag", [])])
def test_last_epoch_val_scores_come_from_the_prediction_pass_and_equal_keras_validation(
    task, flags, tiny_preset, tmp_path, monkeypatch
):
    (tmp_path / "ours").mkdir()
    ours, ours_dev, ours_evaluations = _run(task, tiny_preset, tmp_path / "ours", monkeypatch, flags)

    # The reference: Keras' own validation pass after every epoch, the dev logits computed again after `fit`.
    monkeypatch.setattr(last_epoch_validation.LastEpochValidation, "on_epoch_end", lambda self, epoch, logs=None: None)
    monkeypatch.setattr(
        last_epoch_validation, "keras_validation_epochs",
        lambda epochs, freq: [epoch for epoch in range(1, epochs + 1) if epoch % freq == 0],
    )
    (tmp_path / "keras").mkdir()
    reference, reference_dev, reference_evaluations = _run(task, tiny_preset, tmp_path / "keras", monkeypatch, flags)

    assert (ours_evaluations, reference_evaluations) == (1, 2)  # the last epoch's Keras pass is the one saved
    assert len(ours) == len(reference) == 2
    val_columns = [name for name in reference[0] if name.startswith("val_")]
    assert "val_loss" in val_columns and len(val_columns) >= 2  # the loss and the compiled metrics
    for ours_row, reference_row in zip(ours, reference):
        assert sorted(ours_row) == sorted(reference_row)
        for name in reference_row:
            assert float(ours_row[name]) == pytest.approx(float(reference_row[name]), rel=1e-5, abs=1e-6), name
    assert ours_dev == reference_dev
