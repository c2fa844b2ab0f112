"""Run the test suite on every installed Keras backend.

Everything runs under TensorFlow; the backend-sensitive tests (marker
`all_backends`) run again under JAX and PyTorch. Extra arguments go to pytest,
e.g. `python tools/run_tests.py -m large` (every large test on TensorFlow, the
backend-sensitive ones among them on JAX and PyTorch) or `... tests/models -x`.

    python tools/run_tests.py [--backends tensorflow,jax,torch] [--workers N] [--sequential] [pytest args]

The backends run at the same time (`--sequential`: one after the other), each
backend's output printed whole when it ends. With pytest-xdist installed (the
`test` extra) TensorFlow's tests run in `--workers` processes (default: the
CPU count, at most 4) and the other backends' in half as many, a test file per
process at a time, so module-scoped fixtures are built once; `--workers 1`
runs each backend in one process. pytest's slowest tests are listed at the end.

Models keep Keras' own `jit_compile="auto"` (no XLA on a TensorFlow CPU, XLA
on JAX): the default path is the one tested; the XLA tests
(tests/training/test_xla.py) compile on purpose. JAX and TensorFlow's XLA
compile with `XLA_FLAGS=--xla_backend_optimization_level=0
--xla_llvm_disable_expensive_passes=true --xla_cpu_use_fusion_emitters=false`
(unless XLA_FLAGS is set): the tests compile hundreds of tiny programs (JAX
compiles even each eager op per shape) and run each a few times, so LLVM's
optimizations cost more than they save (JAX's model battery: 46 -> 29 CPU s),
and so does XLA's CPU fusion emitter, which gives every fusion an LLVM module
of its own (a tiny model's JAX training step: 1.7 -> 0.7 s to compile).
Results stay within the tests' tolerances; benchmarks and real runs keep
XLA's defaults. JAX also keeps the programs it compiles in a persistent
compilation cache for the run (a temporary folder, unless
JAX_COMPILATION_CACHE_DIR is set): tests that build the same tiny models
compile each program once.

Each test process gets the cores divided by the processes running at once
as its thread count (TensorFlow's intra-op pool, PyTorch's OpenMP, XLA's CPU
pool through `--xla_cpu_multi_thread_eigen=false`; 1 on 2 cores with 4
processes), unless TF_NUM_INTRAOP_THREADS is set: more threads than cores
would only spin and switch.
"""

import argparse
import contextlib
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}
FAST_XLA_COMPILE = ("--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true "
                    "--xla_cpu_use_fusion_emitters=false")
ONE_THREAD_XLA = "--xla_cpu_multi_thread_eigen=false"
COUNT = re.compile(r"(\d+) (passed|failed|skipped|deselected|error|errors)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="tensorflow,jax,torch")
    parser.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--sequential", action="store_true",
                        help="One backend after the other, each with --workers processes (default: all at once).")
    args, pytest_args = parser.parse_known_args(argv)
    backends = []
    for backend in args.backends.split(","):
        if importlib.util.find_spec(MODULES[backend]) is None:
            print(f"== {backend}: not installed, skipped")
        else:
            backends.append(backend)
    runs, at_once = [], 0
    for backend in backends:
        # All at once, TensorFlow (the whole suite) gets --workers processes, the others half as
        # many: the cores stay busy to the end, where one backend after the other leaves them
        # half idle while a backend's last test files finish.
        workers = args.workers if args.sequential or backend == "tensorflow" else max(1, args.workers // 2)
        runs.append((backend, _command(backend, workers, pytest_args)))
        at_once = workers if args.sequential else at_once + workers
    threads = max(1, (os.cpu_count() or 1) // max(1, at_once))
    if "TF_NUM_INTRAOP_THREADS" not in os.environ:
        os.environ.update(TF_NUM_INTRAOP_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
        if threads == 1 and "XLA_FLAGS" not in os.environ:
            os.environ["XLA_FLAGS"] = FAST_XLA_COMPILE + " " + ONE_THREAD_XLA
    with tempfile.TemporaryDirectory(prefix="jax_compilation_cache_") as cache:
        os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", cache)
        os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")  # tiny programs too
        results = [_run(*run) for run in runs] if args.sequential else _run_together(runs)
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    failed_backends = []
    for backend, returncode, output in results:
        summary = output.strip().splitlines()[-1] if output.strip() else ""
        for number, kind in COUNT.findall(summary):
            kind = "failed" if kind.startswith("error") else kind
            if kind in totals:
                totals[kind] += int(number)
        if returncode not in (0, 5):  # 5: no tests selected
            failed_backends.append(backend)
    print(f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped")
    if failed_backends:
        print(f"failures on: {', '.join(failed_backends)}")
        return 1
    return 0


def _command(backend, workers, pytest_args):
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=15"]
    if workers > 1 and importlib.util.find_spec("xdist") is not None and "-n" not in pytest_args:
        command += ["-n", str(workers), "--dist", "loadfile"]
    pytest_args = list(pytest_args)
    if backend != "tensorflow":
        # JAX and PyTorch rerun only the backend-sensitive tests, within any selection given:
        # `-m large` runs the large ones among them.
        if "-m" in pytest_args[:-1]:
            at = pytest_args.index("-m") + 1
            pytest_args[at] = f"all_backends and ({pytest_args[at]})"
        else:
            command += ["-m", "all_backends and not large"]
    return command + pytest_args


def _environment(backend):
    # No test may reach a hub: HF libraries stay offline.
    return dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2", HF_HUB_OFFLINE="1",
                XLA_FLAGS=os.environ.get("XLA_FLAGS", FAST_XLA_COMPILE))


def _start(backend, command, output):
    print(f"== KERAS_BACKEND={backend}: {' '.join(command[1:])}", flush=True)
    return subprocess.Popen(command, cwd=REPO_ROOT, env=_environment(backend), stdout=output,
                            stderr=subprocess.STDOUT, text=True)


def _finish(backend, process, seconds, output):
    """Print a finished backend's output and time; (backend, exit code, output)."""
    output.seek(0)
    text = output.read()
    sys.stdout.write(text)
    print(f"== {backend}: exit {process.returncode} in {seconds:.0f} s", flush=True)
    return backend, process.returncode, text


def _run(backend, command):
    with tempfile.TemporaryFile("w+") as output:
        started = time.time()
        process = _start(backend, command, output)
        process.wait()
        return _finish(backend, process, time.time() - started, output)


def _run_together(runs):
    """Every backend's pytest at once; each one's output is printed whole when it ends, in the given order."""
    with contextlib.ExitStack() as stack:
        started = time.time()
        live = []
        for backend, command in runs:
            output = stack.enter_context(tempfile.TemporaryFile("w+"))
            live.append((backend, _start(backend, command, output), output))
        ended = {}
        while len(ended) < len(live):
            time.sleep(1)
            ended.update({backend: time.time() - started for backend, process, _ in live
                          if backend not in ended and process.poll() is not None})
        return [_finish(backend, process, ended[backend], output) for backend, process, output in live]


if __name__ == "__main__":
    sys.exit(main())
