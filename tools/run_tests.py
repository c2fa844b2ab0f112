"""Run the test suite on every installed Keras backend.

Everything runs under TensorFlow; the backend-sensitive tests (marker
`all_backends`) run again under JAX and PyTorch. Extra arguments go to pytest,
e.g. `python tools/run_tests.py -m large` or `... tests/models -x`.

    python tools/run_tests.py [--backends tensorflow,jax,torch] [--workers N] [pytest args]

With pytest-xdist installed (the `test` extra) each backend's tests run in
`--workers` processes (default: the CPU count, at most 4), a test file per
process at a time, so module-scoped fixtures are built once; `--workers 1`
runs them in one process. pytest's slowest tests are listed at the end.

Under TensorFlow, `KERAS_BERT_APP_JIT_COMPILE=0` makes the models' "auto"
mean no XLA: compiling takes seconds per tiny model on a CPU, more than the
tests' few steps run (the XLA tests, tests/training/test_xla.py, unset it
and check XLA against no XLA). JAX keeps XLA: its op-by-op mode is no faster.
Both compile with `XLA_FLAGS=--xla_backend_optimization_level=0
--xla_llvm_disable_expensive_passes=true` (unless XLA_FLAGS is set): the tests
compile hundreds of tiny programs (JAX compiles even each eager op per shape)
and run each a few times, so LLVM's optimizations cost more than they save
(JAX's model battery: 46 -> 29 CPU s). Results stay within the tests'
tolerances; benchmarks and real runs keep XLA's defaults.
"""

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}
FAST_XLA_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
COUNT = re.compile(r"(\d+) (passed|failed|skipped|deselected|error|errors)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="tensorflow,jax,torch")
    parser.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1))
    args, pytest_args = parser.parse_known_args(argv)
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    failed_backends = []
    for backend in args.backends.split(","):
        if importlib.util.find_spec(MODULES[backend]) is None:
            print(f"== {backend}: not installed, skipped")
            continue
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=15"]
        if args.workers > 1 and importlib.util.find_spec("xdist") is not None and "-n" not in pytest_args:
            command += ["-n", str(args.workers), "--dist", "loadfile"]
        if backend != "tensorflow" and "-m" not in pytest_args:
            command += ["-m", "all_backends and not large"]
        command += pytest_args
        print(f"== KERAS_BACKEND={backend}: {' '.join(command[1:])}", flush=True)
        started = time.time()
        process = subprocess.run(
            command,
            cwd=REPO_ROOT,
            # No test may reach a hub: HF libraries stay offline.
            env=dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2", HF_HUB_OFFLINE="1",
                     XLA_FLAGS=os.environ.get("XLA_FLAGS", FAST_XLA_COMPILE),
                     **({"KERAS_BERT_APP_JIT_COMPILE": "0"} if backend == "tensorflow" else {})),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        sys.stdout.write(process.stdout)
        summary = process.stdout.strip().splitlines()[-1] if process.stdout.strip() else ""
        for number, kind in COUNT.findall(summary):
            kind = "failed" if kind.startswith("error") else kind
            if kind in totals:
                totals[kind] += int(number)
        print(f"== {backend}: exit {process.returncode} in {time.time() - started:.0f} s", flush=True)
        if process.returncode not in (0, 5):  # 5: no tests selected
            failed_backends.append(backend)
    print(f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped")
    if failed_backends:
        print(f"failures on: {', '.join(failed_backends)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
