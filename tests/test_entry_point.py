"""The console script's process: `commands.main.run_process`, the body of `keras-bert-app`."""

import json
import subprocess
import sys

import pytest

from keras_bert_app.commands import main as entry

PROBE = """
import gc, json, sys
from keras_bert_app.commands import main as entry
code = entry.run_process(sys.argv[1:])
print(json.dumps({"code": code, "after": gc.get_threshold(), "frozen": gc.get_freeze_count()}))
"""


def _probe(argv, tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1]), result.stderr


def test_the_console_script_runs_its_process_through_run_process(monkeypatch):
    calls = []
    monkeypatch.setattr(entry, "run_process", lambda argv=None: calls.append(argv) or 7)
    monkeypatch.setattr(sys, "argv", ["keras-bert-app", "summary"])
    try:
        entry.console_script()
    except SystemExit as stop:
        assert stop.code == 7
    else:
        raise AssertionError("console_script did not exit")
    assert calls == [None]


def test_run_process_keeps_the_exit_code_and_leaves_every_object_frozen(tmp_path):
    # A real command, run to its end: a preset that does not exist is a one-line error, exit 2.
    report, stderr = _probe(["summary", "--preset", str(tmp_path / "no_such_preset")], tmp_path)
    assert report["code"] == entry.EXIT_BAD_INPUT
    assert "keras-bert-app summary: error:" in stderr and "Traceback" not in stderr
    assert tuple(report["after"]) == entry.PROCESS_GC_THRESHOLDS
    # Everything alive at the end is frozen: the interpreter's last collection has nothing to walk.
    assert report["frozen"] > 10_000


def test_run_process_freezes_even_when_the_command_fails_unexpectedly(tmp_path):
    failing = PROBE.replace(
        "code = entry.run_process(sys.argv[1:])",
        "entry.main = lambda argv=None: 1 / 0\ntry:\n    entry.run_process([])\nexcept ZeroDivisionError:\n    code = -1",
    )
    result = subprocess.run([sys.executable, "-c", failing], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["code"] == -1 and report["frozen"] > 0


@pytest.mark.parametrize("module", ["keras_bert_app.cli", "keras_bert_app.commands.main"])
def test_python_dash_m_runs_the_command_as_the_console_script_does(module, tmp_path):
    # `bench --task finetune` times ours as `python -m keras_bert_app.commands.main`.
    result = subprocess.run(
        [sys.executable, "-m", module, "summary", "--preset", str(tmp_path / "missing")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == entry.EXIT_BAD_INPUT
    assert "keras-bert-app summary: error:" in result.stderr and "Traceback" not in result.stderr
