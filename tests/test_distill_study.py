"""`keras-bert-app study distill` at tiny sizes through the entry point: every arm and seed, a resumed run that
does not redo finished steps, the page's rules, and one line for a folder of another version or other settings."""

import json
import random

import pytest

from keras_bert_app import cli
from keras_bert_app.demo import distill_study_report as report
from keras_bert_app.demo import distill_study_settings as settings
from keras_bert_app.demo.distill_study import study_distill
from tests.tasks.tiny_presets import write_tiny_preset

WORDS = {"sport": "goal match team won league cup", "tech": "computer software phone internet chip data",
         "business": "bank profit shares market sales firm"}


def _articles(count, seed):
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        label = rng.choice(sorted(WORDS))
        rows.append((" ".join(rng.choices(WORDS[label].split(), k=8)), label))
    return rows


def _csv(path, rows):
    path.write_text("text,label\n" + "".join(f"{text},{label}\n" for text, label in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, shared_data):
    """Quickstart-shaped data (corpus.txt, train.csv, labeled.csv, dev.csv) and a 2-layer uncased teacher base."""
    folder = tmp_path_factory.mktemp("distill_study")
    data = folder / "data"
    data.mkdir()
    train = _articles(40, 0)
    _csv(data / "train.csv", train)
    _csv(data / "labeled.csv", train[:12])
    _csv(data / "dev.csv", _articles(10, 1))
    documents = ["\n".join(f"{text}." for text, _ in train[i:i + 4]) for i in range(0, len(train), 4)]
    (data / "corpus.txt").write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    base = write_tiny_preset(folder / "base", shared_data / "vocab" / "bert_uncased_vocab.txt",
                             max_sequence_length=32, num_layers=2)
    return {"data": data, "base": base, "folder": folder}


def _study(tiny, output, **options):
    return study_distill(output, seeds=[0, 1], pretrain_steps=4, teacher_preset=tiny["base"],
                         quickstart_data=tiny["data"], student_size="1x64", sequence_length=16, **options)


class Interrupt(Exception):
    pass


def test_an_interrupted_study_continues_where_it_stopped_and_reports_every_arm(tiny, tmp_path):
    output = tmp_path / "study"
    seen = []

    def stop_at_second_seed(line):
        seen.append(line)
        if "seed 1" in line and line.startswith("\n== (b) distilled, random init"):
            raise Interrupt

    with pytest.raises(Interrupt):
        _study(tiny, output, log=stop_at_second_seed)
    partial = json.loads((output / "results.json").read_text())
    done = set(partial["runs"])
    assert {f"{arm}_seed0" for arm in settings.ARMS} | {"basic_seed1"} == done
    assert "serving" in partial and "runtime_seconds" not in partial

    again = []
    result = _study(tiny, output, log=again.append)
    log = "".join(again)
    assert "Pretraining the student" not in log and "The teacher:" not in log  # finished steps are not redone
    assert "seed 0" not in log and "(a) labels only, random init, seed 1" not in log
    assert "(b) distilled, random init, seed 1" in log
    results = result["results"]
    assert len(results["call_seconds"]) == 2 and results["runtime_seconds"] >= sum(partial["call_seconds"])
    assert len(results["runs"]) == 2 * len(settings.ARMS)
    updates = {run["updates"] for run in results["runs"].values()}
    assert len(updates) == 1  # with or without the transfer set, the same number of updates
    transfer = next(run for run in results["runs"].values() if run["arm"] == "distill_transfer")
    plain = next(run for run in results["runs"].values() if run["arm"] == "distill")
    assert transfer["epochs"] < plain["epochs"]
    page = result["report"].read_text()
    for arm in settings.ARMS.values():
        assert arm.title in page
    assert "Turc et al.'s ordering" in page and "Majority class" in page and "Bag of words" in page
    assert "Surface features" in page
    assert results["serving"]["student"]["texts_per_second"] > 0 and results["teacher"]["parameters"] > 0
    # The teacher labelled the texts twice (with and without the transfer set), not once per run.
    assert len(list((output / "teacher_cache").glob("teacher-*.npz"))) == 2


def test_a_folder_of_another_version_or_other_settings_is_refused_in_one_line(tiny, tmp_path, capsys):
    output = tmp_path / "study"
    output.mkdir()
    (output / "results.json").write_text(json.dumps({"settings": {"version": settings.STUDY_VERSION - 1}}))
    assert cli.main(["study", "distill", "--output", str(output)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "another version" in error, error
    (output / "results.json").write_text(json.dumps({"settings": {
        "version": settings.STUDY_VERSION, "pretrain_steps": 7, "student_size": settings.STUDENT_SIZE,
        "sequence_length": settings.SEQUENCE_LENGTH, "teacher_preset": None, "quickstart_data": None}}))
    assert cli.main(["study", "distill", "--output", str(output)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "other settings (pretrain_steps)" in error, error
    assert cli.main(["study", "distill", "--output", str(tmp_path / "new"), "--seeds", "0,x"]) == 2
    assert "--seeds must be comma-separated integers" in capsys.readouterr().err
    with pytest.raises(Exception, match="lacks corpus.txt"):
        study_distill(tmp_path / "other", quickstart_data=tmp_path)


def _results(accuracies, majority=0.25):
    runs = {f"{arm}_seed{seed}": {"arm": arm, "seed": seed, "accuracy": value, "parameters": 10, "updates": 5}
            for arm, values in accuracies.items() for seed, value in enumerate(values)}
    return {"runs": runs, "baselines": {"majority": majority, "bag_of_words": 0.8, "dev_size": 400},
            "teacher": {"accuracy": 0.95, "parameters": 100}}


def test_turc_ordering_counts_a_difference_only_beyond_the_intervals():
    spread = {"pretrained_distill_transfer": [0.90, 0.91, 0.92], "pretrained": [0.80, 0.81, 0.82],
              "distill_transfer": [0.70, 0.71, 0.72], "basic": [0.60, 0.61, 0.62]}
    assert report.ordering(_results(spread))[0] == "holds"
    close = {**spread, "pretrained": [0.86, 0.90, 0.93]}  # overlaps the arm above it
    verdict, pairs = report.ordering(_results(close))
    assert verdict == "not shown" and pairs[0][2] == "within"
    reversed_pair = {**spread, "basic": [0.75, 0.76, 0.77]}
    assert report.ordering(_results(reversed_pair))[0] == "contradicted"
    untrained = {**spread, "basic": [0.20, 0.21, 0.22]}  # not above the majority class
    verdict, pairs = report.ordering(_results(untrained, majority=0.3))
    assert verdict == "not shown" and pairs[-1][2].startswith("not ranked")


def test_the_results_page_shows_its_json_and_help_states_its_runtime():
    from tests.docs.docs_tools import build_docs, shows, tables

    tools = build_docs()
    data = json.loads((tools.docs_results.DATA / "distillation_study" / "results.json").read_text())
    page = tools.results_page("distillation-study")
    accuracy, size = tables(page)[:2]
    assert len(accuracy) == len(settings.ARMS) + 4  # the arms, the teacher and three baselines
    surface = next(cells for cells in accuracy if cells["Row"].startswith("Surface features"))
    assert shows(surface["Dev accuracy (95% CI)"].split(" ± ")[0], data["baselines"]["surface"])
    for cells, (name, arm) in zip(accuracy, settings.ARMS.items()):
        mean, half, count = report.arm_accuracy(data, name)
        shown_mean, shown_half = cells["Dev accuracy (95% CI)"].split(" (")[0].split(" ± ")
        assert cells["Row"] == arm.title and shows(shown_mean, mean) and shows(shown_half, half)
        assert cells["Seeds"] == str(count) == str(len(data["seeds"])) and count >= 3
    speed = "Throughput, batch 32 (texts/s)"
    assert all(shows(cells[speed], data["serving"]["student"]["texts_per_second"]) for cells in size[:6])
    assert shows(size[6][speed], data["serving"]["teacher"]["texts_per_second"])
    assert shows(accuracy[-2]["Dev accuracy (95% CI)"].split(" ± ")[0], data["baselines"]["bag_of_words"])
    opening = page.split("\n\n")[1]
    words = {"holds": "holds here", "contradicted": "is contradicted here", "not shown": "is not shown"}
    assert words[report.ordering(data)[0]] in opening and "/tmp/" not in page
    assert f"about {round(data['runtime_seconds'] / 60)} minutes" in settings.runtime_line()


def test_the_public_name_is_the_stage_function():
    import keras_bert_app as kba

    assert kba.study_distill is study_distill and "study_distill" in dir(kba)
