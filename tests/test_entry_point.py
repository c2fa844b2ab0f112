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


@pytest.mark.parametrize("given", [None, "1"])
def test_run_process_leaves_op_stacks_out_unless_the_environment_keeps_them(given, tmp_path):
    env = {name: value for name, value in __import__("os").environ.items() if name != "KERAS_BERT_APP_OP_STACKS"}
    if given is not None:
        env["KERAS_BERT_APP_OP_STACKS"] = given
    probe = "import os, sys\nfrom keras_bert_app.commands import main as entry\nentry.main = lambda argv: 0\n" \
        "entry.run_process([])\nprint(os.environ.get('KERAS_BERT_APP_OP_STACKS'))"
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                            env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0" if given is None else given]


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


MODULES_PROBE = """
import json, sys
from keras_bert_app.commands import main as entry
PACKAGES = ("sklearn", "matplotlib", "scipy", "jax")
{body}
print(json.dumps({{"code": code, "loaded": [name for name in PACKAGES if name in sys.modules], "after": after}}))
"""


def _modules_probe(body, argv, tmp_path):
    script = MODULES_PROBE.format(body=body)
    env = {**__import__("os").environ, "KERAS_BACKEND": "tensorflow"}
    result = subprocess.run([sys.executable, "-c", script, *argv], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_command_does_not_load_the_integrations_tensorflow_would_import_for_nothing(tmp_path):
    # `summary` imports TensorFlow and Keras and builds an encoder; plain `import tensorflow` loads all four packages.
    report = _modules_probe("code = entry.run_process(sys.argv[1:])\nafter = None", ["summary", "--preset",
                                                                                    "bert_tiny_uncased"], tmp_path)
    assert report["code"] == 0
    assert report["loaded"] == []
    plain = _modules_probe("import tensorflow\ncode = 0\nafter = None", [], tmp_path)
    assert set(plain["loaded"]) >= {"sklearn", "matplotlib", "scipy"}  # what there is to skip (jax: when installed)


def test_a_command_that_uses_those_packages_still_gets_them(tmp_path):
    # The quickstart fits scikit-learn probes and draws with matplotlib inside the same process.
    body = """
def command(argv=None):
    import tensorflow
    import keras.src.wrappers.fixes as keras_sklearn_fixes
    import matplotlib.pyplot
    from sklearn.linear_model import LogisticRegression
    LogisticRegression().fit([[0.0], [1.0]], [0, 1])
    global after
    after = keras_sklearn_fixes.sklearn is None  # Keras' own wrapper stayed off
    return 0
entry.main = command
code = entry.run_process([])
"""
    report = _modules_probe(body, [], tmp_path)
    assert report["code"] == 0
    assert {"sklearn", "matplotlib"} <= set(report["loaded"])
    assert report["after"] is True


FAULTS_PROBE = """
import ctypes, json, resource, sys
from keras_bert_app.commands import main as entry
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
if sys.argv[1] == "process":
    entry.run_process(["summary", "--preset", sys.argv[2]])
def faults_of_a_48_mb_tensor():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    # Allocated, written and freed, as TensorFlow's CPU allocator does a step's gradient.
    address = libc.malloc(48 << 20)
    ctypes.memset(address, 1, 48 << 20)
    libc.free(address)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
faults_of_a_48_mb_tensor()
print(json.dumps([faults_of_a_48_mb_tensor() for _ in range(3)]))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_the_process_reuses_the_memory_of_a_freed_large_tensor(tmp_path):
    def faults(mode):
        argv = [sys.executable, "-c", FAULTS_PROBE, mode, str(tmp_path / "no_such_preset")]
        result = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    # A plain process maps 48 MB afresh each time: about 12,000 pages, each a fault.
    assert min(faults("plain")) > 10_000
    # The console script's process keeps it in malloc's heap and reuses those pages.
    assert max(faults("process")) < 500


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


def test_other_packages_warnings_keep_pythons_format(monkeypatch):
    import warnings

    original, shown = warnings.formatwarning, []
    monkeypatch.setattr(entry, "command_module", lambda name: type("M", (), {"run": staticmethod(
        lambda args: shown.append(warnings.formatwarning("deprecated", FutureWarning, "/elsewhere/lib.py", 3, "x()"))
    )}))
    monkeypatch.setattr(entry, "build_parser", lambda: _parser_with("summary"))
    assert entry.main(["summary"]) == 0
    assert shown == ["/elsewhere/lib.py:3: FutureWarning: deprecated\n  x()\n"]
    assert warnings.formatwarning is original  # restored when the command returns


def _parser_with(name):
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("command")
    parser.set_defaults(_command=name)
    return parser


ANNOTATIONS_PROBE = """
import json, typing
from keras_bert_app.commands import main as entry
seen = {}
def command(argv=None):
    first, again = typing.ForwardRef("_atypes.Float32"), typing.ForwardRef("_atypes.Float32")
    seen["shared"] = first.__forward_code__ is again.__forward_code__
    seen["value"] = eval(first.__forward_code__, {"_atypes": type("A", (), {"Float32": 32})})
    seen["other"] = compile("1 + 1", "<probe>", "exec") is compile("1 + 1", "<probe>", "exec")
    return 0
entry.main = command
code = entry.run_process([])
after = typing.ForwardRef("_atypes.Float32").__forward_code__ is typing.ForwardRef("_atypes.Float32").__forward_code__
print(json.dumps({"code": code, **seen, "after": after, "left": "compile" in vars(typing)}))
"""


def test_run_process_compiles_each_string_annotation_once_and_only_while_it_runs(tmp_path):
    result = subprocess.run([sys.executable, "-c", ANNOTATIONS_PROBE], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    # One code object per annotation while the command runs (TensorFlow's op modules repeat a few dozen
    # of them 18,000 times), evaluating as before; other compiles and the process after it are as Python has them.
    assert report == {"code": 0, "shared": True, "value": 32, "other": False, "after": False, "left": False}


ONEDNN_PROBE = """
import json, os
from keras_bert_app.commands import main as entry
seen = {}
def command(argv=None):
    from tensorflow.python.util import _pywrap_util_port
    seen.update(variable=os.environ.get("TF_ENABLE_ONEDNN_OPTS"), on=bool(_pywrap_util_port.IsMklEnabled()))
    return 0
entry.main = command
entry.run_process([])
print(json.dumps(seen))
"""


@pytest.mark.parametrize("given", [None, "0"])
def test_run_process_turns_tensorflows_onednn_kernels_on_unless_the_environment_says_otherwise(given, tmp_path):
    # TensorFlow turns them on by itself only on CPUs with AVX-512 features; on AVX2 its Eigen kernels ran
    # MiniLM-L6's fine-tuning steps about a sixth slower. The variable is read when TensorFlow loads.
    env = {name: value for name, value in __import__("os").environ.items() if name != "TF_ENABLE_ONEDNN_OPTS"}
    if given is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = given
    result = subprocess.run([sys.executable, "-c", ONEDNN_PROBE], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["variable"] == ("1" if given is None else given)
    if given == "0":
        assert report["on"] is False
    elif __import__("platform").machine() in ("x86_64", "AMD64"):
        assert report["on"] is True
