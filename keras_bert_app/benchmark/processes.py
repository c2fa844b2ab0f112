"""Subprocesses of `keras-bert-app bench`: one fresh process per measured model, on its backend."""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading

RESULT_PREFIX = "BENCH_RESULT "  # marks the worker's result line on its stdout
PACKAGE_ROOT = pathlib.Path(__file__).resolve().parents[2]  # the folder holding keras_bert_app/


def subprocess_env(backend):
    """The environment of a subprocess on `backend` that imports this copy of keras_bert_app."""
    path = os.environ.get("PYTHONPATH", "")
    return dict(
        os.environ,
        KERAS_BACKEND=backend,
        TF_CPP_MIN_LOG_LEVEL="2",
        PYTHONPATH=str(PACKAGE_ROOT) + (os.pathsep + path if path else ""),
    )


# `python -m` of this module runs `keras-bert-app` itself, as the console script does.
CONSOLE_MODULE = "keras_bert_app.commands.main"


def run_worker_process(spec, backend, timeout, log=print, module="keras_bert_app.benchmark.worker"):
    """Run one implementation in a fresh process; its result dict, or {"error": ...}.

    The worker (`python -m module`) gets `spec` as JSON (its one argument). Its progress lines
    go to `log` as they come; its stderr (framework logs) is kept for the
    error message.
    """
    log(f"\n== {spec['model']} on {backend}")
    outcome = _run([sys.executable, "-m", module, json.dumps(spec)], backend, timeout, log)
    if "error" not in outcome and outcome["result"] is None:
        return {"error": f"exit status 0 without a result line: {outcome['stderr_tail']}"}
    return outcome if "error" in outcome else outcome["result"]


def run_console_process(argv, title, backend, timeout, log=print):
    """Run `keras-bert-app ARGV` in a fresh process, as a shell runs it; {} or {"error": ...}.

    The process is the console script's own (`python -m keras_bert_app.commands.main`);
    what it measured is read from the files it writes.
    """
    log(f"\n== {title} on {backend}")
    outcome = _run([sys.executable, "-m", CONSOLE_MODULE, *argv], backend, timeout, log)
    return {"error": outcome["error"]} if "error" in outcome else {}


def _run(command, backend, timeout, log):
    """Run `command`, its stdout lines to `log`; {"result": the result line's dict or None} or {"error": ...}."""
    result = None
    with tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(
            command, env=subprocess_env(backend), stdout=subprocess.PIPE, stderr=stderr, text=True
        )
        watchdog = threading.Timer(timeout, process.kill)
        watchdog.start()
        try:
            for line in process.stdout:
                if line.startswith(RESULT_PREFIX):
                    result = json.loads(line[len(RESULT_PREFIX):])
                else:
                    log(f"  {line.rstrip()}")
            process.wait()
        finally:
            timed_out = watchdog.finished.is_set()  # set only once the timer fired
            watchdog.cancel()
            if process.poll() is None:
                process.kill()
        stderr.seek(0)
        errors = stderr.read()
    tail = " | ".join(errors.strip().splitlines()[-3:])
    if timed_out:
        return {"error": f"killed after {timeout} s (--timeout)"}
    if process.returncode != 0:
        return {"error": f"exit status {process.returncode}: {tail}"}
    return {"result": result, "stderr_tail": tail}
