"""tools/distillation_must_show.py's data and intervals, and its results page: every figure read from the JSON."""

import json
import statistics

import pytest

from tests.conftest import load_tool
from tests.docs.docs_tools import build_docs, shows, tables

tool = load_tool("distillation_must_show")


def test_sentences_are_cut_at_sentence_ends_and_kept_between_6_and_40_words():
    text = ("Short one. The market rose by two per cent on Monday in London. \"Quoted words start this sentence here,\" "
            "he said. " + "Word " * 45 + "end.")
    assert tool.sentences(text) == ["The market rose by two per cent on Monday in London.",
                                    "\"Quoted words start this sentence here,\" he said."]


def test_interval_is_the_t_interval_over_seeds():
    summary = tool.interval([0.80, 0.82, 0.84])
    # t(0.975, 2) = 4.303; the standard error is 0.02 / sqrt(3).
    assert summary["mean"] == pytest.approx(0.82)
    assert summary["half_width"] == pytest.approx(4.302653 * 0.02 / 3**0.5, rel=1e-5)
    assert tool.interval([0.5])["half_width"] is None


def test_the_results_page_shows_its_json():
    pytest.importorskip("scipy")
    tools = build_docs()
    path = tools.docs_results.DATA / "distillation" / "results.json"
    data = json.loads(path.read_text())
    page = tools.results_page("distillation")
    models, serving = tables(page)
    teacher = models[0]
    assert shows(teacher["dev accuracy (mean ± 95% interval)"], data["teacher"]["accuracy"])
    assert len(models) == 1 + len(data["arms"])
    for cells, (arm, summary) in zip(models[1:], data["arms"].items()):
        mean, half = cells["dev accuracy (mean ± 95% interval)"].split(" ± ")
        assert shows(mean, summary["accuracy_interval"]["mean"]) and shows(half, summary["accuracy_interval"]["half_width"])
        assert shows(cells["% of the teacher's accuracy"].split(" ± ")[0], 100 * summary["retention"]["mean"])
        assert shows(cells["train (s, mean)"], statistics.mean(summary["train_seconds"]))
        assert cells["parameters"] == f"{summary['parameters']:,}"
    for cells in serving:
        assert shows(cells["examples/s"], data["serving"][cells["model"]]["examples_per_second"])
    assert f"{data['serving']['speedup']:.2f}x" in page
