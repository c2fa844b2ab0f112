"""The package uses the frameworks' public APIs only, read from its source with `ast`.

- no import of `keras.src`, `tensorflow.python` or `tensorflow.core`, nor of
  `ctypes` or `gc`, and no `sys.meta_path`;
- no assignment to (or deletion of) an attribute of a module or class that is
  not ours (`warnings.x = ...`, `keras.Model.x = ...`, `setattr(tf, ...)`);
- an attribute beginning with `_` is read only where the package itself
  defines that name, except in `keras_bert_app/compat.py`, the one home of
  upstream-bug workarounds, which holds at most 6 entries.
"""

import ast
import pathlib
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "keras_bert_app"
COMPAT = PACKAGE / "compat.py"
FORBIDDEN_MODULES = ("keras.src", "tensorflow.python", "tensorflow.core", "ctypes", "gc")
# `collections.namedtuple`'s public methods carry an underscore so as not to clash with field names.
NAMEDTUPLE_METHODS = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}


def _sources():
    return {path: ast.parse(path.read_text(encoding="utf-8"), str(path)) for path in sorted(PACKAGE.rglob("*.py"))}


def _where(path, node):
    return f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"


def _forbidden(module):
    return any(module == name or module.startswith(name + ".") for name in FORBIDDEN_MODULES)


def _imported_names(tree):
    """Names bound by imports of anything but this package: modules, and classes or functions of other packages."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and not (node.module or "").startswith("keras_bert_app"):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def _root(node):
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _own_private_names(sources):
    """`_name`s the package defines (functions, classes, attributes it assigns, module globals), compat.py aside."""
    names = set()
    for path, tree in sources.items():
        if path == COMPAT:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Call) and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                # setattr(self, "_name", ...), object.__setattr__(self, "_name", ...)
                function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if function in ("setattr", "__setattr__") and isinstance(node.args[1].value, str):
                    names.add(node.args[1].value)
    return {name for name in names if name.startswith("_")} | NAMEDTUPLE_METHODS


def test_no_private_modules_nor_process_tweaks_are_imported():
    found = []
    for path, tree in _sources().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [f"{_where(path, node)} import {a.name}" for a in node.names if _forbidden(a.name)]
            elif isinstance(node, ast.ImportFrom) and not node.level and _forbidden(node.module or ""):
                found.append(f"{_where(path, node)} from {node.module}")
            elif isinstance(node, ast.Attribute) and node.attr == "meta_path" and _root(node) == "sys":
                found.append(f"{_where(path, node)} sys.meta_path")
    assert not found, "\n".join(found)


def test_nothing_assigns_to_a_module_or_class_that_is_not_ours():
    found = []
    for path, tree in _sources().items():
        imported = _imported_names(tree)
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, (ast.Assign, ast.Delete)):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for target in targets:
                for leaf in (target.elts if isinstance(target, ast.Tuple) else [target]):
                    if isinstance(leaf, ast.Attribute) and _root(leaf) in imported:
                        found.append(f"{_where(path, node)} {ast.unparse(leaf)}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr")
                    and node.args and _root(node.args[0]) in imported):
                found.append(f"{_where(path, node)} {ast.unparse(node)}")
    assert not found, "\n".join(found)


def test_private_names_of_other_libraries_are_read_only_in_compat():
    sources = _sources()
    own = _own_private_names(sources)
    found = []
    for path, tree in sources.items():
        if path == COMPAT:
            continue
        for node in ast.walk(tree):
            name = node.attr if isinstance(node, ast.Attribute) else None
            if isinstance(node, ast.ImportFrom) and not (node.module or "").startswith("keras_bert_app") and node.level == 0:
                found += [f"{_where(path, node)} from {node.module} import {a.name}" for a in node.names
                          if a.name.startswith("_")]
            if name and name.startswith("_") and not name.startswith("__") and name not in own:
                found.append(f"{_where(path, node)} .{name}")
    assert not found, "\n".join(found)


def test_compat_holds_at_most_six_entries_each_naming_its_upstream_issue():
    from keras_bert_app import compat

    assert 0 < len(compat.WORKAROUNDS) <= 6
    for name, entry in compat.WORKAROUNDS.items():
        assert entry.name == name and entry.keras_versions
        assert entry.issues and all(issue.startswith("https://github.com/") for issue in entry.issues)


@pytest.mark.parametrize("snippet, rule", [
    ("import keras.src.losses", "import keras.src"),
    ("from tensorflow.python.framework import ops", "from tensorflow.python"),
    ("import gc", "import gc"),
    ("import sys\nsys.meta_path.insert(0, None)", "sys.meta_path"),
])
def test_the_import_check_catches_what_it_forbids(snippet, rule, tmp_path, monkeypatch):
    # The checks above would pass on an empty package: here each one fails on a line it forbids.
    (tmp_path / "bad.py").write_text(snippet)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    with pytest.raises(AssertionError, match=rule.split()[-1]):
        test_no_private_modules_nor_process_tweaks_are_imported()


@pytest.mark.parametrize("snippet, check", [
    ("import warnings\nwarnings.formatwarning = print", test_nothing_assigns_to_a_module_or_class_that_is_not_ours),
    ("import keras\nsetattr(keras.Model, 'fit', None)", test_nothing_assigns_to_a_module_or_class_that_is_not_ours),
    ("def f(model):\n    return model._compute_loss()", test_private_names_of_other_libraries_are_read_only_in_compat),
    ("import sys\nframe = sys._getframe(1)", test_private_names_of_other_libraries_are_read_only_in_compat),
])
def test_the_attribute_checks_catch_what_they_forbid(snippet, check, tmp_path, monkeypatch):
    (tmp_path / "bad.py").write_text(snippet)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "COMPAT", tmp_path / "compat.py")
    with pytest.raises(AssertionError, match="bad.py"):
        check()
