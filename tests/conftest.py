"""Shared fixtures. The backend comes from KERAS_BACKEND (tools/run_tests.py sets it)."""

import os
import pathlib

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data():
    """../shared/data: the real vocabularies and the Wikipedia sample."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is not here")
    return SHARED_DATA


@pytest.fixture(scope="session")
def backend():
    import keras

    return keras.config.backend()


def pytest_report_header(config):
    return f"KERAS_BACKEND={os.environ.get('KERAS_BACKEND', '(default)')}"
