"""Shared fixtures. The backend comes from KERAS_BACKEND (tools/run_tests.py sets it)."""

import os
import pathlib

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def load_tool(name):
    """The module of `tools/<name>.py` (not a package): its `main(argv)` is the script's command line."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def shared_data():
    """../shared/data: the real vocabularies and the Wikipedia sample."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is not here")
    return SHARED_DATA


@pytest.fixture(scope="session")
def enwiki_lines(shared_data):
    """The lines of ../shared/data's Wikipedia sample."""
    return (shared_data / "corpus" / "enwiki_sample.txt").read_text(encoding="utf-8").split("\n")


@pytest.fixture(scope="session")
def backend():
    import keras

    return keras.config.backend()


def pytest_report_header(config):
    return f"KERAS_BACKEND={os.environ.get('KERAS_BACKEND', '(default)')}"


# KBA_TEST_CPU_LOG=FILE: each test's CPU seconds (this process and the
# subprocesses it waited for), appended as "nodeid<TAB>seconds" lines. CPU
# time, unlike wall time, does not grow when other jobs share the cores, so it
# finds the tests that make CI slow on a busy machine (tools/test_cpu_report.py
# sums it per file).
_CPU_LOG = os.environ.get("KBA_TEST_CPU_LOG")


def _cpu_seconds():
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


if _CPU_LOG:

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        started = _cpu_seconds()
        yield
        with open(_CPU_LOG, "a", encoding="utf-8") as log:
            log.write(f"{os.environ.get('KERAS_BACKEND', '')}\t{item.nodeid}\t{_cpu_seconds() - started:.2f}\n")
