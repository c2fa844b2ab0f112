"""Griffe extension (mkdocs.yml): argument types from our docstrings, for the API reference's signatures.

The package documents types in its docstrings, keras-hub style
(`name: type. meaning`), and annotates few signatures. mkdocstrings shows
types only from annotations (or `name (type): meaning`), so each function's
and each class's `__init__`'s parameters get the type their docstring's
`Args:` states, as a signature annotation of the rendered page only. The
source is not changed, and an argument whose docstring states no short type
before its first period keeps its signature as written.
"""

import ast
import re

import griffe

ARGS = re.compile(r"^(?P<indent>\s*)Args:\s*$")
ARGUMENT = re.compile(r"^(?P<indent>\s+)(?P<stars>\*{0,2})(?P<name>\w+): (?P<rest>.+)$")
MAX_TYPE_LENGTH = 48


def documented_types(docstring):
    """({argument: type}, docstring with those entries as `name (type): meaning`) of an `Args:` section."""
    types, in_args, indent = {}, False, None
    lines = docstring.splitlines()
    for index, line in enumerate(lines):
        if ARGS.match(line):
            in_args, indent = True, None
            continue
        if not in_args:
            continue
        if line.strip() and not line.startswith(" "):
            break
        found = ARGUMENT.match(line)
        if not found:
            if line.strip() and indent is not None and len(line) - len(line.lstrip()) < len(indent):
                in_args = False
            continue
        if indent is None:
            indent = found["indent"]
        if found["indent"] != indent:
            continue
        parts = re.split(r"\.(?:\s+|$)", found["rest"], maxsplit=1)
        if len(parts) < 2:
            continue
        written, meaning = parts
        kind = python_type(written)
        if kind and not found["stars"] and len(kind) <= MAX_TYPE_LENGTH:
            types[found["name"]] = kind
            if meaning.strip():  # else the line stays as written: its type is its whole description
                lines[index] = f"{indent}{found['name']} ({kind}): {meaning.strip()}"
    return types, "\n".join(lines)


def python_type(text):
    """`int or None` -> `int | None`, `list of str` -> `list[str]`: a type a formatter parses, or None."""
    kind = " ".join(text.replace("`", "").split())
    kind = re.sub(r"\b(list|tuple|dict|sequence|iterable) of (\w+(?:\.\w+)*)", r"\1[\2]", kind)
    kind = re.sub(r"\s*,?\s+or\s+|\s*,\s*", " | ", kind)
    try:
        tree = ast.parse(kind, mode="eval")
    except SyntaxError:
        return None
    allowed = (ast.Expression, ast.BinOp, ast.BitOr, ast.Name, ast.Attribute, ast.Load, ast.Constant, ast.Subscript)
    return kind if all(isinstance(node, allowed) for node in ast.walk(tree)) else None


def annotate(function, docstring):
    """Annotate the function's unannotated parameters; move each type into the docstring's `(type)`."""
    types, rewritten = documented_types(docstring.value)
    for name, kind in types.items():
        if name in function.parameters and function.parameters[name].annotation is None:
            function.parameters[name].annotation = kind
    docstring.value = rewritten


class DocstringTypes(griffe.Extension):
    """Fill unannotated parameters from the docstring's `Args:` types."""

    def on_function_instance(self, *, func, **kwargs):
        if func.docstring is not None:
            annotate(func, func.docstring)

    def on_class_members(self, *, cls, **kwargs):
        init = cls.members.get("__init__")
        if cls.docstring is not None and isinstance(init, griffe.Function):
            annotate(init, cls.docstring)
