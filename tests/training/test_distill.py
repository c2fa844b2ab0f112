"""`keras-bert-app distill` through the entry point: a run folder that `predict`, `evaluate` and `export` take
unchanged, each kind of student, and one line for each kind of bad input."""

import json
import pathlib
import random
import re
import shlex

import pytest

from keras_bert_app import cli
from tests.tasks.tiny_presets import SPECIALS, write_tiny_preset
from tests.test_readme_commands import file_commands

GUIDE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "guides" / "distillation.md"

TRAINING = ["--epochs", "1", "--batch-size", "8", "--sequence-length", "16", "--learning-rate", "1e-3"]
WORDS = {"sport": "goal match team won league cup", "tech": "computer software phone internet chip data"}


def _main(*argv):
    return cli.main([str(arg) for arg in argv])


def _one_line_error(capsys, *fragments):
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "Traceback" not in error, error
    for fragment in fragments:
        assert fragment in error, error


def _rows(count, seed, scores=False):
    rng = random.Random(seed)
    rows = ["text,label"]
    for _ in range(count):
        label = rng.choice(sorted(WORDS))
        text = " ".join(rng.choices(WORDS[label].split(), k=5))
        rows.append(f"{text},{(1.5 if label == 'sport' else -0.5) if scores else label}")
    return "\n".join(rows) + "\n"


@pytest.fixture(scope="module")
def teacher_run(tmp_path_factory, shared_data):
    """Data, a 5-layer preset with the real uncased vocabulary and a classify teacher fine-tuned on it."""
    folder = tmp_path_factory.mktemp("distill")
    preset = write_tiny_preset(folder / "P", shared_data / "vocab" / "bert_uncased_vocab.txt",
                               max_sequence_length=32, num_layers=5)
    (folder / "train.csv").write_text(_rows(32, 0), encoding="utf-8")
    (folder / "dev.csv").write_text(_rows(12, 1), encoding="utf-8")
    (folder / "scores.csv").write_text(_rows(24, 2, scores=True), encoding="utf-8")
    (folder / "unlabeled.txt").write_text("goal team match cup\n\ncomputer chip data phone\nwon league goal\n",
                                          encoding="utf-8")
    assert _main("finetune", "classify", "--train", folder / "train.csv", "--dev", folder / "dev.csv",
                 "--text-column", "text", "--label-column", "label", "--preset", preset,
                 "--output", folder / "teacher", *TRAINING) == 0
    return folder


def test_distilled_run_folder_is_one_that_predict_evaluate_and_export_take(teacher_run, tmp_path, capsys):
    data = teacher_run
    run = tmp_path / "student"
    assert _main("distill", "--teacher", data / "teacher", "--student-layers", "0,2,4", "--train", data / "train.csv",
                 "--dev", data / "dev.csv", "--unlabeled", data / "unlabeled.txt", "--temperature", "3",
                 "--output", run, *TRAINING) == 0
    out = capsys.readouterr().out
    assert "labelled 35 examples" in out  # 32 labelled + 3 lines of the transfer set (the blank one skipped)
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["task"]["reader"] == "classify" and metrics["dev"]["examples"] == 12
    assert metrics["distillation"]["unlabeled_examples"] == 3 and metrics["distillation"]["temperature"] == 3.0
    assert metrics["distillation"]["parameters"] < metrics["teacher"]["parameters"]
    assert set(metrics["teacher"]["dev"]) == {"accuracy", "f1"}
    config = json.loads((run / "preset" / "config.json").read_text())
    assert config["encoder"]["num_layers"] == 3 and config["task"]["label_names"] == ["sport", "tech"]
    assert (run / "logs" / "history.csv").is_file() and (run / "dev_predictions.jsonl").is_file()

    assert _main("evaluate", "--preset", run, "--input", data / "dev.csv") == 0
    scores = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert scores["accuracy"] == pytest.approx(metrics["dev"]["accuracy"]) and scores["examples"] == 12
    assert _main("predict", "--preset", run, "--input", data / "dev.csv", "--output", tmp_path / "p.jsonl") == 0
    predictions = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert len(predictions) == 12 and {p["prediction"] for p in predictions} <= {"sport", "tech"}
    assert _main("export", "--model", run, "--output", tmp_path / "served") == 0
    assert list((tmp_path / "served").glob("*/saved_model.pb"))


def test_a_student_preset_and_a_regression_teacher_with_a_random_student(teacher_run, tmp_path, capsys):
    data = teacher_run
    assert _main("distill", "--teacher", data / "teacher" / "preset", "--student", data / "P", "--train",
                 data / "train.csv", "--dev", data / "dev.csv", "--hard-label-weight", "1",
                 "--output", tmp_path / "from_preset", *TRAINING) == 0
    metrics = json.loads((tmp_path / "from_preset" / "metrics.json").read_text())
    assert metrics["distillation"]["student"] == f"the student preset {data / 'P'}"
    assert metrics["distillation"]["unlabeled_examples"] == 0

    assert _main("finetune", "classify", "--train", data / "scores.csv", "--dev", data / "scores.csv",
                 "--text-column", "text", "--label-column", "label", "--regression", "--preset", data / "P",
                 "--output", tmp_path / "regressor", *TRAINING) == 0
    run = tmp_path / "small"
    assert _main("distill", "--teacher", tmp_path / "regressor", "--student-size", "1x64", "--train",
                 data / "scores.csv", "--dev", data / "scores.csv", "--unlabeled", data / "unlabeled.txt",
                 "--output", run, *TRAINING) == 0
    metrics = json.loads((run / "metrics.json").read_text())
    assert set(metrics["dev"]) == {"pearson", "spearman", "examples"} and metrics["task"]["regression"] is True
    config = json.loads((run / "preset" / "config.json").read_text())
    assert (config["encoder"]["num_layers"], config["encoder"]["hidden_dim"], config["encoder"]["num_heads"]) == (1, 64, 1)
    assert _main("evaluate", "--preset", run, "--input", data / "scores.csv") == 0


def test_bad_input_gives_one_line(teacher_run, tmp_path, capsys):
    data = teacher_run
    base = ["distill", "--teacher", data / "teacher", "--dev", data / "dev.csv", "--output", tmp_path / "x", *TRAINING]
    layers = ["--student-layers", "0,1"]

    (tmp_path / "other.csv").write_text("text,label\ngoal match,sport\nstock market,business\n", encoding="utf-8")
    assert _main(*base, *layers, "--train", tmp_path / "other.csv") == 2
    _one_line_error(capsys, "labels ['business'] are not the teacher's", "['sport', 'tech']")

    other = write_tiny_preset(tmp_path / "other_vocabulary", [*SPECIALS, "goal", "match", "chip"], num_layers=1)
    assert _main(*base, "--student", other, "--train", data / "train.csv") == 2
    _one_line_error(capsys, "tokenizes differently from the teacher")

    assert _main(*base, "--student-layers", "0,5", "--train", data / "train.csv") == 2
    _one_line_error(capsys, "student_layers [5] out of range", "the teacher has 5 layers, 0 to 4")

    (tmp_path / "empty.txt").write_text("\n  \n", encoding="utf-8")
    assert _main(*base, *layers, "--train", data / "train.csv", "--unlabeled", tmp_path / "empty.txt") == 2
    _one_line_error(capsys, "empty.txt: no text in the unlabelled file")
    (tmp_path / "model.bin").write_bytes(b"goal match\n\x00\x01\x02\xff")
    assert _main(*base, *layers, "--train", data / "train.csv", "--unlabeled", tmp_path / "model.bin") == 2
    _one_line_error(capsys, "model.bin:2: a NUL byte: a binary file")

    for temperature in ("0", "-1"):
        assert _main(*base, *layers, "--train", data / "train.csv", "--temperature", temperature) == 2
        _one_line_error(capsys, "temperature")
    assert _main(*base, *layers, "--train", data / "train.csv", "--hidden-state-weight", "-1") == 2
    _one_line_error(capsys, "hidden_state_weight")
    assert not (tmp_path / "x").exists()  # every refusal came before anything was written


def test_exactly_one_student_kind_is_required(teacher_run, tmp_path, capsys):
    import keras_bert_app as kba
    from keras_bert_app import errors

    with pytest.raises(errors.ArgumentError, match="exactly one of student"):
        kba.distill(teacher_run / "teacher", tmp_path / "x", train=teacher_run / "train.csv",
                    dev=teacher_run / "dev.csv")
    with pytest.raises(errors.ArgumentError, match="LAYERSxHIDDEN"):
        kba.distill(teacher_run / "teacher", tmp_path / "x", train=teacher_run / "train.csv",
                    dev=teacher_run / "dev.csv", student_size="3x100")


def test_the_guides_commands_and_python_run_as_written(teacher_run, tmp_path, monkeypatch, capsys):
    """docs/guides/distillation.md: every command in order (training shortened), then its Python block."""
    for name in ("train.csv", "dev.csv"):
        (tmp_path / name).write_text((teacher_run / name).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "sentences.txt").write_text((teacher_run / "unlabeled.txt").read_text(encoding="utf-8"),
                                            encoding="utf-8")
    (tmp_path / "P").symlink_to(teacher_run / "P", target_is_directory=True)
    (tmp_path / "runs" / "mini").mkdir(parents=True)
    (tmp_path / "runs" / "mini" / "preset").symlink_to(teacher_run / "P", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    commands = file_commands(GUIDE)
    assert [command.split()[1] for command in commands] == [
        "finetune", "distill", "distill", "distill", "evaluate", "export"]
    for command in commands:
        argv = shlex.split(command)[1:]
        if argv[0] in ("finetune", "distill"):
            argv += TRAINING
        assert cli.main(argv) == 0, (command, capsys.readouterr().err)
    metrics = json.loads((tmp_path / "runs" / "topics-small" / "metrics.json").read_text())
    assert metrics["distillation"]["student"] == "teacher layers 0,2,4"
    assert list((tmp_path / "served" / "topics-small").glob("*/saved_model.pb"))

    (python,) = re.findall(r"^```python\n(.*?)^```", GUIDE.read_text(encoding="utf-8"), re.S | re.M)
    capsys.readouterr()
    exec(compile(python, str(GUIDE), "exec"), {})
    assert (tmp_path / "runs" / "topics-small-py" / "preset" / "config.json").is_file()
    assert len(capsys.readouterr().out.strip().splitlines()[-1].split()) == 2


def test_a_teacher_cache_gives_the_same_logits_without_running_the_teacher_again(teacher_run, tmp_path, capsys):
    data = teacher_run
    cache = tmp_path / "cache"
    common = ["--teacher", data / "teacher", "--student-size", "1x64", "--train", data / "train.csv", "--dev",
              data / "dev.csv", "--unlabeled", data / "unlabeled.txt", "--teacher-cache", cache, *TRAINING]
    assert _main("distill", *common, "--output", tmp_path / "first") == 0
    assert "labelled 35 examples in" in capsys.readouterr().out
    stored = list(cache.glob("teacher-*.npz"))
    assert len(stored) == 1
    assert _main("distill", *common, "--output", tmp_path / "second") == 0
    assert "labelled 35 examples (cached)" in capsys.readouterr().out
    first, second = (json.loads((tmp_path / name / "metrics.json").read_text()) for name in ("first", "second"))
    assert second["distillation"]["teacher_cached"] and not first["distillation"]["teacher_cached"]
    assert first["teacher"]["dev"] == second["teacher"]["dev"] and first["dev"] == second["dev"]
    # Other texts are another key: the teacher runs again, and the cache keeps both.
    without_transfer = [arg for arg in common if arg not in ("--unlabeled", data / "unlabeled.txt")]
    assert _main("distill", *without_transfer, "--output", tmp_path / "third") == 0
    assert "labelled 32 examples in" in capsys.readouterr().out
    assert len(list(cache.glob("teacher-*.npz"))) == 2


def test_hidden_state_matching_trains_a_narrower_student_that_predict_and_evaluate_take(teacher_run, tmp_path, capsys):
    data = teacher_run
    run = tmp_path / "matched"
    assert _main("distill", "--teacher", data / "teacher", "--student-size", "1x64", "--hidden-state-weight", "2",
                 "--train", data / "train.csv", "--dev", data / "dev.csv", "--unlabeled", data / "unlabeled.txt",
                 "--output", run, *TRAINING) == 0
    assert "hidden-state weight 2." in capsys.readouterr().out
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["distillation"]["hidden_state_weight"] == 2.0
    config = json.loads((run / "preset" / "config.json").read_text())
    assert config["encoder"]["hidden_dim"] == 64  # the teacher's 16 through the learned projection
    assert _main("evaluate", "--preset", run, "--input", data / "dev.csv") == 0
    scores = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert scores["accuracy"] == pytest.approx(metrics["dev"]["accuracy"])
