"""`keras-bert-app study objectives` / `kba.study_objectives`: equal-time plan, one row per arm, parameters, bad input.

The fast tests run the study through `cli.main` on a tiny made-up
quickstart folder, with the real record sets, presets and parameter counts
but stand-ins for the pretraining, fine-tuning and probe runs (their own
tests are the pretraining's, fine-tuning's and the probe's); the large test
runs everything for real, the child processes included.
"""

import csv
import json
import pathlib

import keras
import pytest

from keras_bert_app import cli, errors
from keras_bert_app.demo import objectives_study, objectives_study_runs
from keras_bert_app.demo.objectives_study_settings import ARMS
from tests.tasks.tiny_presets import SPECIALS, write_tiny_preset

TOPICS = {
    "sport": "team match goal coach player season win cup league final",
    "money": "bank rate price market share profit loss trade deal firm",
    "film": "actor movie award star show music band song stage festival",
}
# Fake step times of the stand-in pretraining (seconds per step): the plan must follow them.
STEP_TIMES = {"mlm_nsp": 0.5, "mlm": 0.45, "mlm_sop": 0.4, "electra": 0.8}


def _sentence(rng, words):
    return " ".join(rng.choice(words, 6)).capitalize() + "."


@pytest.fixture(scope="module")
def quickstart_run(tmp_path_factory):
    """A tiny folder with the parts of a quickstart run the study reads (H=128 like the quickstart's encoder)."""
    import numpy as np

    from keras_bert_app.data.create_pretraining_data import create_pretraining_data

    folder = tmp_path_factory.mktemp("quickstart_run")
    data = folder / "data"
    data.mkdir()
    rng = np.random.default_rng(0)
    words = {topic: text.split() for topic, text in TOPICS.items()}
    documents = [[_sentence(rng, words[topic]) for _ in range(4)] for topic in TOPICS for _ in range(6)]
    (data / "corpus.txt").write_text("\n\n".join("\n".join(document) for document in documents) + "\n")
    for name, count in (("labeled", 4), ("dev", 2)):
        with (data / f"{name}.csv").open("w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["text", "label"])
            writer.writerows((" ".join(_sentence(rng, words[topic]) for _ in range(2)), topic)
                             for topic in TOPICS for _ in range(count))
    vocabulary = SPECIALS + sorted({word for text in TOPICS.values() for word in text.split()}) + ["."]
    write_tiny_preset(folder / "model_preset", vocabulary, num_layers=2, hidden_dim=128)
    create_pretraining_data(data / "corpus.txt", folder / "pretraining_data", str(folder / "model_preset" / "vocab.txt"),
                            max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1, seed=0, progress=False)
    settings = {"preset": "bert_tiny_uncased", "seed": 0, "sequence_length": 32, "batch_size": 4, "dupe_factor": 1,
                "finetune_epochs": 1, "labeled_articles": 12, "vocab_size": 0}
    (folder / "quickstart.json").write_text(json.dumps(settings))
    return folder


@pytest.fixture
def stand_ins(monkeypatch):
    """Stand-ins for the runs: pretraining writes metrics at STEP_TIMES and keeps the initial weights."""
    import shutil

    calls = []

    def pretrain_arm(objective, preset, records, run_dir, steps, recipe, *, checkpoint_every=None, log=None, **_):
        calls.append(("pretrain", objective, records, steps))
        run_dir = pathlib.Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        tokens_per_second = recipe.tokens_per_step / STEP_TIMES[objective]
        rows = steps // (checkpoint_every or objectives_study_runs.metric_rows_every(steps))
        (run_dir / "metrics.csv").write_text("epoch,loss,mlm_accuracy,tokens_per_second\n" + "".join(
            f"{row},1.0,0.25,{tokens_per_second * (3 if row == 0 else 1)}\n" for row in range(rows)))
        shutil.copytree(preset, run_dir / "preset", dirs_exist_ok=True)
        return run_dir

    def pretrain_in_child(arguments, log=print):
        pretrain_arm(**{**arguments, "recipe": objectives_study_runs.Recipe(**arguments["recipe"])})
        return {"seconds": 12.5, "peak_rss_mib": 900.0}

    def finetune_accuracy(preset, data, run_dir, seed, recipe, log=print):
        calls.append(("finetune", str(preset), seed))
        return 0.5 + 0.1 * ("electra" in str(preset)) + 0.01 * seed

    def probe_accuracies(preset, tokenizer_preset, data, sequence_length, log=print):
        calls.append(("probe", str(preset)))
        return {"cls": 0.4, "mean": 0.45}

    for function in (pretrain_arm, pretrain_in_child, finetune_accuracy, probe_accuracies):
        monkeypatch.setattr(objectives_study_runs, function.__name__, function)
    return calls


def test_study_plans_equal_time_and_reports_one_row_per_arm(quickstart_run, stand_ins, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    output = tmp_path / "study"
    argv = ["study", "objectives", "--output", str(output), "--quickstart-run", str(quickstart_run),
            "--minutes", "0.5", "--seeds", "0,1", "--calibration-steps", "8"]
    assert cli.main(argv) == 0
    results = json.loads((output / "results.json").read_text())
    # Equal time: each arm's measured step time (the first row, the compilation's, is left out) sets its steps.
    for arm, spec in ARMS.items():
        assert results["calibration"][arm] == pytest.approx(STEP_TIMES[spec.objective])
        steps = results[f"pretrain_{arm}"]["steps"]
        assert steps == objectives_study.equal_time_steps(30, STEP_TIMES[spec.objective]) == round(30 / STEP_TIMES[spec.objective] / 10) * 10
    assert "Plan: 0.5 min of pretraining each: bert 0.500 s/step -> 60 steps" in capsys.readouterr().out
    # Each objective read records of its own pairing, made from the same corpus.
    pretrained = {call[1]: call[2] for call in stand_ins if call[0] == "pretrain" and call[3] != 8}  # 8: timing runs
    assert pretrained["mlm_nsp"] == str(quickstart_run / "pretraining_data" / "*.tfrecord")
    for objective, pairing in (("mlm", "full_sentences"), ("mlm_sop", "sop")):
        summary = json.loads((output / "records" / pairing / "pretraining_data.json").read_text())
        assert summary["pairing"] == pairing and pretrained[objective] == str(output / "records" / pairing / "*.tfrecord")
    # Parameters: ALBERT-style shares one layer's weights over both layers (E = H = 128: no factorisation).
    parameters = {arm: results[f"pretrain_{arm}"]["parameters"] for arm in ARMS}
    assert parameters["roberta"]["encoder"] == parameters["bert"]["encoder"] == results["parameters_random"]["encoder"]
    layer = parameters["bert"]["encoder"] - parameters["albert"]["encoder"]
    assert layer == 4 * (128 * 128 + 128) + 2 * (128 * 256) + 256 + 128 + 2 * 2 * 128  # attention, FFN, 2 LayerNorms
    assert parameters["electra"]["pretrainer"] > parameters["electra"]["encoder"] == parameters["bert"]["encoder"]
    assert parameters["bert"]["pretrainer"] > parameters["roberta"]["pretrainer"]  # the NSP head
    # The report: one row per arm and the random encoder; the reading names the winner and the gap.
    report = (output / "report.md").read_text()
    rows = [line for line in report.splitlines() if line.startswith("| ") and not line.startswith("| encoder")]
    assert [row.split(" | ")[0] for row in rows] == ["| BERT", "| RoBERTa-style", "| ALBERT-style", "| ELECTRA",
                                                      "| random init"]
    assert "| 0.605 ± 0.007 |" in rows[3] and "| 900 MiB |" in rows[0]
    assert "| 60 | 0.500 s / 0.500 s | 0.5 min | 0.2 min |" in rows[0]  # steps, step times, training, process
    assert "ELECTRA leads BERT by 10.0 points, beyond the larger seed spread (0.007)" in report
    assert (output / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # A rerun continues: nothing is run again.
    done = len(stand_ins)
    assert cli.main(argv) == 0
    assert len(stand_ins) == done


@pytest.mark.parametrize(
    "options, message",
    [
        (["--objectives", "bert,xlnet"], "objectives must be one of"),
        (["--minutes", "0"], "minutes must be > 0"),
        (["--seeds", "0,x"], "--seeds must be comma-separated integers"),
        (["--quickstart-run", "{missing}"], "not a finished quickstart folder, it lacks quickstart.json"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, options, message):
    (tmp_path / "missing" / "data").mkdir(parents=True)
    options = [option.format(missing=tmp_path / "missing") for option in options]
    assert cli.main(["study", "objectives", "--output", str(tmp_path / "study"), *options]) == 2
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1
    assert not (tmp_path / "study").exists()


def test_other_settings_in_the_output_are_refused(quickstart_run, tmp_path):
    output = tmp_path / "study"
    output.mkdir()
    (output / "results.json").write_text(json.dumps({"settings": {"minutes": 9}}))
    with pytest.raises(errors.OutputExistsError, match="other settings"):
        objectives_study.study_objectives(output, quickstart_run=quickstart_run, log=lambda line: None)


def test_peak_memory_is_the_child_process_own(tmp_path):
    # On Linux `ru_maxrss` carries the parent's peak into a child over fork and exec; the study reads the child's own.
    import subprocess
    import sys

    ballast = bytearray(400 * 2**20)  # the parent's peak: above 400 MiB
    ballast[:: 4096] = b"x" * len(ballast[:: 4096])
    code = "from keras_bert_app.demo.objectives_study_runs import peak_resident_mib; print(peak_resident_mib())"
    child = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert 5 < child < 300 < objectives_study_runs.peak_resident_mib()
    del ballast


def test_the_public_name_is_the_stage_function():
    import keras_bert_app as kba

    assert kba.study_objectives is objectives_study.study_objectives


@pytest.mark.large
@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="runs once, on the TensorFlow backend")
def test_tiny_study_end_to_end(quickstart_run, tmp_path):
    pytest.importorskip("matplotlib")
    output = tmp_path / "study"
    argv = ["study", "objectives", "--output", str(output), "--quickstart-run", str(quickstart_run),
            "--minutes", "0.01", "--seeds", "0", "--calibration-steps", "8"]
    assert cli.main(argv) == 0
    results = json.loads((output / "results.json").read_text())
    for arm in ARMS:
        run = results[f"pretrain_{arm}"]
        assert run["steps"] == objectives_study.equal_time_steps(0.6, results["calibration"][arm])
        assert run["peak_rss_mib"] > 100  # a whole Python process with the backend
        assert json.loads((output / "pretrain" / arm / "run_config.json").read_text())["objective"] == ARMS[arm].objective
        assert 0 <= results[f"finetune_{arm}_0"] <= 1 and set(results[f"probe_{arm}"]) == {"cls", "mean"}
    assert "generator_mlm_accuracy" in results["pretrain_electra"]["final"]
    assert results["pretrain_albert"]["parameters"]["encoder"] < results["pretrain_bert"]["parameters"]["encoder"]
    assert (output / "report.md").read_text().count("\n| ") == 6  # header + 4 arms + random init


@pytest.mark.parametrize("bias", [None, "zeros"])
def test_an_arm_passes_its_output_bias_to_pretrain(monkeypatch, tmp_path, bias):
    """The study's arms start the masked-LM bias at the unigram frequencies; `electra_vs_bert` can ask for zeros."""
    from keras_bert_app.training import pretrain as training_pretrain

    seen = {}
    monkeypatch.setattr(training_pretrain, "pretrain", lambda *args, **kwargs: seen.update(kwargs) or tmp_path)
    extra = {} if bias is None else {"output_bias_init": bias}
    objectives_study_runs.pretrain_arm(
        "electra", "preset", "records/*.tfrecord", tmp_path, 8, objectives_study_runs.Recipe(), log=None, **extra
    )
    assert seen["output_bias_init"] == (bias or "unigram")
    assert seen["objective"] == "electra"
