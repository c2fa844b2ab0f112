"""`tools/electra_vs_bert.py`: the study's BERT and ELECTRA arms, then ELECTRA's generator-size and steps ablations.

The study's own stand-ins for the runs (`test_objectives_study`): what is checked is the plan (steps of each
ablation), what each run is given, the table and that a rerun runs nothing again.
"""

import json

import pytest

from tests.conftest import load_tool
from tests.test_objectives_study import quickstart_run, stand_ins  # noqa: F401 (fixtures)


def test_ablations_plan_their_steps_and_report_which_token_fits(quickstart_run, stand_ins, tmp_path, capsys,  # noqa: F811
                                                                 monkeypatch):
    pytest.importorskip("matplotlib")
    argv = ["--output", str(tmp_path / "cmp"), "--quickstart-run", str(quickstart_run), "--budget-steps", "100",
            "--seeds", "0,1", "--generator-sizes", "0.125", "--steps-factors", "3"]
    assert load_tool("electra_vs_bert").main(argv) == 0
    results = json.loads((tmp_path / "cmp" / "results.json").read_text())
    ablation = json.loads((tmp_path / "cmp" / "ablation.json").read_text())
    electra_steps = results["plan"]["electra"]["steps"]
    # A smaller generator costs less per step: more steps at the same FLOPs; the steps ablation: 3 times ELECTRA's.
    assert results["plan"]["bert"]["steps"] >= ablation["electra_generator_0.125"]["steps"] > electra_steps
    assert ablation["electra_steps_3x"]["steps"] == 3 * electra_steps
    ablations = [call for call in stand_ins if call[0] == "pretrain" and "ablation" in call[10]][-2:]
    assert [call[3] for call in ablations] == [ablation["electra_generator_0.125"]["steps"], 3 * electra_steps]
    # At the study's rate for ELECTRA, selected on its held-out AUC (the stand-in's: highest at 3e-3).
    assert {call[1] for call in ablations} == {"electra"} and {call[6] for call in ablations} == {
        results["selected"]["electra"]["learning_rate"]}
    # Every row says which token fits; ELECTRA's rows the discriminator's AUC too (the stand-in's 0.5).
    lines = capsys.readouterr().out.splitlines()
    table = [line for line in lines[max(i for i, line in enumerate(lines) if line.startswith("| encoder")):]
             if line.startswith("| ")]  # the tool's table, after the study's
    assert [row.split(" | ")[0] for row in table[1:]] == [
        "| BERT", "| ELECTRA, generator 0.25", "| ELECTRA, generator 0.125", "| ELECTRA, 3x its steps"]
    assert table[1].endswith("| 0.700 | - |") and all(row.endswith("| 0.600 | 0.900 |") for row in table[2:])
    # A rerun continues: nothing is run again.
    done = len(stand_ins)
    assert load_tool("electra_vs_bert").main(argv) == 0
    assert len(stand_ins) == done
