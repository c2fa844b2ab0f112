"""`python tools/benchmark_serving.py` (issue 19's serving latency), run as its command line on a tiny encoder."""

import pytest

from tests.conftest import load_tool

pytestmark = pytest.mark.usefixtures("shared_data")  # its requests are cut from the Wikipedia sample

TINY = ["--layers", "1", "--hidden", "16", "--heads", "2", "--intermediate", "32", "--sequence-length", "64",
        "--repeats", "2"]


def test_both_exports_answer_each_request_alike_and_the_short_one_runs_short(capsys):
    rows = load_tool("benchmark_serving").main(TINY)
    out = capsys.readouterr().out
    assert [row["words"] for row in rows] == [10, 60, 300]
    # A 10-word request is well under S; the 300-word one is cut to S (64).
    assert rows[0]["tokens"] < 32 and rows[-1]["tokens"] == 64
    assert all(row["max_difference"] <= 1e-5 for row in rows)  # dynamic padding changes no probability
    assert all(row["dynamic_p50"] > 0 and row["fixed_p50"] > 0 for row in rows)
    assert "L1 H16 A2 FF32 (fresh weights), S=64" in out and out.count("x ") >= 3


def test_an_hf_folder_is_served_with_its_weights(tmp_path, capsys):
    from tests.convert.checkpoints import write_huggingface

    folder = write_huggingface(tmp_path / "hf")
    rows = load_tool("benchmark_serving").main(["--preset", str(folder), "--sequence-length", "32", "--repeats", "1"])
    assert f"{folder} (its weights), S=32" in capsys.readouterr().out
    assert all(row["max_difference"] <= 1e-5 for row in rows)
