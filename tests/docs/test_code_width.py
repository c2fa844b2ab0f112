"""Code on the docs' pages fits their column: at most 88 columns in the guides and in the docstrings.

The site shows a code block in a column about 90 characters wide at a 1280 px
window (tools/check_site_width.py measures it in Chromium); a longer line
would scroll sideways or be cut off. The docstrings' code blocks become the
API reference's examples, so they follow the same rule.
"""

import ast
import pathlib
import re

from tests.test_readme_commands import ROOT, documentation_files

MAX_COLUMNS = 88
FENCE = re.compile(r"^([ \t]*)```[\w-]*\n(.*?)^\1```", re.S | re.M)


def long_lines(text, where):
    found = []
    for indent, block in FENCE.findall(text):
        for line in block.splitlines():
            if len(line) - len(indent) > MAX_COLUMNS:
                found.append(f"{where}: {len(line) - len(indent)} columns: {line.strip()[:60]}")
    return found


def test_code_blocks_of_the_docs_fit_88_columns():
    found = [line for path in documentation_files()[1:]
             for line in long_lines(path.read_text(encoding="utf-8"), path.relative_to(ROOT))]
    assert not found, "\n".join(found)


def test_code_blocks_of_the_docstrings_fit_88_columns():
    found = []
    for path in sorted((ROOT / "keras_bert_app").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                docstring = ast.get_docstring(node, clean=True)
                if docstring:
                    where = f"{path.relative_to(ROOT)}:{getattr(node, 'name', 'module')}"
                    found += long_lines(docstring, where)
    assert not found, "\n".join(found)


def test_the_check_finds_a_long_line():
    assert long_lines("```python\n" + "x" * 89 + "\n```\n", "page")
    assert not long_lines("    ```python\n    " + "x" * 88 + "\n    ```\n", "page")
