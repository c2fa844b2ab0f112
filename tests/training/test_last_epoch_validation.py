"""`finetune` scores the dev set once after its last epoch: the `val_*` figures of the logs and the official
metrics come from one prediction pass, equal to what Keras' own validation pass gives (the reference run)."""

import csv
import json

import keras
import pytest

from keras_bert_app import cli
from keras_bert_app.training import last_epoch_validation
from tests.training.test_finetune import CONLL_TRAIN, SWAG_HEADER, SWAG_ROWS, tiny_preset  # noqa: F401 (a fixture)

# The prediction pass differs by backend in its two paths (whole-example outputs through `predict`, per-position
# ones through `predict_on_batch`): one task of each runs on every backend, the rest on TensorFlow alone.
ALL_BACKENDS = pytest.mark.all_backends

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


def _evaluation_events(log_dir):
    """(tag, step) of TensorBoard's `evaluation_*_vs_iterations` scalars, which a validation pass writes."""
    import tensorflow as tf

    return sorted(
        (value.tag, event.step)
        for path in sorted((log_dir / "validation").glob("events.out.tfevents.*"))
        for event in tf.compat.v1.train.summary_iterator(str(path))
        for value in event.summary.value
        if value.tag.startswith("evaluation_")
    )


def _run(task, preset, folder, monkeypatch, flags):
    """`finetune TASK` for 2 epochs through the command line: history rows, metrics, calls of evaluate and predict
    and of `Task.validation_data` (the dataset for Keras' validation)."""
    from keras_bert_app.tasks.base import Task

    calls = []
    for owner, method in ((keras.Model, "evaluate"), (keras.Model, "predict"), (keras.Model, "predict_on_batch"),
                          (Task, "validation_data")):
        original = getattr(owner, method)
        monkeypatch.setattr(owner, method,
                            lambda self, *a, _o=original, _m=method, **k: calls.append(_m) or _o(self, *a, **k))
    argv = ["finetune", task, "--preset", preset, "--output", folder / "run", "--epochs", "2", "--batch-size", "3",
            "--sequence-length", "32", "--learning-rate", "1e-3", "--seed", "1",
            *_task_arguments(task, folder), *flags]
    assert cli.main([str(a) for a in argv]) == 0
    monkeypatch.undo()
    with open(folder / "run" / "logs" / "history.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    dev = json.loads((folder / "run" / "metrics.json").read_text())["dev"]
    return rows, dev, calls, _evaluation_events(folder / "run" / "logs")


@pytest.mark.parametrize("task, flags", [
    pytest.param("classify", [], marks=ALL_BACKENDS), ("classify", ["--no-bucketing"]),
    pytest.param("ner", [], marks=ALL_BACKENDS), ("swag", []),
])
def test_last_epoch_val_scores_come_from_the_prediction_pass_and_equal_keras_validation(
    task, flags, tiny_preset, tmp_path, monkeypatch
):
    (tmp_path / "ours").mkdir()
    ours, ours_dev, ours_calls, ours_events = _run(task, tiny_preset, tmp_path / "ours", monkeypatch, flags)

    # The reference: Keras' own validation pass after every epoch, the dev logits computed again after `fit`.
    monkeypatch.setattr(last_epoch_validation.LastEpochValidation, "on_epoch_end", lambda self, epoch, logs=None: None)
    monkeypatch.setattr(
        last_epoch_validation, "keras_validation_epochs",
        lambda epochs, freq: [epoch for epoch in range(1, epochs + 1) if epoch % freq == 0],
    )
    (tmp_path / "keras").mkdir()
    reference, reference_dev, reference_calls, reference_events = _run(
        task, tiny_preset, tmp_path / "keras", monkeypatch, flags
    )

    # One dev pass after the last epoch: Keras' validation is gone, and the predictions are not made again.
    assert ours_calls.count("evaluate") == 1 and reference_calls.count("evaluate") == 2
    for method in ("predict", "predict_on_batch"):
        assert ours_calls.count(method) == reference_calls.count(method), method
    assert ours_calls.count("predict") + ours_calls.count("predict_on_batch") >= 1
    # Keras' validation dataset is made for the first epoch only (the last is the prediction pass's): see also
    # test_keras_validation_dataset_is_made_only_for_the_epochs_keras_scores (one epoch: none made).
    assert ours_calls.count("validation_data") == 1
    # TensorBoard's validation writer gets both epochs' evaluation points, as from Keras' own pass.
    assert len([step for tag, step in ours_events if tag == "evaluation_loss_vs_iterations"]) == 2
    assert ours_events == reference_events
    assert len(ours) == len(reference) == 2
    val_columns = [name for name in reference[0] if name.startswith("val_")]
    assert "val_loss" in val_columns and len(val_columns) >= 2  # the loss and the compiled metrics
    assert all(float(row["val_loss"]) > 0 for row in ours)
    for ours_row, reference_row in zip(ours, reference):
        assert sorted(ours_row) == sorted(reference_row)
        for name in reference_row:
            assert float(ours_row[name]) == pytest.approx(float(reference_row[name]), rel=1e-5, abs=1e-6), name
    assert ours_dev == reference_dev


def test_a_task_with_its_own_logits_or_validation_data_keeps_keras_validation_pass(tiny_preset, tmp_path):
    """A `Task` subclass written before `on_batch` (or with validation batches of its own) is trained as before."""
    import keras_bert_app as kba
    from keras_bert_app.tasks.text_classification import TextClassification

    class OldLogits(TextClassification):
        def logits(self, model, split, batch_size):
            return super().logits(model, split, batch_size)

    class OwnValidation(TextClassification):
        def validation_data(self, split, batch_size):
            return self.dataset(split, 1)

    (tmp_path / "data.csv").write_text("\n".join(CLASSIFY_ROWS) + "\n", encoding="utf-8")
    options = dict(train=tmp_path / "data.csv", dev=tmp_path / "data.csv", text_column="text", label_column="label")
    for task_class in (OldLogits, OwnValidation):
        assert not last_epoch_validation.scores_from_predictions(task_class(**options))
        run = kba.finetune(task_class(**options), tiny_preset, tmp_path / task_class.__name__, epochs=1,
                           batch_size=4, sequence_length=16, verbose=0)
        with open(run.output / "logs" / "history.csv", newline="") as file:
            rows = list(csv.DictReader(file))
        assert len(rows) == 1 and float(rows[0]["val_loss"]) > 0  # from Keras' pass
        assert 0 <= run.metrics["dev"]["accuracy"] <= 1
    assert last_epoch_validation.scores_from_predictions(TextClassification(**options))


# Two epochs (one dataset, for the first): test_last_epoch_val_scores_come_from_the_prediction_pass_... counts it.
@pytest.mark.parametrize("epochs", [1])
def test_keras_validation_dataset_is_made_only_for_the_epochs_keras_scores(epochs, tiny_preset, tmp_path, monkeypatch):
    """The last epoch is scored by the prediction pass: a one-epoch run makes no dataset for Keras' validation."""
    import keras_bert_app as kba
    from keras_bert_app.tasks.base import Task
    from keras_bert_app.tasks.text_classification import TextClassification

    made = []
    validation_data = Task.validation_data
    monkeypatch.setattr(Task, "validation_data", lambda self, *args: made.append(args) or validation_data(self, *args))
    (tmp_path / "data.csv").write_text("\n".join(CLASSIFY_ROWS) + "\n", encoding="utf-8")
    task = TextClassification(train=tmp_path / "data.csv", dev=tmp_path / "data.csv", text_column="text",
                              label_column="label")
    run = kba.finetune(task, tiny_preset, tmp_path / "run", epochs=epochs, batch_size=4, sequence_length=16, verbose=0)
    assert len(made) == epochs - 1
    with open(run.output / "logs" / "history.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == epochs and all(float(row["val_loss"]) > 0 for row in rows)
