"""`bench --task serving`: its page is its JSON, its options fail in one line, its summary computes the ratios."""

import json

import pytest

from keras_bert_app import cli
from keras_bert_app.benchmark.serving_bench import format_table, summarize
from keras_bert_app.benchmark.serving_worker import ROWS, build
from tests.docs.docs_tools import build_docs, shows, tables

tools = build_docs()
DATA = tools.docs_results.DATA


def test_serving_page_is_its_json():
    data = json.loads((DATA / "serving" / "bench_serving.json").read_text())
    page = tools.results_page("serving")
    parts = tables(page)
    merged = {}  # the rows table, split by column groups to fit the page: joined again by row
    for part in parts[:3]:
        for cells in part:
            merged.setdefault(cells["row"], {}).update(cells)
    rows, ratios = list(merged.values()), parts[3]
    assert len(rows) == len(data["rows"])
    for row in data["rows"]:
        (cells,) = [c for c in rows if c["row"] == row["row"]]
        if "error" in row:
            continue
        assert shows(cells["short p50 (ms)"], row["short_p50_ms"]) and shows(cells["long p99 (ms)"], row["long_p99_ms"])
        assert shows(cells["batch 32 (texts/s)"], row["batch32_texts_per_second"])
        assert shows(cells["dev accuracy"], row["dev_accuracy"])
    for peer, by_row in data["ratios"].items():
        for row, values in by_row.items():
            if row != peer:
                (cells,) = [c for c in ratios if (c["row"], c["peer"]) == (row, peer)]
                assert shows(cells["short p50: peer / row"], values["short_p50"])


def test_summary_ratios_and_agreement():
    def row(name, short, batch, predictions):
        return {"row": name, "description": ROWS[name], "short_p50_ms": short, "short_p99_ms": short,
                "long_p50_ms": 2 * short, "long_p99_ms": 2 * short, "batch32_texts_per_second": batch,
                "peak_memory_mib": 500.0, "dev_accuracy": 0.5, "dev_predictions": predictions}

    plan = {"sequence_length": 256, "train_size": 8, "dev_texts": ["a", "b"], "epochs": 1, "run_dev_accuracy": 1.0,
            "short_text": "one two", "long_text": "one two three", "repeats": 3}
    results = [row("onnx_ids", 10.0, 100.0, [0, 1]), row("hf_onnx", 15.0, 80.0, [0, 0]),
               {"row": "torch_eager", "description": ROWS["torch_eager"], "error": "ImportError: no torch"}]
    report = summarize(plan, results, "keras-bert-app bench --task serving")
    assert report["ratios"]["hf_onnx"]["onnx_ids"] == {"short_p50": 1.5, "long_p50": 1.5, "batch32": 1.25}
    assert "torch_eager" not in report["ratios"]
    assert report["rows"][1]["agreement_with_onnx_ids"] == 0.5 and "dev_predictions" not in report["rows"][0]
    assert "failed: ImportError: no torch" in format_table(report)


def test_unknown_rows_are_one_line(capsys):
    assert cli.main(["bench", "--task", "serving", "--rows", "onnx_ids,tensorrt"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown tensorrt" in err


def test_worker_refuses_an_unknown_row():
    with pytest.raises(ValueError, match="unknown row 'tensorrt'"):
        build("tensorrt", {"vocabulary": None, "sequence_length": 8})
