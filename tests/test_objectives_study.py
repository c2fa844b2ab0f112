"""`keras-bert-app study objectives` / `kba.study_objectives`: equal-FLOPs plan, each arm's data, one row per arm, bad input.

The fast tests run the study through `cli.main` on a tiny made-up
quickstart folder, with the real record sets, presets and parameter counts
but stand-ins for the pretraining, fine-tuning and probe runs (their own
tests are the pretraining's, fine-tuning's and the probe's); the large test
runs everything for real, the child processes included.
"""

import csv
import json
import pathlib
import time

import keras
import numpy as np
import pytest

from keras_bert_app import cli, errors
from keras_bert_app.demo import objectives_study, objectives_study_inputs, objectives_study_runs
from keras_bert_app.demo.objectives_study_settings import ARMS, STUDY_VERSION
from tests.tasks.tiny_presets import SPECIALS, write_tiny_preset

TOPICS = {
    "sport": "team match goal coach player season win cup league final",
    "money": "bank rate price market share profit loss trade deal firm",
    "film": "actor movie award star show music band song stage festival",
}


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
    """Stand-ins for the runs: pretraining writes metrics and keeps the initial weights; the held-out metrics
    depend on the rate (masked-LM loss lowest at 1e-3, ELECTRA's AUC highest at 3e-3) and the pretraining seed."""
    import shutil

    calls = []

    def pretrain_arm(objective, preset, data, run_dir, steps, recipe, *, source="records", pairing=None,
                     checkpoint_every=None, log=None, learning_rate=None, options=None, **_):
        calls.append(("pretrain", objective, data, steps, source, pairing, learning_rate, options or {}, recipe.seed,
                      str(preset), str(run_dir)))
        run_dir = pathlib.Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "metrics.csv").write_text("epoch,loss,mlm_accuracy\n0,1.0,0.25\n")
        shutil.copytree(preset, run_dir / "preset", dirs_exist_ok=True)
        (run_dir / "preset" / "rate.txt").write_text(f"{learning_rate} {objective}")
        return run_dir

    def context_check(objective, preset, texts_file, sequence_length, log=print):
        rate, _ = (pathlib.Path(preset) / "rate.txt").read_text().split()
        calls.append(("context", objective, str(preset), texts_file))
        rate = float(rate)
        if objective == "electra":
            return {"detects_fakes": {3e-3: 0.9}.get(rate, 0.85), "masked_accuracy": 0.1, "slots": 2000,
                    "prefers_true": 0.6, "frequency_accuracy": 0.05}
        if objective == "ltr":
            return {"next_token_loss": {3e-3: 5.0}.get(rate, 6.0), "next_token_accuracy": 0.04,
                    "frequency_accuracy": 0.05, "frequency_loss": 7.0, "slots": 5000}
        return {"masked_loss": {1e-3: 4.0}.get(rate, 5.0), "masked_accuracy": 0.2, "frequency_accuracy": 0.05,
                "frequency_loss": 7.0, "prefers_true": 0.7, "slots": 2000}

    def finetune_accuracy(preset, task, run_dir, seed, recipe, log=print):
        calls.append(("finetune", str(preset), seed, task))
        return 0.5 + 0.2 * ("electra" in str(preset)) + 0.01 * seed

    def probe_accuracies(preset, tokenizer_preset, task, sequence_length, log=print):
        calls.append(("probe", str(preset)))
        return {"cls": 0.9 if "pretrain" in str(preset) else 0.5, "mean": 0.45, "dev_size": 400}

    for function in (pretrain_arm, finetune_accuracy, probe_accuracies, context_check):
        monkeypatch.setattr(objectives_study_runs, function.__name__, function)
    return calls


ARGV = ["--budget-steps", "100", "--seeds", "0,1", "--pretraining-seeds", "3,4", "--learning-rates", "0.001,0.003",
        "--objectives", "bert,ltr,mask_100_0_0,albert,electra"]


def test_study_sweeps_one_grid_selects_on_heldout_metrics_and_replicates(quickstart_run, stand_ins, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from keras_bert_app.benchmark.flops import model_flops
    from keras_bert_app.models.electra_generator import generator_config

    output = tmp_path / "study"
    argv = ["study", "objectives", "--output", str(output), "--quickstart-run", str(quickstart_run), *ARGV]
    assert cli.main(argv) == 0
    results = json.loads((output / "results.json").read_text())
    runs = results["pretraining"]
    # Equal FLOPs (the bench's model): ELECTRA's generator makes its steps costlier, so it runs fewer of them.
    encoder = json.loads((quickstart_run / "model_preset" / "config.json").read_text())["encoder"]
    batch = objectives_study.PRETRAIN_BATCH_SIZE
    bert_step = model_flops(encoder, batch, 32, training=True)
    electra_step = bert_step + model_flops(generator_config(encoder), batch, 32, training=True)
    assert runs["bert_seed3_lr0.001"]["steps"] == runs["mask_100_0_0_seed4_lr0.001"]["steps"] == 100
    assert runs["electra_seed3_lr0.003"]["steps"] == objectives_study_inputs.equal_flops_steps(100 * bert_step,
                                                                                       electra_step) < 100
    assert "Plan at equal pretraining FLOPs" in capsys.readouterr().out
    # The sweep: every arm at every rate on the first pretraining seed; the second seed at the selected rate only.
    arms = ["bert", "ltr", "mask_100_0_0", "albert", "electra"]
    assert sorted(runs) == sorted([f"{arm}_seed3_lr{rate}" for arm in arms for rate in ("0.001", "0.003")]
                                  + [f"{arm}_seed4_lr{results['selected'][arm]['learning_rate']:g}" for arm in arms])
    assert all(run["pretraining_seed"] == int(key.split("_seed")[1][0]) for key, run in runs.items())
    # Each arm's rate by its own held-out metric: masked-LM loss (lowest), ELECTRA's AUC and LTR's loss.
    assert {arm: value["learning_rate"] for arm, value in results["selected"].items()} == {
        "bert": 1e-3, "ltr": 3e-3, "mask_100_0_0": 1e-3, "albert": 1e-3, "electra": 3e-3}
    assert results["selected"]["electra"]["metric"] == "detects_fakes"
    # Each arm's data, optimizer and masking; the pretraining seed reaches the run; fresh weights per seed.
    pretrained = [call for call in stand_ins if call[0] == "pretrain"]
    by_objective = {call[1]: call for call in pretrained}
    corpus = str(quickstart_run / "data" / "corpus.txt")
    assert by_objective["mlm_nsp"][2] == str(quickstart_run / "pretraining_data" / "*.tfrecord")
    assert by_objective["mlm_sop"][2] == str(output / "records" / "sop" / "*.tfrecord")
    assert by_objective["mlm_sop"][7] == {"optimizer": "lamb"}
    assert by_objective["ltr"][2:6:2] == (corpus, "corpus")
    options = {call[7].get("corruption") for call in pretrained if call[1] == "mlm"}
    assert options == {(1.0, 0.0)}
    assert all(call[7]["adam_beta2"] == 0.98 and call[7]["adam_epsilon"] == 1e-6 for call in pretrained
               if call[1] == "mlm")
    assert {call[8] for call in pretrained} == {3, 4}
    assert {call[9].rsplit("/", 1)[1] for call in pretrained} == {"bert_seed3", "bert_seed4", "albert_seed3",
                                                                  "albert_seed4"}
    # ALBERT-style: E=64 < H=128 (the factorisation) and one set of layer weights.
    config = json.loads((output / "presets" / "albert_seed3" / "config.json").read_text())["encoder"]
    assert (config["embedding_dim"], config["hidden_dim"], config["num_groups"]) == (64, 128, 1)
    assert results["parameters"]["albert"]["encoder"] < results["parameters"]["bert"]["encoder"]
    # The task: topics with real labels, few per topic; its baselines; every encoder fine-tuned per both seeds.
    task = output / "task"
    train = list(csv.DictReader((task / "train.csv").open()))
    assert sorted(row["label"] for row in train) == sorted(sorted(TOPICS) * 4)  # the fixture has 4 labelled articles a topic
    assert set(results["baselines"]) == {"majority", "bag_of_words", "surface", "dev_size"}
    assert len(results["finetune"]) == (len(arms) + 1) * 2 * 2 and len(results["probe"]) == (len(arms) + 1) * 2
    # The report: one row per arm, random init and the three baselines, every row under its own columns.
    report = (output / "report.md").read_text()
    rows = [line for line in report.split("## ")[1 if report.startswith("## ") else 0].splitlines()
            if line.startswith("| ") and not line.startswith("| encoder")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| BERT", "| LTR & No NSP", "| Masking 100/0/0", "| ALBERT-style", "| ELECTRA",
        "| random init", "| majority class", "| bag of words", "| surface features"]
    header = next(line for line in report.splitlines() if line.startswith("| encoder"))
    assert {row.count(" | ") for row in rows} == {header.count(" | ")}
    # LTR's top-1 is below the unigram baseline: it did not train, and gets no ranking or direction.
    assert "did not train: no ranking" in rows[1] and "did not train" not in rows[0]
    assert "no verdict" not in report.split("Bidirectional")[0]
    assert "Runtime:" in report and (output / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # A rerun continues: nothing is run again; the runtime adds up over the calls.
    done, first = len(stand_ins), results["runtime_seconds"]
    assert cli.main(argv) == 0
    assert len(stand_ins) == done
    results = json.loads((output / "results.json").read_text())
    assert len(results["call_seconds"]) == 2 and results["runtime_seconds"] == pytest.approx(
        first + results["call_seconds"][1], abs=0.11)


def _results(finetune, heldout=None, probe_mean=None, baselines=None):
    """A finished study's results as the report reads them: arms -> fine-tuned values (2 x 3 runs)."""
    results = {"settings": {"budget_steps": 100, "learning_rates": [1e-3]}, "selected": {}, "pretraining": {},
               "finetune": {}, "probe": {},
               "baselines": baselines or {"majority": 0.2, "bag_of_words": 0.5, "surface": 0.3, "dev_size": 250}}
    for name, values in finetune.items():
        for p in (0, 1):
            results["probe"][f"{name}_p{p}"] = {"cls": 0.5, "mean": (probe_mean or {}).get(name, 0.5),
                                                "dev_size": 250}
            for f in (0, 1, 2):
                results["finetune"][f"{name}_p{p}_f{f}"] = values[3 * p + f]
            if name != "random":
                results["pretraining"][f"{name}_seed{p}_lr0.001"] = {
                    "arm": name, "pretraining_seed": p, "learning_rate": 1e-3, "steps": 100,
                    "heldout": (heldout or {}).get(name, {"masked_loss": 4.0, "masked_accuracy": 0.2,
                                                          "frequency_accuracy": 0.05, "frequency_loss": 7.0,
                                                          "slots": 2000})}
        if name != "random":
            results["selected"][name] = {"learning_rate": 1e-3}
    return results


def test_verdicts_follow_the_rules():
    from keras_bert_app.demo import objectives_study_report as report

    electra = {"detects_fakes": 0.79, "masked_accuracy": 0.1, "slots": 2000}
    results = _results({"bert": [0.7, 0.71, 0.72, 0.7, 0.71, 0.72], "roberta": [0.5, 0.55, 0.6, 0.5, 0.55, 0.6],
                        "electra": [0.9] * 6, "random": [0.3, 0.31, 0.32, 0.3, 0.31, 0.32]},
                       heldout={"electra": electra})
    # ELECTRA at AUC 0.79 did not train, whatever its fine-tuning says; BERT is ahead of the strongest baseline.
    assert report.verdict(results, "electra") == "did not train: no ranking"
    assert report.verdict(results, "bert") == "ahead of the strongest baseline (bag of words)"
    assert report.verdict(results, "roberta") == "not ahead of the strongest baseline (bag of words 0.500)"
    text = report.reading(results)
    assert "Did not train (no ranking): ELECTRA (AUC 0.790" in text
    assert "Ahead of it beyond the intervals: BERT." in text
    directions = dict(report.directions(results))
    assert directions[report.DIRECTIONS[-1][0]] == "no verdict: ELECTRA did not train"
    assert directions[report.DIRECTIONS[6][0]].startswith("reversed (beyond the intervals): RoBERTa-style 0.550")
    # An arm with a selected rate but no fine-tuning (a resumed study run with fewer arms) is not in the report.
    results["selected"]["albert"] = {"learning_rate": 1e-3}
    assert report.arms(results) == ["bert", "roberta", "electra"] and "ALBERT" not in report.table(results)
    # Trained at 0.8; a masked-LM head whose top-1 is not above the unigram's beyond its interval did not.
    electra["detects_fakes"] = 0.8
    assert report.trained(results, "electra")
    results["pretraining"]["bert_seed1_lr0.001"]["heldout"]["masked_accuracy"] = 0.055
    assert not report.trained(results, "bert")


@pytest.mark.parametrize("gap, outcome", [(0.0, "holds (within"), (0.2, "differs (beyond")])
def test_an_about_equal_direction_holds_only_within_the_intervals(gap, outcome):
    from keras_bert_app.demo import objectives_study_report as report

    results = _results({"roberta": [0.6] * 6, "mask_100_0_0": [0.6 + gap] * 6, "random": [0.3] * 6},
                       probe_mean={"roberta": 0.6, "mask_100_0_0": 0.6})
    found = dict(report.directions(results))
    assert found[report.DIRECTIONS[3][0]].startswith(outcome)
    assert found[report.DIRECTIONS[2][0]].startswith("not resolved (within the intervals)")  # probe: equal


def test_the_baselines_read_the_surface():
    """A task a surface rule solves: the surface-feature baseline finds it, a bag of words of these words not."""
    from keras_bert_app.demo import objectives_study_task as task

    rng = np.random.default_rng(0)
    words = "team match goal coach bank rate price market".split()

    def rows(count):
        return [(" ".join(rng.choice(words, 8)) + ("!" if i % 2 else "."), "loud" if i % 2 else "calm")
                for i in range(count)]

    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        for split, count in (("train", 40), ("dev", 200)):
            task._write(folder / f"{split}.csv", *zip(*rows(count)))
        result = task.baselines(folder / "train.csv", folder / "dev.csv")
    assert result["surface"] == 1.0 and result["majority"] == 0.5 and result["dev_size"] == 200


def test_the_chance_range_of_an_auc_is_the_mann_whitney_null():
    """The AUC of random scores over n positives and n negatives: 95% of draws within the stated half-width."""
    from sklearn.metrics import roc_auc_score

    from keras_bert_app.demo.objectives_study_report import chance_auc_interval

    rng = np.random.default_rng(0)
    labels = np.repeat([1, 0], 500)
    aucs = np.array([roc_auc_score(labels, rng.random(1000)) for _ in range(2000)])
    half = chance_auc_interval(500)
    assert np.mean(np.abs(aucs - 0.5) <= half) == pytest.approx(0.95, abs=0.015)
    assert chance_auc_interval(2000) < half  # more positives, a narrower range


@pytest.mark.parametrize(
    "options, message",
    [
        (["--objectives", "bert,xlnet"], "objectives must be one of"),
        (["--budget-steps", "10"], "budget_steps 10: too small to sweep the rates"),
        (["--minutes", "3"], "--minutes (equal pretraining time) was replaced by --budget-steps"),
        (["--seeds", "0,x"], "--seeds must be comma-separated integers"),
        (["--learning-rates", "0.001,-1"], "learning_rates: give positive numbers"),
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


@pytest.mark.parametrize("found, message", [({"budget_steps": 9}, "of another version (1;"),
                                            ({"version": STUDY_VERSION, "budget_steps": 9}, "other settings")])
def test_other_versions_and_settings_in_the_output_are_refused(quickstart_run, tmp_path, capsys, found, message):
    output = tmp_path / "study"
    output.mkdir()
    (output / "results.json").write_text(json.dumps({"settings": found}))
    assert cli.main(["study", "objectives", "--output", str(output), "--quickstart-run", str(quickstart_run)]) == 2
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1


def test_help_states_the_runtime_and_the_arms(capsys):
    with pytest.raises(SystemExit):
        cli.main(["study", "objectives", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Runtime: about" in text and all(f"{name} ({arm.title}" in text for name, arm in ARMS.items())


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
            "--budget-steps", "20", "--seeds", "0", "--pretraining-seeds", "0", "--learning-rates", "0.001"]
    assert cli.main(argv) == 0
    results = json.loads((output / "results.json").read_text())
    for arm in ARMS:
        key = f"{arm}_seed0_lr0.001"
        run_config = json.loads((output / "pretrain" / key / "run_config.json").read_text())
        assert run_config["objective"] == ARMS[arm].objective
        assert 0 <= results["finetune"][f"{arm}_p0_f0"] <= 1 and {"cls", "mean"} <= set(results["probe"][f"{arm}_p0"])
    assert 0 <= results["pretraining"]["electra_seed0_lr0.001"]["heldout"]["detects_fakes"] <= 1
    assert results["pretraining"]["ltr_seed0_lr0.001"]["heldout"]["next_token_loss"] > 0
    assert results["pretraining"]["bert_seed0_lr0.001"]["heldout"]["masked_loss"] > 0


def test_an_arm_reads_its_own_data_with_its_objectives_recipe(monkeypatch, tmp_path):
    """Corpus arms pass the corpus and pairing; the rate and warmup are the objective's; the output bias zeros."""
    from keras_bert_app.training import pretrain as training_pretrain

    seen = {}
    monkeypatch.setattr(training_pretrain, "pretrain", lambda *args, **kwargs: seen.update(kwargs) or tmp_path)
    objectives_study_runs.pretrain_arm("electra", "preset", "corpus.txt", tmp_path, 8, objectives_study_runs.Recipe(),
                                       source="corpus", pairing="segments", max_predictions=10, log=None)
    assert (seen["corpus"], seen["pairing"], seen["max_predictions"], seen["objective"]) == ("corpus.txt", "segments", 10, "electra")
    assert seen["learning_rate"] is None and seen["output_bias_init"] == "zeros" and "data" not in seen
    objectives_study_runs.pretrain_arm("mlm", "preset", "r/*.tfrecord", tmp_path, 8, objectives_study_runs.Recipe(),
                                       options={"corruption": (1.0, 0.0), "adam_beta2": 0.98}, log=None)
    assert seen["data"] == "r/*.tfrecord" and (seen["corruption"], seen["adam_beta2"]) == ((1.0, 0.0), 0.98)


def test_an_interrupted_call_keeps_its_time_in_the_runtime(quickstart_run, stand_ins, monkeypatch, tmp_path):
    """The runtime a resumed study states is the sum of every call, the interrupted ones included."""
    pytest.importorskip("matplotlib")
    output = tmp_path / "study"
    argv = ["study", "objectives", "--output", str(output), "--quickstart-run", str(quickstart_run), *ARGV]
    finetune = objectives_study_runs.finetune_accuracy

    def interrupted(*args, **kwargs):
        time.sleep(0.3)  # some work, then the machine goes away
        raise KeyboardInterrupt

    monkeypatch.setattr(objectives_study_runs, "finetune_accuracy", interrupted)
    assert cli.main(argv) not in (0, 2)  # interrupted: the entry point's own exit code
    first = json.loads((output / "results.json").read_text())
    assert "runtime_seconds" not in first and len(first["call_seconds"]) == 1 and first["call_seconds"][0] > 0
    monkeypatch.setattr(objectives_study_runs, "finetune_accuracy", finetune)
    assert cli.main(argv) == 0
    results = json.loads((output / "results.json").read_text())
    assert results["call_seconds"][0] == first["call_seconds"][0] and len(results["call_seconds"]) == 2
    assert results["runtime_seconds"] == pytest.approx(sum(results["call_seconds"]), abs=0.11)


def test_the_runtime_never_reads_less_than_the_pretraining_runs_recorded_time():
    from keras_bert_app.demo.objectives_study_report import runtime_sentence

    runs = {"a": {"seconds": 1800.0}, "b": {"seconds": 1500.0}}
    lost = runtime_sentence({"call_seconds": [1200.0], "runtime_seconds": 1200.0, "pretraining": runs,
                             "load_average": [6.5]})
    assert lost.startswith("Runtime: at least 55 min") and "recorded 20 min over 1 call " in lost
    kept = runtime_sentence({"call_seconds": [3000.0, 900.0], "runtime_seconds": 3900.0, "pretraining": runs,
                             "load_average": [1.0]})
    assert kept.startswith("Runtime: 65 min over 2 calls,") and "at least" not in kept
