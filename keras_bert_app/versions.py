"""The versions of Keras, TensorFlow and tensorflow-text this package runs on, checked at import.

`import keras_bert_app` reads the installed versions from the packages'
metadata (no TensorFlow import: the package imports it lazily) and raises
`IncompatibleVersionError`, one line naming what was found and what is
needed, for a version older than the floors below or a tensorflow-text of
another minor than TensorFlow's (its ops would be undefined in the graph).
A package that is not installed is not checked: the model side runs on JAX
or PyTorch without TensorFlow.

The floors are pyproject.toml's (tests/test_versions.py keeps them equal),
the oldest the suite passes on (CI's floor job, constraints-floor.txt).
"""

import importlib.metadata
import re

from keras_bert_app.errors import KerasBertAppError

# distribution -> the oldest version the suite passes on
FLOORS = {"keras": "3.11.3", "tensorflow": "2.20.0", "tensorflow-text": "2.20.1"}
# Other distributions of the same modules (a TensorFlow build for one platform, a nightly)
ALIASES = {
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tensorflow-macos", "tensorflow-intel", "tf-nightly"),
    "tensorflow-text": ("tensorflow-text", "tensorflow-text-nightly"),
    "keras": ("keras", "keras-nightly"),
}


class IncompatibleVersionError(KerasBertAppError, ImportError):
    """An installed Keras, TensorFlow or tensorflow-text this package cannot run on."""


def parse(version):
    """`(major, minor, micro)` of a version string ("2.20.0rc1" -> (2, 20, 0)); missing parts are 0."""
    numbers = [int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3]]
    return tuple(numbers + [0] * (3 - len(numbers)))


def installed(name, metadata_version=importlib.metadata.version):
    """The installed version of `name` (any of its `ALIASES`), or None."""
    for distribution in ALIASES.get(name, (name,)):
        try:
            return metadata_version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def check(found=None):
    """Raise `IncompatibleVersionError` for a version below `FLOORS` or a TensorFlow/tensorflow-text pair of two minors.

    Args:
        found: dict `{distribution: version or None}`; default: the installed versions.
    """
    found = {name: installed(name) for name in FLOORS} if found is None else found
    too_old = [name for name, floor in FLOORS.items() if found.get(name) and parse(found[name]) < parse(floor)]
    if too_old:
        listed = ", ".join(f"{name} {found[name]} (needs >= {FLOORS[name]})" for name in too_old)
        raise IncompatibleVersionError(
            f"keras_bert_app needs newer packages than installed: {listed}. pip install -U {' '.join(too_old)}"
        )
    tensorflow, text = found.get("tensorflow"), found.get("tensorflow-text")
    if tensorflow and text and parse(tensorflow)[:2] != parse(text)[:2]:
        minor = ".".join(map(str, parse(tensorflow)[:2]))
        raise IncompatibleVersionError(
            f"keras_bert_app: tensorflow-text {text} is built for another TensorFlow than tensorflow {tensorflow} "
            f"(their minor versions must match): pip install \"tensorflow-text=={minor}.*\"."
        )
