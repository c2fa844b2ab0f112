"""The package's shape: imports go one way, argparse only in `commands/`, typed stage functions.

Read from the source with `ast`, imports inside functions and
`importlib.import_module("...")` of a literal name included, so a cycle
cannot hide behind a lazy import.
"""

import ast
import collections
import inspect
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "keras_bert_app"
ROOT = "keras_bert_app"
# Layers from the bottom; the most specific prefix decides. A module may
# import its own layer or lower ones, never a higher one (see ARCHITECTURE.md).
LAYERS = {
    "keras_bert_app.errors": 0,
    "keras_bert_app.presets": 0,
    "keras_bert_app.compat": 0,  # upstream-bug workarounds (keras only)
    "keras_bert_app.extras": 0,  # optional packages, each named by its extra
    "keras_bert_app.versions": 0,  # the import-time check of Keras and TensorFlow versions
    "keras_bert_app.layers": 1,
    "keras_bert_app.preprocessing": 1,
    "keras_bert_app.convert": 1,  # reading and writing foreign formats onto a given model
    "keras_bert_app.models": 2,
    "keras_bert_app.data": 2,
    "keras_bert_app.evaluation": 2,
    "keras_bert_app.training": 3,
    "keras_bert_app.tasks": 3,
    "keras_bert_app.export": 3,
    "keras_bert_app.benchmark": 3,
    "keras_bert_app.convert.checkpoint": 3,  # the convert_checkpoint stage: builds models
    "keras_bert_app.convert.task_checkpoint": 3,  # its HF task checkpoints <-> fine-tuned task presets: builds models
    "keras_bert_app.convert.electra_pair": 3,  # an ELECTRA pair as one pretrainer preset: builds models
    "keras_bert_app.convert.local_preset": 3,  # a run folder or foreign checkpoint as our preset: converts
    "keras_bert_app.demo": 4,  # the quickstart workflow (kba.quickstart)
    "keras_bert_app.commands": 5,
    "keras_bert_app.cli": 5,
}
STAGE_FUNCTIONS = (
    "build_vocabulary", "create_pretraining_data", "pretrain", "finetune", "predict", "evaluate",
    "extract_features", "convert_checkpoint", "export_for_serving", "evaluate_squad", "quickstart",
)


def _modules():
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


MODULES = _modules()


def _imports(name, path):
    """(imported module, line) pairs of one module, relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif _is_import_module_call(node):
            targets = [node.args[0].value]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for target in targets:
            yield target, node.lineno


def _is_import_module_call(node):
    """`importlib.import_module("name")` (or `import_module("name")`) with a literal name."""
    if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Constant):
        return False
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    return name == "import_module" and isinstance(node.args[0].value, str)


def _graph():
    edges = collections.defaultdict(dict)
    for name, path in MODULES.items():
        for target, line in _imports(name, path):
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target.startswith(ROOT) and target != name:
                edges[name][target] = line
    return edges


def _layer(name):
    matches = [prefix for prefix in LAYERS if name == prefix or name.startswith(prefix + ".")]
    return LAYERS[max(matches, key=len)] if matches else None


def _cycles(edges):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(MODULES):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_layer():
    unplaced = [name for name in MODULES if name != ROOT and _layer(name) is None]
    assert not unplaced, f"modules outside the layering of ARCHITECTURE.md: {unplaced}"


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_a_lazy_import_module_counts_as_an_import():
    # A cycle hidden behind importlib (beam_pipeline <-> create_pretraining_data, once) is found.
    module = ast.parse('def f():\n    return importlib.import_module("keras_bert_app.data.beam_pipeline")\n')
    assert [node.args[0].value for node in ast.walk(module) if _is_import_module_call(node)] == [
        "keras_bert_app.data.beam_pipeline"
    ]
    assert "keras_bert_app.data.beam_pipeline" in _graph()["keras_bert_app.data.create_pretraining_data"]


# Packages of one layer that import nothing from each other: the data side makes the batches a model reads and
# knows no model (a choice that depends on the model, such as how to pad for it, is passed in by its caller).
APART = (("keras_bert_app.data", "keras_bert_app.models"),
         # metrics take predictions: the models are run by their callers
         ("keras_bert_app.evaluation", "keras_bert_app.models"))


def test_packages_kept_apart_import_nothing_from_each_other():
    crossing = [
        f"{name}:{line} imports {target}" for name, targets in _graph().items() for target, line in targets.items()
        for first, second in APART
        if {_package(name, first, second), _package(target, first, second)} == {first, second}
    ]
    assert not crossing, "\n".join(crossing)


def _package(name, *packages):
    return next((package for package in packages if name == package or name.startswith(package + ".")), None)


def test_imports_go_down_the_layers():
    upward = [
        f"{name}:{line} imports {target} (layer {_layer(target)} > {_layer(name)})"
        for name, targets in _graph().items() if name != ROOT
        for target, line in targets.items()
        if target != ROOT and _layer(target) > _layer(name)
    ]
    assert not upward, "\n".join(upward)


def test_only_the_public_facade_imports_the_package_root():
    # `from keras_bert_app import BertEncoder` inside the package would route
    # through the lazy facade and hide the real dependency.
    offenders = [
        f"{name}:{line}" for name, targets in _graph().items() if name != ROOT
        for target, line in targets.items() if target == ROOT
    ]
    assert not offenders, offenders


def test_argparse_and_sys_exit_only_in_commands():
    offenders = []
    for name, path in MODULES.items():
        if _layer(name) == LAYERS["keras_bert_app.commands"]:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [alias.name for alias in node.names] + [getattr(node, "module", None) or ""]
                if "argparse" in names:
                    offenders.append(f"{name}:{node.lineno} imports argparse")
            if isinstance(node, ast.Attribute) and node.attr == "exit" and getattr(node.value, "id", "") == "sys":
                offenders.append(f"{name}:{node.lineno} calls sys.exit")
    assert not offenders, offenders


@pytest.mark.parametrize("name", STAGE_FUNCTIONS)
def test_stage_functions_are_public_typed_and_take_no_args_namespace(name):
    import keras_bert_app as kba

    function = getattr(kba, name)
    assert name in kba.__all__
    assert function.__doc__ and len(function.__doc__.strip()) > 40
    signature = inspect.signature(function)
    assert not {"args", "argv"} & set(signature.parameters), f"{name} takes {list(signature.parameters)}"
    untyped = [p.name for p in signature.parameters.values() if p.annotation is inspect.Parameter.empty and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    assert not untyped, f"{name}: parameters without a type: {untyped}"
    assert signature.return_annotation is not inspect.Signature.empty, f"{name} has no return type"


def test_the_layer_rule_catches_an_upward_import(tmp_path):
    # The checker itself: a model module importing a command is reported.
    edges = {"keras_bert_app.models.x": {"keras_bert_app.commands.main": 3}}
    upward = [t for n, ts in edges.items() for t in ts if _layer(t) > _layer(n)]
    assert upward == ["keras_bert_app.commands.main"]
    assert _cycles({"keras_bert_app.errors": {"keras_bert_app.presets": 1}, "keras_bert_app.presets": {"keras_bert_app.errors": 2}}) == [
        ["keras_bert_app.errors", "keras_bert_app.presets"]
    ]
