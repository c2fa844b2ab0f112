"""`finetune` on GLUE, SWAG, NER and your own CSV: the README's command lines as written, then
`evaluate`/`predict` on the saved preset; bad input to `kba.finetune` and to the command line."""

import json
import re
import shlex
import warnings

import pytest

import keras_bert_app as kba
from keras_bert_app import cli, errors
from tests.tasks.tiny_presets import write_tiny_preset


@pytest.fixture(scope="module")
def tiny_preset(tmp_path_factory, shared_data):
    """A preset folder: the real uncased vocabulary and a 1-layer, 16-wide encoder (128 positions)."""
    folder = tmp_path_factory.mktemp("tiny_preset")
    return write_tiny_preset(folder, shared_data / "vocab" / "bert_uncased_vocab.txt", max_sequence_length=128)


@pytest.fixture
def workspace(tmp_path, tiny_preset, monkeypatch):
    """A working folder where the README's `--preset P` is the tiny preset."""
    (tmp_path / "P").symlink_to(tiny_preset, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


COMMON = ["--epochs", "1", "--batch-size", "4", "--sequence-length", "16", "--learning-rate", "1e-3"]

# The README's lines, as written (README.md, "The workflow, stage by stage").
README_SWAG = "keras-bert-app finetune swag --train train.csv --dev val.csv --preset P --output runs/swag"
README_NER = "keras-bert-app finetune ner --train train.txt --dev dev.txt --preset P --output runs/ner"
README_GLUE = "keras-bert-app finetune glue --task MRPC --data-dir glue/MRPC --preset P --output runs/mrpc"

SWAG_HEADER = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label"
SWAG_ROWS = [
    "0,v,1,x,The cook lights the stove.,She,gold,puts a pan on it.,swims across.,reads a map.,flies off.,0",
    "1,v,1,x,A boy kicks the ball.,It,gold,sings.,rolls into the goal.,cooks dinner.,sleeps.,1",
    "2,v,1,x,The dog sees a cat.,The dog,gold,writes a poem.,pays taxes.,barks at it.,melts.,2",
    "3,v,1,x,He opens the book.,He,gold,eats the moon.,drives a train.,paints a wall.,starts to read.,3",
    "4,v,1,x,She picks up the phone.,She,gold,says hello.,jumps a wall.,bakes bread.,plants a tree.,0",
]

CONLL_TRAIN = """-DOCSTART- -X- -X- O

John NNP B-NP B-PER
lives VBZ B-VP O
in IN B-PP O
Paris NNP B-NP B-LOC
. . O O

Mary NNP B-NP B-PER
Smith NNP I-NP I-PER
visited VBD B-VP O
London NNP B-NP B-LOC
"""


def run_cli(argv, capsys):
    code = cli.main(shlex.split(argv)[1:] if isinstance(argv, str) else [str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.large
def test_swag_trains_evaluates_predicts(workspace, capsys):
    train = workspace / "train.csv"
    train.write_text("\n".join([SWAG_HEADER, *SWAG_ROWS]) + "\n", encoding="utf-8")
    (workspace / "val.csv").write_text(train.read_text(encoding="utf-8"), encoding="utf-8")
    run = workspace / "runs" / "swag"
    code, out, err = run_cli(README_SWAG, capsys)
    assert code == 0, err
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["dev"]["examples"] == 5 and 0.0 <= metrics["dev"]["accuracy"] <= 1.0
    assert metrics["task"] == {"reader": "swag", "sequence_length": 128, "num_choices": 4}
    assert (run / "logs" / "history.csv").is_file()
    config = json.loads((run / "preset" / "config.json").read_text())
    assert config["task"]["class_name"] == "BertMultipleChoice"
    # The saved preset reproduces the run's dev figures.
    code, out, err = run_cli(["evaluate", "--preset", run / "preset", "--input", train], capsys)
    assert code == 0, err
    assert json.loads(out[out.index("{"):])["accuracy"] == pytest.approx(metrics["dev"]["accuracy"])
    code, _, err = run_cli(["predict", "--preset", run / "preset", "--input", train, "--output", "p.jsonl"], capsys)
    assert code == 0, err
    records = [json.loads(line) for line in (workspace / "p.jsonl").read_text().splitlines()]
    assert [r["line"] for r in records] == [2, 3, 4, 5, 6]
    assert all(r["logits"][r["prediction"]] >= max(r["logits"]) - 1e-6 for r in records)


def test_ner_trains_evaluates_predicts(workspace, capsys):
    train = workspace / "train.txt"
    train.write_text(CONLL_TRAIN, encoding="utf-8")
    (workspace / "dev.txt").write_text(CONLL_TRAIN, encoding="utf-8")
    run = workspace / "runs" / "ner"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run_cli(README_NER, capsys)
    assert code == 0, err
    # The tagger reads the tokens, not the pooler: its missing gradient is no news to the user.
    assert not [w for w in caught if "Gradients do not exist" in str(w.message)]
    assert "Fine-tuning BertTokenClassifier" in out and "learning rate 5e-05" in out  # NER's default
    assert "train: 2 examples, fewer than one batch of 32: each epoch is one step on all of them." in out
    metrics = json.loads((run / "metrics.json").read_text())["dev"]
    assert metrics["num_gold"] == 4  # John, Paris, Mary Smith, London: whole spans
    predictions = [json.loads(line) for line in (run / "dev_predictions.jsonl").read_text().splitlines()]
    assert [len(p["tags"]) for p in predictions] == [5, 4]
    # Re-score the written predictions with the entity scorer: same figures.
    from keras_bert_app.data.conll import read_conll
    from keras_bert_app.evaluation.entity_f1 import entity_scores

    gold = read_conll(train).tags
    assert entity_scores(gold, [p["tags"] for p in predictions])["f1"] == pytest.approx(metrics["f1"])
    code, out, err = run_cli(["evaluate", "--preset", run / "preset", "--input", train], capsys)
    assert code == 0, err
    assert json.loads(out[out.index("{"):])["f1"] == pytest.approx(metrics["f1"])
    # The Python API gives the same scores and the same predictions file layout.
    assert kba.evaluate(run / "preset", train)["f1"] == pytest.approx(metrics["f1"])
    path = kba.predict(run / "preset", train, workspace / "tags.jsonl")
    assert [json.loads(line)["tags"] for line in path.read_text().splitlines()] == [p["tags"] for p in predictions]


@pytest.mark.large
def test_glue_mrpc(workspace, capsys):
    folder = workspace / "glue" / "MRPC"
    folder.mkdir(parents=True)
    rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
    rows += [f"{i % 2}\t{i}\t{i}\tThe cat sat {i}.\tA cat sat {i}." for i in range(6)]
    (folder / "train.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (folder / "dev.tsv").write_text("\n".join(rows[:4]) + "\n", encoding="utf-8")
    code, out, err = run_cli(README_GLUE, capsys)
    assert code == 0, err
    metrics = json.loads((workspace / "runs" / "mrpc" / "metrics.json").read_text())
    dev = metrics["dev"]
    assert set(dev) == {"accuracy", "f1", "examples"} and dev["examples"] == 3
    assert metrics["task"] == {"reader": "glue", "sequence_length": 128, "glue_task": "mrpc"}


@pytest.mark.parametrize(
    "train_text, dev_text, message",
    [
        ("text,label\nok,a\nfine\n", "text,label\nok,a\n", r"train.csv:3: expected 2 fields"),
        ("sentence,label\nok,a\n", "text,label\nok,a\n", r"train.csv:2: no column 'text'"),
        ("text,label\nok,a\nno,b\n", "text,label\nok,c\n", r"dev.csv:2: label 'c' is not one of \['a', 'b'\]"),
        ("text,label\nok,a\nno,b\n", "text,label\n", r"dev.csv: the dev set is empty"),
        # One class would silently build a one-output regressor.
        ("text,label\nok,a\nfine,a\n", "text,label\nok,a\n", r"train.csv: every training example has the label 'a'; a classifier needs at least 2 classes"),
        ("text,label\n", "text,label\nok,a\n", r"train.csv: the training set is empty"),
    ],
)
def test_classify_bad_input(tmp_path, tiny_preset, capsys, train_text, dev_text, message):
    (tmp_path / "train.csv").write_text(train_text, encoding="utf-8")
    (tmp_path / "dev.csv").write_text(dev_text, encoding="utf-8")
    code, _, err = run_cli(
        ["finetune", "classify", "--train", tmp_path / "train.csv", "--dev", tmp_path / "dev.csv",
         "--text-column", "text", "--label-column", "label", "--preset", tiny_preset,
         "--output", tmp_path / "run", *COMMON], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert re.search(message, err), err


def test_finetune_bad_arguments_raise_one_typed_error_naming_the_argument(tmp_path, tiny_preset):
    train = tmp_path / "train.csv"
    train.write_text("text,label\nok,a\nno,b\n", encoding="utf-8")
    good = {"train": train, "dev": train, "text_column": "text", "label_column": "label"}
    cases = [
        ("sentiment", tiny_preset, {}, errors.ArgumentError, "task"),
        (42, tiny_preset, {}, errors.ArgumentTypeError, "task"),
        ("classify", tiny_preset, {**good, "train": tmp_path / "missing.csv"}, errors.MissingFileError, "train"),
        ("classify", tiny_preset, {**good, "text_column": 0}, errors.ArgumentTypeError, "text_column"),
        ("classify", tiny_preset, {**good, "epochs": "3"}, errors.ArgumentTypeError, "epochs"),
        ("classify", tiny_preset, {**good, "batch_size": 0}, errors.ArgumentError, "batch_size"),
        ("classify", tiny_preset, {**good, "learning_rate": 0.0}, errors.ArgumentError, "learning_rate"),
        ("classify", tiny_preset, {**good, "validation_freq": 0}, errors.ArgumentError, "validation_freq"),
        ("classify", tiny_preset, {**good, "label_colum": "label"}, errors.ArgumentError, "label_colum"),
        ("classify", tiny_preset, {k: v for k, v in good.items() if k != "label_column"},
         errors.ArgumentError, "label_column"),
        ("classify", tmp_path / "no_preset", good, errors.MissingFileError, "preset"),
        ("classify", "bert_nonexistent_uncased", good, errors.ArgumentError, "preset"),
        ("glue", tiny_preset, {"glue_task": "MRPC", "data_dir": tmp_path / "nothing"}, errors.MissingFileError, "data_dir"),
        ("glue", tiny_preset, {"glue_task": "MRPQ", "data_dir": tmp_path}, errors.ArgumentError, "glue_task"),
        ("squad", tiny_preset, {"version": "3", "train": train, "dev": train}, errors.ArgumentError, "version"),
    ]
    for task, preset, options, error, argument in cases:
        with pytest.raises(error) as caught:
            kba.finetune(task, preset, tmp_path / "run", **options)
        assert caught.value.argument == argument, (task, options)
        assert len(str(caught.value).splitlines()) == 1
    assert not (tmp_path / "run").exists()  # nothing started


SCORED_ROWS = ["text,label"] + [
    f"{'good fine great' if i % 2 else 'bad awful poor'} day {i},{'pos' if i % 2 else 'neg'}" for i in range(16)
]
SCORED_OPTIONS = dict(epochs=2, batch_size=4, sequence_length=16, learning_rate=1e-3, seed=3)


@pytest.fixture(scope="module")
def python_run(tiny_preset, tmp_path_factory):
    """`kba.finetune("classify", ...)` in this process, 16 rows for 2 epochs, dev scored after each epoch: the
    reference of the `validation_freq` run and of the console script's."""
    folder = tmp_path_factory.mktemp("python_run")
    data = folder / "data.csv"
    data.write_text("\n".join(SCORED_ROWS) + "\n", encoding="utf-8")
    return kba.finetune("classify", tiny_preset, folder / "every", train=data, dev=data, text_column="text",
                        label_column="label", verbose=0, **SCORED_OPTIONS)


def test_validation_freq_skips_the_per_epoch_dev_passes_and_trains_the_same_weights(tmp_path, tiny_preset,
                                                                                    python_run):
    """`validation_freq=epochs` (the Chinese quickstart's later seeds): dev is scored during training after the last
    epoch only, and the run ends with the same weights and dev scores as with a dev pass after every epoch."""
    import csv

    import numpy as np

    data = python_run.output.parent / "data.csv"
    every = python_run
    last = kba.finetune("classify", tiny_preset, tmp_path / "last", train=data, dev=data, text_column="text",
                        label_column="label", verbose=0, validation_freq=2, **SCORED_OPTIONS)

    def history(run):
        with open(run.output / "logs" / "history.csv", newline="") as file:
            return list(csv.DictReader(file))

    every_rows, last_rows = history(every), history(last)
    assert len(every_rows) == len(last_rows) == 2
    assert all(row["val_loss"] not in ("", "NA", None) for row in every_rows)
    assert [row.get("val_loss") in ("", "NA", None) for row in last_rows] == [True, False]
    assert [row["loss"] for row in every_rows] == [row["loss"] for row in last_rows]
    assert every.metrics["dev"] == last.metrics["dev"]
    first, second = (kba.BertClassifier.from_preset(run.preset) for run in (every, last))
    assert len(first.get_weights()) == len(second.get_weights())
    for a, b in zip(first.get_weights(), second.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["finetune", "ner", "--train", "missing.txt", "--dev", "missing.txt"], r"train: missing.txt: no such file"),
        (["finetune", "swag", "--train", "t.csv", "--dev", "t.csv", "--num-choices", "1"], r"num_choices must be >= 2"),
        (["finetune", "ner", "--train", "t.csv", "--dev", "t.csv", "--epochs", "0"], r"epochs must be >= 1"),
        (["finetune", "glue", "--task", "MRPQ", "--data-dir", "."], r"glue_task \(--task\): Unknown GLUE task 'MRPQ'"),
        (["finetune", "classify", "--train", "t.csv", "--dev", "t.csv", "--text-column", "text",
          "--label-column", "label", "--labels", "a,a"], r"labels must be distinct names"),
    ],
)
def test_command_line_bad_arguments_give_one_line_and_exit_code_2(tmp_path, tiny_preset, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text("text,label\nok,a\n", encoding="utf-8")
    code, _, err = run_cli([*argv, "--preset", tiny_preset, "--output", "run"], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert re.search(message, err), err


def test_command_line_unknown_task_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main(["finetune", "sentiment", "--preset", "P", "--output", "run"])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'sentiment'" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "flags, expected", [([], "auto"), (["--jit-compile", "true"], True), (["--jit-compile", "false"], False)],
    ids=["default", "on", "off"],
)
def test_command_line_xla_flags_reach_the_stage_function(monkeypatch, flags, expected):
    """`--jit-compile` is Keras' `jit_compile`: "auto" (Keras decides), True or False."""
    from keras_bert_app.training import finetune as stage

    seen = {}
    monkeypatch.setattr(stage, "finetune", lambda *args, **kwargs: seen.update(kwargs))
    argv = ["finetune", "classify", "--train", "t.csv", "--dev", "t.csv", "--text-column", "text", "--label-column",
            "label", "--preset", "P", "--output", "run"]
    assert cli.main(argv + flags) == 0
    assert seen["jit_compile"] == expected
    with pytest.raises(SystemExit):
        cli.main(argv + ["--jit-compile", "yes"])


def test_the_console_script_and_the_python_call_give_the_same_figures(tmp_path, tiny_preset, python_run):
    """`keras-bert-app finetune` in a process of its own and `kba.finetune` in this one run the same kernels on the
    same data: the same per-epoch history and dev figures (the process sets nothing of its own)."""
    import csv
    import os
    import subprocess
    import sys
    import sysconfig

    data = python_run.output.parent / "data.csv"
    argv = ["finetune", "classify", "--train", data, "--dev", data, "--text-column", "text", "--label-column",
            "label", "--preset", tiny_preset, "--output", tmp_path / "cli"]
    for name, value in SCORED_OPTIONS.items():
        argv += [f"--{name.replace('_', '-')}", value]
    script = os.path.join(sysconfig.get_path("scripts"), "keras-bert-app")
    command = [script] if os.path.exists(script) else [sys.executable, "-m", "keras_bert_app.commands.main"]
    result = subprocess.run([*command, *map(str, argv)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]

    def figures(folder):
        with open(folder / "logs" / "history.csv", newline="") as file:
            history = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(file)]
        return history, json.loads((folder / "metrics.json").read_text())["dev"]

    (cli_history, cli_dev), (python_history, python_dev) = figures(tmp_path / "cli"), figures(python_run.output)
    assert len(cli_history) == len(python_history) == 2
    for ours, theirs in zip(cli_history, python_history):
        assert ours == pytest.approx(theirs, rel=1e-6, abs=1e-7)
    assert cli_dev == pytest.approx(python_dev, rel=1e-6, abs=1e-7)
