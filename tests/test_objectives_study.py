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

import keras
import numpy as np
import pytest

from keras_bert_app import cli, errors
from keras_bert_app.demo import objectives_study, objectives_study_runs
from keras_bert_app.demo.objectives_study_settings import ARMS, MLM_RATE_FACTOR
from tests.tasks.tiny_presets import SPECIALS, write_tiny_preset

TOPICS = {
    "sport": "team match goal coach player season win cup league final",
    "money": "bank rate price market share profit loss trade deal firm",
    "film": "actor movie award star show music band song stage festival",
}
# Step times of the stand-in pretraining (seconds per step), for its metrics.
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
    """Stand-ins for the runs: pretraining writes metrics and keeps the initial weights."""
    import shutil

    calls = []

    def pretrain_arm(objective, preset, data, run_dir, steps, recipe, *, source="records", pairing=None,
                     checkpoint_every=None, log=None, learning_rate=None, **_):
        calls.append(("pretrain", objective, data, steps, source, pairing, learning_rate))
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

    def finetune_accuracy(preset, task, run_dir, seed, recipe, log=print):
        calls.append(("finetune", str(preset), seed, task))
        return 0.5 + 0.1 * ("electra" in str(preset)) + 0.01 * seed

    def probe_accuracies(preset, tokenizer_preset, task, sequence_length, log=print):
        calls.append(("probe", str(preset)))
        return {"cls": 0.9 if "pretrain" in str(preset) else 0.5, "mean": 0.45, "dev_size": 400}

    def context_check(objective, preset, texts_file, sequence_length, log=print):
        calls.append(("context", objective, str(preset), texts_file))
        result = {"prefers_true": 0.5, "masked_accuracy": 0.05, "frequency_accuracy": 0.05, "slots": 2000}
        return {**result, "detects_fakes": 0.5} if objective == "electra" else result

    for function in (pretrain_arm, pretrain_in_child, finetune_accuracy, probe_accuracies, context_check):
        monkeypatch.setattr(objectives_study_runs, function.__name__, function)
    return calls


def test_study_plans_equal_flops_with_each_arms_data_and_reports_intervals(quickstart_run, stand_ins, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from scipy import stats

    from keras_bert_app.benchmark.flops import model_flops
    from keras_bert_app.models.electra_generator import generator_config

    output = tmp_path / "study"
    argv = ["study", "objectives", "--output", str(output), "--quickstart-run", str(quickstart_run),
            "--budget-steps", "100", "--seeds", "0,1,2"]
    assert cli.main(argv) == 0
    results = json.loads((output / "results.json").read_text())
    # Equal FLOPs (the bench's model): ELECTRA's generator makes its steps costlier, so it runs fewer of them.
    encoder = json.loads((quickstart_run / "model_preset" / "config.json").read_text())["encoder"]
    bert_step = model_flops(encoder, 4, 32, training=True)
    electra_step = bert_step + model_flops(generator_config(encoder), 4, 32, training=True)
    assert results["pretrain_bert"]["steps"] == results["pretrain_roberta"]["steps"] == 100
    assert results["pretrain_electra"]["steps"] == objectives_study.equal_flops_steps(100 * bert_step, electra_step) < 100
    assert results["pretrain_electra"]["flops_per_step"] == electra_step
    assert "Plan at equal pretraining FLOPs" in capsys.readouterr().out
    # Each arm's own data: static records for BERT and ALBERT, the corpus masked at every step for RoBERTa and ELECTRA.
    pretrained = {call[1]: call[2:] for call in stand_ins if call[0] == "pretrain"}
    assert pretrained["mlm_nsp"][0] == str(quickstart_run / "pretraining_data" / "*.tfrecord")
    assert pretrained["mlm_sop"][0] == str(output / "records" / "sop" / "*.tfrecord")
    corpus = str(quickstart_run / "data" / "corpus.txt")
    assert pretrained["mlm"][0:3:2] == (corpus, "corpus") and pretrained["mlm"][3] == "full_sentences"
    assert pretrained["electra"][0:3:2] == (corpus, "corpus") and pretrained["electra"][3] == "segments"
    # Each arm's rate: its objective's default at the study's batch, the masked-LM arms' times their factor, ELECTRA's
    # its own scaled down to the batch from 5e-4 at 128; the run gets it and the report says it.
    rates = {objective: call[4] for objective, call in pretrained.items()}
    assert rates["mlm_nsp"] == rates["mlm"] == rates["mlm_sop"] == pytest.approx(1e-4 * MLM_RATE_FACTOR)
    assert rates["electra"] == pytest.approx(5e-4 * 4 / 128)
    assert results["pretrain_electra"]["learning_rate"] == rates["electra"]
    # Parameters: ALBERT-style shares one layer's weights over both layers (E = H = 128: no factorisation).
    parameters = {arm: results[f"pretrain_{arm}"]["parameters"] for arm in ARMS}
    layer = parameters["bert"]["encoder"] - parameters["albert"]["encoder"]
    assert layer == 4 * (128 * 128 + 128) + 2 * (128 * 256) + 256 + 128 + 2 * 2 * 128  # attention, FFN, 2 LayerNorms
    # The task: word order, from the quickstart's articles; half the sentences shuffled, the same words.
    task = output / "task"
    rows = list(csv.DictReader((task / "train.csv").open()))
    assert {row["label"] for row in rows} == {"original", "shuffled"}
    assert abs(sum(row["label"] == "shuffled" for row in rows) - len(rows) / 2) <= 1
    articles = " ".join(row["text"] for row in csv.DictReader((quickstart_run / "data" / "labeled.csv").open()))
    for row in rows:
        words = row["text"].split()
        assert (row["text"] in articles) == (row["label"] == "original") or len(set(words)) < len(words)
    assert all(call[3] == task for call in stand_ins if call[0] == "finetune")
    assert 0 <= results["bag_of_words"] <= 1
    # The report: one row per arm, the random encoder and the bag of words; means with 95% t-intervals.
    report = (output / "report.md").read_text()
    table_rows = [line for line in report.splitlines() if line.startswith("| ") and not line.startswith("| encoder")]
    assert [row.split(" | ")[0] for row in table_rows] == ["| BERT", "| RoBERTa-style", "| ALBERT-style", "| ELECTRA",
                                                            "| random init", "| bag of words"]
    header = next(line for line in report.splitlines() if line.startswith("| encoder"))
    assert {row.count(" | ") for row in table_rows} == {header.count(" | ")}  # every row under its own columns
    half = stats.t.ppf(0.975, 2) * stats.tstd([0.6, 0.61, 0.62]) / 3 ** 0.5
    assert f"| 0.610 ± {half:.3f} |" in table_rows[3]
    assert "ELECTRA 0.900 (ahead beyond the intervals)" in report  # the probe stand-in: 0.9 against 0.5
    assert "ELECTRA leads BERT by 10.0 points fine-tuned (beyond the intervals)" in report
    assert f"times {MLM_RATE_FACTOR} for the masked-LM arms" in report and f"lr {rates['electra']:.3g}" in table_rows[3]
    assert "Runtime:" in report and (output / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Which token fits: each pretrained arm's run preset on the held-out articles; ELECTRA's discriminator too.
    contexts = {call[1]: call[2:] for call in stand_ins if call[0] == "context"}
    assert contexts["electra"] == (str(output / "pretrain" / "electra" / "preset"), quickstart_run / "data" / "dev.csv")
    assert set(contexts) == {arm.objective for arm in ARMS.values()}
    assert "| generator 0.500 ± 0.022 (top-1 0.050, most frequent token 0.050); discriminator AUC 0.500 |" in table_rows[3]
    assert "| 0.500 ± 0.022 (top-1 0.050" in table_rows[0] and " | - | - | 0.5" in table_rows[4]  # random init: -
    assert "No arm learned which token fits beyond the word frequencies" in report
    # A rerun continues: nothing is run again; the runtime adds up over the calls.
    done, first = len(stand_ins), results["runtime_seconds"]
    assert cli.main(argv) == 0
    assert len(stand_ins) == done
    results = json.loads((output / "results.json").read_text())
    assert len(results["call_seconds"]) == 2 and results["runtime_seconds"] == pytest.approx(
        first + results["call_seconds"][1], abs=0.11)
    assert "over 2 calls" in (output / "report.md").read_text()


@pytest.mark.parametrize("auc, detects", [(0.51, False), (0.55, True)])
def test_the_reading_says_when_an_arm_learned_which_token_fits(auc, detects):
    from keras_bert_app.demo.objectives_study_report import reading

    results = {"bag_of_words": 0.5, **{f"finetune_{name}_{seed}": 0.6 for name in ("bert", "electra", "random")
                                       for seed in (0, 1)}}
    results.update({f"probe_{name}": {"cls": 0.6, "dev_size": 400} for name in ("bert", "electra", "random")})
    results["context_electra"] = {"prefers_true": 0.51, "slots": 2000, "detects_fakes": auc}
    for share, learned in ((0.51, False), (0.6, True)):
        results["context_bert"] = {"prefers_true": share, "slots": 2000}
        text = reading(results, ["bert", "electra"], [0, 1])
        assert f"BERT {share:.3f} ({'above' if learned else 'not above'} 0.5 beyond its interval)" in text
        assert "ELECTRA generator 0.510 (not above" in text and f"at AUC {auc:.3f}" in text
        assert f"; {'above' if detects else 'not above'} 0.5 beyond chance)" in text
        # Nothing learned anywhere: a larger budget is needed; the discriminator reading context says so instead.
        assert ("No arm learned which token fits" in text) == (not learned and not detects)
        assert ("but ELECTRA's discriminator tells frequency-drawn fakes by their context" in text) == (
            not learned and detects)


def _study_results(budget, steps, tuned, fits, electra_fits=0.5, auc=0.5):
    """A finished study's results as the report reads them: BERT and ELECTRA pretrained, the random encoder."""
    results = {"settings": {"budget_steps": budget}, "bag_of_words": 0.5}
    for name, accuracy in (("bert", tuned["bert"]), ("electra", tuned["electra"]), ("random", 0.5)):
        results.update({f"finetune_{name}_{seed}": accuracy + 0.01 * seed for seed in (0, 1, 2)})
        results[f"probe_{name}"] = {"cls": accuracy, "dev_size": 400}
    for name, rate in (("bert", 1e-3), ("electra", 1.25e-4)):
        results[f"pretrain_{name}"] = {"steps": steps[name], "learning_rate": rate}
    results["context_bert"] = {"prefers_true": fits, "slots": 2000}
    results["context_electra"] = {"prefers_true": electra_fits, "slots": 2000, "detects_fakes": auc}
    return results


@pytest.mark.parametrize("electra_fits", [0.51, 0.6])
def test_the_steps_ablation_reads_two_budgets_and_says_why_electra_gains_less(electra_fits):
    from keras_bert_app.demo.objectives_study_report import budget_ablation

    smaller = _study_results(1500, {"bert": 1500, "electra": 1390}, {"bert": 0.6, "electra": 0.52}, 0.51)
    larger = _study_results(10000, {"bert": 10000, "electra": 9280}, {"bert": 0.8, "electra": 0.6}, 0.82,
                            electra_fits, auc=0.55)
    text = budget_ablation(smaller, larger)
    header, _, bert, electra, _, reading = text.splitlines()
    assert "steps at 1,500 → 10,000 BERT steps' FLOPs" in header
    assert bert.startswith("| BERT | 1,500 → 10,000 | 0.610 ± 0.025 → 0.810 ± 0.025 | 0.600 → 0.800 | 0.510 → 0.820 | - |")
    assert electra.startswith(f"| ELECTRA | 1,390 → 9,280 | 0.530 ± 0.025 → 0.610 ± 0.025 | 0.520 → 0.600 | "
                              f"0.500 → {electra_fits:.3f} | 0.500 → 0.550 |")
    assert "BERT +20.0 points; ELECTRA +8.0 points." in reading
    # Why: only while ELECTRA's generator is still at the word frequencies and a masked-LM head is past them.
    assert ("ELECTRA's generator (a quarter of the encoder, at ELECTRA's rate 0.000125 against 0.001) prefers the "
            "true token at only 0.510" in reading) == (electra_fits == 0.51)


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
        (["--budget-steps", "0"], "budget_steps must be >= 1"),
        (["--minutes", "3"], "--minutes (equal pretraining time) was replaced by --budget-steps"),
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
    (output / "results.json").write_text(json.dumps({"settings": {"budget_steps": 9}}))
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
            "--budget-steps", "20", "--seeds", "0,1"]
    assert cli.main(argv) == 0
    results = json.loads((output / "results.json").read_text())
    for arm in ARMS:
        run = results[f"pretrain_{arm}"]
        assert run["peak_rss_mib"] > 100  # a whole Python process with the backend
        run_config = json.loads((output / "pretrain" / arm / "run_config.json").read_text())
        assert run_config["objective"] == ARMS[arm].objective and run_config["output_bias_init"] == "zeros"
        assert 0 <= results[f"finetune_{arm}_0"] <= 1 and {"cls", "mean"} <= set(results[f"probe_{arm}"])
    assert "discriminator_auc" in results["pretrain_electra"]["final"]
    assert 0 <= results["context_electra"]["detects_fakes"] <= 1 and "detects_fakes" not in results["context_bert"]
    assert results["pretrain_albert"]["parameters"]["encoder"] < results["pretrain_bert"]["parameters"]["encoder"]
    assert (output / "report.md").read_text().count("\n| ") == 7  # header + 4 arms + random init + bag of words


def test_an_arm_reads_its_own_data_with_its_objectives_recipe(monkeypatch, tmp_path):
    """Corpus arms pass the corpus and pairing; the rate and warmup are the objective's; the output bias zeros."""
    from keras_bert_app.training import pretrain as training_pretrain

    seen = {}
    monkeypatch.setattr(training_pretrain, "pretrain", lambda *args, **kwargs: seen.update(kwargs) or tmp_path)
    objectives_study_runs.pretrain_arm("electra", "preset", "corpus.txt", tmp_path, 8, objectives_study_runs.Recipe(),
                                       source="corpus", pairing="segments", max_predictions=10, log=None)
    assert (seen["corpus"], seen["pairing"], seen["max_predictions"], seen["objective"]) == ("corpus.txt", "segments", 10, "electra")
    assert seen["learning_rate"] is None and seen["output_bias_init"] == "zeros" and "data" not in seen
    objectives_study_runs.pretrain_arm("mlm_nsp", "preset", "r/*.tfrecord", tmp_path, 8, objectives_study_runs.Recipe(), log=None)
    assert seen["data"] == "r/*.tfrecord"
