"""The task registry: every task implements the `Task` interface, declares its options as data,
rebuilds from today's preset "task" entries, and bad names or options raise typed errors."""

import inspect
import json
import os
import subprocess
import sys

import pytest

from keras_bert_app import errors
from keras_bert_app.tasks import registry
from keras_bert_app.tasks.base import Task
from keras_bert_app.tasks.options import OPTION_KINDS, Option
from keras_bert_app.tasks.glue import GlueClassification
from keras_bert_app.tasks.question_answering import QuestionAnswering
from keras_bert_app.tasks.text_classification import TextClassification
from tests.conftest import REPO_ROOT

# What a fine-tuned preset's config.json holds today under "task" (class_name, config, weights omitted).
SAVED_ENTRIES = {
    "classify": {
        "class_name": "BertClassifier", "label_names": ["neg", "pos"],
        "data": {"reader": "classify", "sequence_length": 64, "text_column": "text", "text_pair_column": None,
                 "label_column": "label", "regression": False},
    },
    "glue": {
        "class_name": "BertClassifier", "label_names": ["0", "1"],
        "data": {"reader": "glue", "sequence_length": 128, "glue_task": "mrpc"},
    },
    "swag": {"class_name": "BertMultipleChoice", "data": {"reader": "swag", "sequence_length": 32, "num_choices": 4}},
    "ner": {"class_name": "BertTokenClassifier", "label_names": ["O", "B-PER", "I-PER"],
            "data": {"reader": "ner", "sequence_length": 16}},
    "squad": {
        "class_name": "BertQuestionAnswerer",
        "data": {"reader": "squad", "version": "2.0", "sequence_length": 32, "doc_stride": 8, "max_query_length": 10,
                 "n_best_size": 20, "max_answer_length": 30, "null_score_diff_threshold": -1.25},
    },
}
# Each task must bring its own version of these (the base only raises NotImplementedError or passes).
OWN_METHODS = ("read", "featurize", "model_class", "decode", "metrics")


@pytest.mark.parametrize("name", sorted(registry.TASKS))
def test_every_task_implements_the_interface(name):
    task_class = registry.TASKS[name]
    assert issubclass(task_class, Task) and registry.get_task(name) is task_class
    assert task_class.NAME == name and task_class.READER and task_class.DESCRIPTION
    missing = [method for method in OWN_METHODS if getattr(task_class, method) is getattr(Task, method)]
    assert not missing, f"{name} does not implement {missing}"
    if task_class.fit_arguments is Task.fit_arguments:
        # The base's `dataset` batches (by length) what the task's `examples_dataset` gives.
        assert task_class.examples_dataset is not Task.examples_dataset, f"{name} has no dataset for the training loop"
    assert set(task_class.DEFAULTS) == {"epochs", "batch_size", "learning_rate", "sequence_length"}
    for option in task_class.OPTIONS:
        assert isinstance(option, Option) and option.kind in OPTION_KINDS and option.help
        used = [base for base in task_class.__mro__ if issubclass(base, Task) and option.name in inspect.getsource(base)]
        assert used or option in Task.OPTIONS, f"{name} does not use its option {option.name}"
    task = task_class()  # options are only required to fine-tune
    assert task.model_class().__name__ == task_class.MODEL_CLASS_NAME
    assert task.serving_task is not None
    spec = task.spec()
    assert spec["reader"] == task_class.READER and "sequence_length" in spec


@pytest.mark.parametrize("name", sorted(SAVED_ENTRIES))
def test_todays_preset_task_entries_load_and_round_trip(name):
    entry = SAVED_ENTRIES[name]
    task = registry.task_from_entry(json.loads(json.dumps(entry)))
    assert type(task) is registry.TASKS[name]
    assert task.spec() == entry["data"] and list(task.spec()) == list(entry["data"])  # same keys, same order
    assert task.label_names == entry.get("label_names")
    # An entry without "data" (a model saved by hand) finds the task by its model class.
    assert type(registry.task_from_entry({"class_name": entry["class_name"]})).MODEL_CLASS_NAME == entry["class_name"]


def test_paper_defaults():
    assert TextClassification.DEFAULTS == {"epochs": 3, "batch_size": 32, "learning_rate": 2e-5, "sequence_length": 128}
    assert registry.get_task("ner").DEFAULTS["learning_rate"] == 5e-5
    assert QuestionAnswering.DEFAULTS == {"epochs": 2, "batch_size": 32, "learning_rate": 3e-5, "sequence_length": 384}


def test_unknown_names_and_bad_options_raise_typed_errors(tmp_path):
    names = r"\['classify', 'glue', 'ner', 'squad', 'swag'\]"
    with pytest.raises(errors.ArgumentError, match=f"task must be one of {names}") as caught:
        registry.get_task("sentiment")
    assert caught.value.argument == "task"
    with pytest.raises(errors.ArgumentTypeError) as caught:
        registry.get_task(3)
    assert caught.value.argument == "task"
    cases = [
        (TextClassification, {"text_column": 1}, errors.ArgumentTypeError, "text_column"),
        (TextClassification, {"labels": "a,b"}, errors.ArgumentTypeError, "labels"),
        (TextClassification, {"regression": "yes"}, errors.ArgumentTypeError, "regression"),
        (TextClassification, {"text_colum": "text"}, errors.ArgumentError, "text_colum"),
        (GlueClassification, {"glue_task": "MRPQ"}, errors.ArgumentError, "glue_task"),
        (QuestionAnswering, {"version": "3.0"}, errors.ArgumentError, "version"),
        (QuestionAnswering, {"doc_stride": 0}, errors.ArgumentError, "doc_stride"),
        (registry.get_task("swag"), {"num_choices": 4.0}, errors.ArgumentTypeError, "num_choices"),
    ]
    for task_class, options, error, argument in cases:
        with pytest.raises(error) as caught:
            task_class(**options)
        assert caught.value.argument == argument, options
        assert argument in str(caught.value)
    (tmp_path / "train.csv").write_text("text,label\n")
    task = TextClassification(train=tmp_path / "train.csv", dev=str(tmp_path / "train.csv"), text_column="text")
    with pytest.raises(errors.ArgumentError, match="needs label_column"):
        task.check_training_options()
    task = TextClassification(train="no/such/train.csv", dev="dev.csv", text_column="t", label_column="l")
    with pytest.raises(errors.MissingFileError, match="no such file") as caught:
        task.check_training_options()
    assert caught.value.argument == "train"


def test_glue_takes_labels_and_metrics_from_its_table():
    task = GlueClassification(glue_task="STS-B", data_dir=".")
    assert task.spec()["glue_task"] == "stsb" and task.label_names is None
    assert task.metric_names() == ("pearson", "spearman")
    assert GlueClassification(glue_task="MNLI").label_names == ["contradiction", "entailment", "neutral"]
    assert GlueClassification(glue_task="MRPC").serving_defaults() == {"text_pair": True}


def test_the_command_line_help_imports_no_tensorflow():
    code = (
        "import argparse, sys\n"
        "from keras_bert_app.commands import evaluate, export, extract_features, finetune, predict\n"
        "parser = argparse.ArgumentParser(); sub = parser.add_subparsers()\n"
        "for module in (evaluate, export, extract_features, finetune, predict):\n"
        "    module.add_arguments(sub.add_parser(module.__name__))\n"
        "heavy = sorted(m for m in ('tensorflow', 'keras', 'jax', 'torch') if m in sys.modules)\n"
        "print(heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            cwd=REPO_ROOT, env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"
