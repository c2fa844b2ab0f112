"""The console script: `commands.main.console_script`, `main` with one-line errors and warnings, no process tuning."""

import json
import subprocess
import sys

import pytest

from keras_bert_app.commands import main as entry


def test_the_console_script_exits_with_mains_code(monkeypatch):
    calls = []
    monkeypatch.setattr(entry, "main", lambda argv=None, **options: calls.append((argv, options)) or 7)
    monkeypatch.setattr(sys, "argv", ["keras-bert-app", "summary"])
    with pytest.raises(SystemExit) as stop:
        entry.console_script()
    assert stop.value.code == 7 and calls == [(None, {"one_line_warnings": True})]


PROCESS_PROBE = """
import gc, json, os, sys, warnings
def ours():
    return sorted((k, v) for k, v in os.environ.items() if k.startswith(("KERAS_BERT_APP", "TF_ENABLE_ONEDNN")))
before = {"gc": gc.get_threshold(), "env": ours(), "formatwarning": id(warnings.formatwarning)}
from keras_bert_app.commands import main as entry
code = entry.main(sys.argv[1:])
after = {"gc": gc.get_threshold(), "env": ours(), "formatwarning": id(warnings.formatwarning)}
print(json.dumps({"code": code, "same": before == after, "frozen": gc.get_freeze_count()}))
"""


def test_a_command_leaves_the_process_as_it_found_it(tmp_path):
    # A real command, run to its end: a preset that does not exist is a one-line error, exit 2. The
    # collector, the environment and the warning hooks are the interpreter's, before and after.
    result = subprocess.run([sys.executable, "-c", PROCESS_PROBE, "summary", "--preset", str(tmp_path / "nothing")],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"code": entry.EXIT_BAD_INPUT, "same": True, "frozen": 0}
    assert "keras-bert-app summary: error:" in result.stderr and "Traceback" not in result.stderr


def test_the_librarys_own_warnings_are_one_line_naming_the_command(tmp_path):
    # An HF masked-LM folder has no pooler: `convert` warns that it keeps fresh weights. A user reads one line,
    # not Python's "file:line: UserWarning:" and the source line that issued it.
    from tests.convert.checkpoints import TINY, huggingface_tensors, write_huggingface

    tensors = {name: value for name, value in huggingface_tensors(TINY).items() if "pooler" not in name}
    source = write_huggingface(tmp_path / "hf", tensors=tensors, architecture="BertForMaskedLM")
    result = subprocess.run(
        [sys.executable, "-m", "keras_bert_app.commands.main", "convert", "--from", "huggingface", str(source),
         "--output", str(tmp_path / "out")], cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "pooler" in line]
    assert lines == [f"keras-bert-app convert: warning: {source / 'model.safetensors'} has no tensors for our pooler "
                     "(a masked-LM or task checkpoint): those keep fresh weights."]
    assert "UserWarning" not in result.stderr and "warnings.warn" not in result.stderr


def test_other_packages_warnings_keep_pythons_format(monkeypatch, capsys):
    import logging
    import warnings

    def run(args):
        warnings.warn_explicit("deprecated", FutureWarning, "/elsewhere/lib.py", 3)
        warnings.warn_explicit("fresh weights\nhere", UserWarning, entry.__file__, 9)

    monkeypatch.setattr(entry, "command_module", lambda name: type("M", (), {"run": staticmethod(run)}))
    monkeypatch.setattr(entry, "build_parser", lambda: _parser_with("summary"))
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert entry.main(["summary"], one_line_warnings=True) == 0
    err = capsys.readouterr().err
    assert "/elsewhere/lib.py:3: FutureWarning: deprecated" in err
    assert "keras-bert-app summary: warning: fresh weights here\n" in err
    # Restored when the command returns: warnings print as before, and the logger holds no handler of ours.
    assert not logging.getLogger("py.warnings").handlers
    # A caller in Python keeps its own handling (pytest.warns here).
    with pytest.warns(UserWarning, match="fresh weights"):
        assert entry.main(["summary"]) == 0


def _parser_with(name):
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("command")
    parser.set_defaults(subcommand=name)
    return parser
