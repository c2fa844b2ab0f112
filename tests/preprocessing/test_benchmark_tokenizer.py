"""tools/benchmark_tokenizer.py runs end to end on a small corpus (TensorFlow only)."""

import keras
import pytest

from tests.conftest import load_tool

pytest.importorskip("tokenizers")
pytestmark = pytest.mark.skipif(
    keras.config.backend() != "tensorflow", reason="checked once, under TensorFlow"
)


def test_benchmark_checks_ids_and_prints_ratios(tmp_path, enwiki_lines, capsys):
    corpus = tmp_path / "small.txt"
    corpus.write_text("\n".join(enwiki_lines[:60]), encoding="utf-8")
    benchmark = load_tool("benchmark_tokenizer")
    status = benchmark.main([
        "--corpus", str(corpus), "--only", "cased", "--repeats", "1", "--single-lines", "3",
        "--skip-keras-hub",
    ])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "ids equal to HF on 60 / 60 lines" in out
    assert "ours/HF = " in out and "ids identical to HF on every line" in out
