"""The results pages show the figures of their JSON files, and refuse a wrong file in one line.

Each expectation below reads the JSON written by the measuring command
(`docs/results/data/`) on its own, finds that figure's row in the generated
page by its key columns, and compares the cell with the value at the cell's
precision. A row the JSON does not have fails too.
"""

import json
import shutil
import statistics

import pytest

from tests.docs.docs_tools import build_docs, shows, tables

tools = build_docs()
DATA = tools.docs_results.DATA


def page(name, data_dir=DATA):
    return tools.results_page(name, data_dir)


def test_benchmarks_table_is_its_json():
    data = json.loads((DATA / "bench" / "bench.json").read_text())
    steps, ratios = tables(page("benchmarks"))[:2]
    assert len(steps) == len(data["rows"]) and len(ratios) == len(data["ratios"])
    for row in data["rows"]:
        (cells,) = [c for c in steps if (c["task"], c["batch"], c["implementation"], c["backend"])
                    == (row["task"], str(row["batch_size"]), row["model"], row["backend"])]
        assert shows(cells["median step (s)"], row["median_step_seconds"])
        assert shows(cells["tokens/s"], row["tokens_per_second"])
        assert shows(cells["MFU (%)"], 100 * row["mfu"])
    for ratio in data["ratios"]:
        (cells,) = [c for c in ratios if (c["task"], c["batch"], c["ours on"], c["peer"], c["peer on"])
                    == (ratio["task"], str(ratio["batch_size"]), ratio["ours_backend"], ratio["peer"],
                        ratio["peer_backend"])]
        assert shows(cells["peer time / ours"], ratio["ratio"])


def test_finetune_parity_table_is_its_json():
    data = json.loads((DATA / "bench_finetune" / "bench_finetune.json").read_text())
    (rows,) = tables(page("finetune-parity"))
    assert len(rows) == len(data["rows"])
    for cells, row in zip(rows, data["rows"]):  # in the run's order: an implementation may run twice, side by side
        assert (cells["data"], cells["implementation"]) == (row["dataset"], row["implementation"])
        earlier = [r for r in data["rows"][:data["rows"].index(row)] if r["implementation"] == row["implementation"]]
        assert cells["run"] == str(len(earlier) + 1)
        assert shows(cells["whole process (s)"], row["seconds"])
        assert shows(cells["dev accuracy"], row["accuracy"])
        ratio = 1.0 if row["implementation"] == "ours" else data["ratios"][row["dataset"]][row["implementation"]]
        assert shows(cells["time / ours"], ratio)


def _check_objectives_page(text, data):
    """Every arm's row against the JSON: selected rate, steps, fine-tuned mean over all runs, probe means."""
    from keras_bert_app.demo.objectives_study_settings import ARMS

    merged = {}  # the main table, split by column groups to fit the page: joined again by encoder
    for part in tables(text):
        if part and "encoder" in part[0] and not any(column.startswith("lr ") for column in part[0]):
            for cells in part:
                merged.setdefault(cells["encoder"], {}).update(cells)
    rows = list(merged.values())
    assert rows and all("verdict" in cells and "selected rate" in cells for cells in rows)
    titles = {arm.title: name for name, arm in ARMS.items()}
    arms = [titles[cells["encoder"]] for cells in rows if cells["encoder"] in titles]
    assert arms == [name for name in ARMS if name in data["selected"]]
    for cells in rows:
        name = titles.get(cells["encoder"], "random" if cells["encoder"] == "random init" else None)
        if name is None:  # a baseline
            key = {"majority class": "majority", "bag of words": "bag_of_words", "surface features": "surface"}[
                cells["encoder"]]
            assert shows(cells["probe `[CLS]` (95% Wilson)"].split(" ± ")[0], data["baselines"][key])
            continue
        tuned = [value for key, value in data["finetune"].items() if key.rsplit("_p", 1)[0] == name]
        assert len(tuned) >= 6 and shows(cells[next(k for k in cells if k.startswith("fine-tuned"))].split(" ± ")[0],
                                         statistics.mean(tuned))
        probes = [value for key, value in data["probe"].items() if key.rsplit("_p", 1)[0] == name]
        assert shows(cells["probe mean"].split(" ± ")[0], statistics.mean(p["mean"] for p in probes))
        if name != "random":
            rate = data["selected"][name]["learning_rate"]
            assert cells["selected rate"] == f"{rate:g}"
            runs = [run for run in data["pretraining"].values() if run["arm"] == name and run["learning_rate"] == rate]
            assert len(runs) >= 2 and shows(cells["steps"], runs[0]["steps"])


def test_objectives_study_table_is_its_json():
    from keras_bert_app.demo.objectives_study_settings import STUDY_VERSION

    data = json.loads((DATA / "objectives_study" / "results.json").read_text())
    text = page("objectives-study")
    if data["settings"].get("version") == STUDY_VERSION:
        _check_objectives_page(text, data)
        assert (DATA / "objectives_study" / "task" / "train.csv").is_file()
    else:  # an older version's run: withdrawn, none of its figures shown
        assert "findings are withdrawn" in text and not tables(text)


def test_objectives_study_page_of_a_collected_run_with_its_task(data_copy, tmp_path):
    """A finished run of this version: collected with its task's CSVs, its page's cells are its JSON's."""
    from tests.test_objectives_study import _results

    run = tmp_path / "run"
    (run / "task").mkdir(parents=True)
    data = _results({"bert": [0.7, 0.71, 0.72, 0.7, 0.71, 0.72], "electra": [0.5] * 6, "random": [0.3] * 6},
                    heldout={"electra": {"detects_fakes": 0.6, "masked_accuracy": 0.1, "slots": 2000}})
    from keras_bert_app.demo.objectives_study_settings import STUDY_VERSION

    data["settings"]["version"] = STUDY_VERSION
    data["recipe"] = {"sequence_length": 64, "batch_size": 16, "finetune_epochs": 8, "finetune_batch_size": 16,
                      "finetune_learning_rate": 5e-4}
    data["task"] = {"train": {"examples": 40}, "dev": {"examples": 250}}
    (run / "results.json").write_text(json.dumps(data))
    with pytest.raises(tools.ResultsError, match="no 'runtime_seconds'"):  # written when the study ends
        tools.docs_results.collect("objectives-study", run, data_copy)
    data["runtime_seconds"] = 600.0
    (run / "results.json").write_text(json.dumps(data))
    for split in ("train", "dev"):
        (run / "task" / f"{split}.csv").write_text("text,label\nA match.,sport\n")
    tools.docs_results.collect("objectives-study", run, data_copy)
    assert (data_copy / "objectives_study" / "task" / "dev.csv").read_text() == "text,label\nA match.,sport\n"
    text = page("objectives-study", data_copy)
    _check_objectives_page(text, data)
    assert "did not train: no ranking" in text and "ELECTRA beats BERT" in text
    del data["finetune"]  # unfinished: one line
    (data_copy / "objectives_study" / "results.json").write_text(json.dumps(data))
    with pytest.raises(tools.ResultsError, match="an unfinished study"):
        page("objectives-study", data_copy)


def test_chinese_masking_table_is_its_json():
    folder = DATA / "chinese_masking"
    tuned, probed = tables(page("chinese-masking"))[:2]
    rows = [{**left, **right} for left, right in zip(tuned, probed)]
    for cells, arm in zip(rows, ("token", "whole_word", "ngram")):
        stage = lambda name: json.loads((folder / arm / "stages" / f"{name}.json").read_text())  # noqa: E731
        assert cells["encoder"] == f"{arm} masking"
        accuracies = [json.loads(path.read_text())["dev_accuracy"]
                      for path in (folder / arm / "stages").glob("finetune_pretrained*.json")]
        assert shows(cells["fine-tuned dev accuracy (mean)"], statistics.mean(accuracies))
        assert shows(cells["frozen [CLS]"], stage("features")["pretrained_cls"])
        assert shows(cells["frozen mean"], stage("features")["pretrained_mean"])
        assert shows(cells["masked-LM accuracy (own task)"], stage("pretrain")["final"]["mlm_accuracy"])
    features = json.loads((folder / "whole_word" / "stages" / "features.json").read_text())
    assert shows(rows[3]["frozen [CLS]"], features["random_cls"]) and len(rows) == 4


def test_quickstart_tables_are_its_json():
    stages = {path.stem: json.loads(path.read_text()) for path in (DATA / "quickstart" / "stages").glob("*.json")}
    comparison, pretraining, times = tables(page("quickstart"))
    expected = {"fine-tuned dev accuracy": ("finetune_pretrained", "dev_accuracy", "finetune_random", "dev_accuracy"),
                "frozen [CLS] + logistic regression": ("features", "pretrained_cls", "features", "random_cls"),
                "frozen mean of tokens + logistic regression": ("features", "pretrained_mean", "features", "random_mean")}
    assert [row["measure"] for row in comparison] == list(expected)
    for row in comparison:
        stage, key, random_stage, random_key = expected[row["measure"]]
        assert shows(row["pretrained encoder"], stages[stage][key])
        assert shows(row["random encoder"], stages[random_stage][random_key])
    final = stages["pretrain"]["final"]
    assert {row["end of pretraining"]: row["value"] for row in pretraining}.keys() <= {"mlm accuracy", "nsp accuracy", "loss"}
    for row in pretraining:
        assert shows(row["value"], final[row["end of pretraining"].replace(" ", "_")])
    assert {row["stage"] for row in times} == {name for name, stage in stages.items() if "seconds" in stage}
    for row in times:
        assert shows(row["seconds"], stages[row["stage"]]["seconds"])


@pytest.fixture
def data_copy(tmp_path):
    shutil.copytree(DATA, tmp_path / "data")
    return tmp_path / "data"


def test_a_missing_json_is_one_line_naming_it(data_copy):
    (data_copy / "bench" / "bench.json").unlink()
    with pytest.raises(tools.ResultsError) as error:
        page("benchmarks", data_copy)
    message = str(error.value)
    assert "\n" not in message and "bench/bench.json: missing" in message and "keras-bert-app bench" in message


def test_a_json_of_another_version_is_one_line_naming_what_is_missing(data_copy):
    path = data_copy / "bench_finetune" / "bench_finetune.json"
    data = json.loads(path.read_text())
    for row in data["rows"]:
        row["wall_seconds"] = row.pop("seconds")  # as another version might name it
    path.write_text(json.dumps(data))
    with pytest.raises(tools.ResultsError) as error:
        page("finetune-parity", data_copy)
    message = str(error.value)
    assert "\n" not in message and "bench_finetune.json" in message
    assert "not written by this version of `keras-bert-app bench --task finetune`" in message and "'seconds'" in message


def test_another_commands_json_is_refused(data_copy):
    shutil.copyfile(data_copy / "bench_finetune" / "bench_finetune.json", data_copy / "bench" / "bench.json")
    with pytest.raises(tools.ResultsError, match=r"bench/bench.json: not written by this version of `keras-bert-app bench`"):
        page("benchmarks", data_copy)


def test_not_json_is_one_line(data_copy):
    (data_copy / "quickstart" / "stages" / "features.json").write_text("{\n  \"pretrained_cls\": 0.5,\n")
    with pytest.raises(tools.ResultsError, match=r"quickstart/stages/features.json: not JSON \(") as error:
        page("quickstart", data_copy)
    assert "\n" not in str(error.value)


def test_the_build_command_reports_it_in_one_line(data_copy, monkeypatch, capsys):
    (data_copy / "objectives_study" / "results.json").unlink()
    monkeypatch.setattr(tools.docs_results, "DATA", data_copy)
    monkeypatch.setattr(tools, "generate", lambda: tools.generated_pages(data_copy))
    assert tools.main(["generate"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "objectives_study/results.json: missing" in error


def test_collect_checks_then_replaces(data_copy, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(data_copy / "quickstart", run)
    (run / "stages" / "pretrain.json").write_text(json.dumps({"seconds": 1.0}))
    with pytest.raises(tools.ResultsError, match="no 'final'"):
        tools.docs_results.collect("quickstart", run, data_copy)
    assert json.loads((data_copy / "quickstart" / "stages" / "pretrain.json").read_text())["final"]  # untouched
    shutil.copyfile(data_copy / "quickstart" / "stages" / "pretrain.json", run / "stages" / "pretrain.json")
    features = json.loads((run / "stages" / "features.json").read_text())
    features["pretrained_cls"] = 0.123456
    (run / "stages" / "features.json").write_text(json.dumps(features))
    tools.docs_results.collect("quickstart", run, data_copy, command="keras-bert-app quickstart --steps 40")
    text = page("quickstart", data_copy)
    assert "| frozen [CLS] + logistic regression | 0.1235 |" in text
    assert "`keras-bert-app quickstart --steps 40`" in text


def test_each_page_opens_with_its_findings_computed_from_the_json(data_copy):
    """The first paragraph states the figures, including where ours loses; changing the JSON changes it."""
    quickstart = page("quickstart").split("\n\n")[1]
    features = json.loads((DATA / "quickstart" / "stages" / "features.json").read_text())
    assert f"{features['token_counts']:.4f}" in quickstart and "bag of words still wins" in quickstart
    parity = page("finetune-parity").split("\n\n")[1]
    data = json.loads((DATA / "bench_finetune" / "bench_finetune.json").read_text())
    (hf,) = {row["accuracy"] for row in data["rows"] if row["implementation"] == "hf-grouped"}
    assert f"below hf-grouped's {hf:.4f}" in parity
    assert "keras-bert-app bench" in page("benchmarks") and "/tmp/" not in page("benchmarks")
    path = data_copy / "quickstart" / "stages" / "features.json"
    path.write_text(json.dumps({**features, "token_counts": 0.1}))
    assert "ahead of a logistic regression on token counts (0.1000)" in page("quickstart", data_copy)


def test_the_results_index_findings_name_every_page():
    text = tools.index_findings()
    for name in ("benchmarks", "finetune-parity", "chinese-masking", "quickstart"):
        assert f"]({name}.md)" in text
    assert "/tmp/" not in text
