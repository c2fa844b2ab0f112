"""`tools/run_tests.py`: which tests each backend runs."""

from tests.conftest import load_tool


def _runner():
    return load_tool("run_tests")


def _marker(command):
    """The pytest marker expression (the first `-m` is `python -m pytest`)."""
    flags = [i for i, word in enumerate(command) if word == "-m"][1:]
    return command[flags[0] + 1] if flags else None


def test_jax_and_torch_rerun_only_the_backend_sensitive_tests_of_a_selection():
    runner = _runner()
    assert _marker(runner._command("tensorflow", 1, [])) is None
    assert _marker(runner._command("jax", 1, [])) == "all_backends and not large"
    assert _marker(runner._command("tensorflow", 1, ["-m", "large"])) == "large"
    for backend in ("jax", "torch"):
        command = runner._command(backend, 1, ["-m", "large", "tests/training", "-x"])
        assert _marker(command) == "all_backends and (large)"
        assert command[-2:] == ["tests/training", "-x"] and command.count("-m") == 2
