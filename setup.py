"""Package discovery: what pyproject.toml cannot say alone.

Every package under keras_bert_app/ is found, never listed (a new subpackage
ships without a change here), plus the built-in presets: the top-level
presets/ folder, installed as `keras_bert_app.preset_files`
(pyproject.toml's `package-dir` maps the folder, its `package-data` the
files). tests/test_packaging.py builds the wheel and checks both.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=[
        *find_namespace_packages(include=["keras_bert_app", "keras_bert_app.*"], exclude=["*.__pycache__"]),
        "keras_bert_app.preset_files",
    ],
)
