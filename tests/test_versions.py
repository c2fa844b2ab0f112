"""The import-time check of Keras, TensorFlow and tensorflow-text: one line naming what was found and what is
needed, never a TensorFlow import; its floors are pyproject.toml's."""

import pathlib
import subprocess
import sys

import pytest

from keras_bert_app import versions

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_floors_are_pyprojects():
    tomllib = pytest.importorskip("tomllib")
    from packaging.requirements import Requirement

    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    floors = {}
    for line in dependencies:
        requirement = Requirement(line)
        floors.update({requirement.name: spec.version for spec in requirement.specifier if spec.operator == ">="})
    assert versions.FLOORS == {name: floors[name] for name in versions.FLOORS}


@pytest.mark.parametrize(
    "found, message",
    [
        ({"keras": "3.10.0", "tensorflow": "2.20.0", "tensorflow-text": "2.20.1"},
         "keras_bert_app needs newer packages than installed: keras 3.10.0 (needs >= 3.11.3). pip install -U keras"),
        ({"keras": "3.15.1", "tensorflow": "2.19.1", "tensorflow-text": "2.19.0"},
         "keras_bert_app needs newer packages than installed: tensorflow 2.19.1 (needs >= 2.20.0), tensorflow-text "
         "2.19.0 (needs >= 2.20.1). pip install -U tensorflow tensorflow-text"),
        ({"keras": "3.15.1", "tensorflow": "2.21.0", "tensorflow-text": "2.20.1"},
         "keras_bert_app: tensorflow-text 2.20.1 is built for another TensorFlow than tensorflow 2.21.0 (their minor "
         'versions must match): pip install "tensorflow-text==2.21.*".'),
    ],
)
def test_old_or_mismatched_versions_are_one_line(found, message):
    with pytest.raises(versions.IncompatibleVersionError) as caught:
        versions.check(found)
    assert str(caught.value) == message
    assert isinstance(caught.value, ImportError)


@pytest.mark.parametrize(
    "found",
    [
        {"keras": "3.11.3", "tensorflow": "2.20.0", "tensorflow-text": "2.20.1"},
        {"keras": "3.16.0.dev2027010103", "tensorflow": "2.22.0rc0", "tensorflow-text": "2.22.0rc1"},
        {"keras": "3.15.1", "tensorflow": None, "tensorflow-text": None},  # the model side on JAX or PyTorch
    ],
)
def test_supported_stacks_pass(found):
    versions.check(found)


def test_a_tensorflow_build_under_another_name_is_found():
    published = {"tensorflow-cpu": "2.20.0"}

    def metadata_version(name):
        if name not in published:
            raise versions.importlib.metadata.PackageNotFoundError(name)
        return published[name]

    assert versions.installed("tensorflow", metadata_version) == "2.20.0"
    assert versions.installed("tensorflow-text", metadata_version) is None


def test_import_checks_the_installed_versions_without_importing_tensorflow(tmp_path):
    """A fake tensorflow-text 2.19 distribution ahead on the path: `import keras_bert_app` fails with the one line;
    and where the versions fit, the import loads no TensorFlow."""
    script = (
        "import sys\n"
        "try:\n"
        "    import keras_bert_app\n"
        "except ImportError as error:\n"
        "    print('ERROR', error)\n"
        "print('tensorflow' in sys.modules)\n"
    )
    clean = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert clean.stdout.splitlines() == ["False"], clean.stderr[-2000:]
    info = tmp_path / "tensorflow_text-2.19.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tensorflow-text\nVersion: 2.19.0\n")
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"}
    old = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert old.stdout.splitlines()[0].startswith(
        "ERROR keras_bert_app needs newer packages than installed: tensorflow-text 2.19.0 (needs >= 2.20.1)."
    ), old.stdout + old.stderr[-2000:]
