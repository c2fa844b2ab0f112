"""Optional packages: each comes with an extra named by use (pyproject.toml's optional-dependencies).

The core (`pip install keras-bert-app`) installs Keras, TensorFlow,
tensorflow-text and numpy; a feature that needs more imports it through
`require` when it runs, never at import, and where the package is missing
says in one line which extra installs it:

    keras_hub = require("keras_hub", extra="convert", feature="keras-hub checkpoints")

This module imports nothing of the package but `errors`: every layer may use it.
"""

import importlib

from keras_bert_app.errors import KerasBertAppError

# extra -> the distributions it installs (pyproject.toml; tests/test_extras.py keeps them equal)
EXTRAS = {
    "convert": ("keras-hub",),
    "eval": ("scikit-learn", "scipy"),
    "serving": ("tensorflow-serving-api",),
    "bench": ("keras-hub", "transformers", "tokenizers"),
}


class MissingExtraError(KerasBertAppError, ImportError):
    """An optional package a feature needs is not installed; the message names the extra that installs it.

    Attributes:
        extra: str. The extra to install (`pip install "keras-bert-app[EXTRA]"`).
    """

    def __init__(self, message, extra):
        self.extra = extra
        super().__init__(message)


def require(module, extra, feature):
    """The module `module` (e.g. "sklearn.linear_model"), imported; `MissingExtraError` naming `extra` if absent.

    Args:
        module: str. The module to import.
        extra: str. A key of `EXTRAS`: the extra that installs it.
        feature: str. What needs it, as the user asked for it (e.g. "the linear probe").
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name is None or module.split(".")[0] != error.name.split(".")[0]:
            raise  # the package is there, and one of its own dependencies is missing: not ours to name
        top = module.split(".")[0]
        raise MissingExtraError(
            f"{feature} needs {top}, which is not installed: pip install \"keras-bert-app[{extra}]\".", extra
        ) from None
