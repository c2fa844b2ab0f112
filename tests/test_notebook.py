"""The Colab notebook (docs/notebooks/bert_in_colab.ipynb) runs top to bottom on a CPU, as a user runs it.

Its code cells run in order in one fresh interpreter, with two changes: the install cell (tag `install`, the only
cell with shell lines) is skipped, since the package is installed here and there is no network, and the preset's
weights are not downloaded (`LOAD_WEIGHTS = False`: the built-in tiny preset's configuration and vocabulary, random
weights). The TPU cell takes its CPU branch. The docs site's page is the notebook's rendering.
"""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "docs" / "notebooks" / "bert_in_colab.ipynb"
OFFLINE = ("LOAD_WEIGHTS = True", "LOAD_WEIGHTS = False")

RUNNER = """
import json, sys
cells = json.load(open(sys.argv[1]))
namespace = {"__name__": "__main__"}
for number, source in enumerate(cells):
    exec(compile(source, f"notebook cell {number}", "exec"), namespace)
    print(f"== cell {number} done", flush=True)
"""


def _notebook():
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))


def _code_cells():
    """(source, tags) of each code cell, in order."""
    return [("".join(cell["source"]), cell["metadata"].get("tags", []))
            for cell in _notebook()["cells"] if cell["cell_type"] == "code"]


def test_only_the_install_cell_runs_shell_lines_and_code_fits_88_columns():
    cells = _code_cells()
    install = [source for source, tags in cells if "install" in tags]
    assert len(install) == 1 and cells[0][1] == ["install"]
    assert "-c keep.txt keras-bert-app" in install[0]
    shell = [source for source, tags in cells[1:] if any(line.lstrip().startswith(("!", "%")) for line in
                                                         source.splitlines())]
    assert not shell
    long = [line for source, _ in cells for line in source.splitlines() if len(line) > 88]
    assert not long, long


def test_the_docs_page_is_the_notebooks_rendering():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import docs_notebook_page
    finally:
        sys.path.remove(str(ROOT / "tools"))
    page = NOTEBOOK.with_suffix(".md").read_text(encoding="utf-8")
    assert page == docs_notebook_page.render(_notebook()), "run python tools/docs_notebook_page.py"
    assert "pip install -q -c keep.txt keras-bert-app" in page and "model.fit" in page
    assert "notebooks/bert_in_colab.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_the_notebook_runs_top_to_bottom_on_cpu(tmp_path):
    cells = []
    for source, tags in _code_cells():
        if "install" in tags:
            continue
        if OFFLINE[0] in source:
            source = source.replace(*OFFLINE)
        cells.append(source)
    assert sum(OFFLINE[1] in source for source in cells) == 1
    (tmp_path / "cells.json").write_text(json.dumps(cells))
    env = dict(os.environ, KERAS_BACKEND="tensorflow", PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path]))
    result = subprocess.run(
        [sys.executable, "-c", RUNNER, str(tmp_path / "cells.json")], cwd=tmp_path, capture_output=True,
        text=True, timeout=900, env=env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert out.count("done") == len(cells)
    assert "single 1 replica(s)" in out  # the TPU cell's CPU branch
    assert "'token_ids': (1, 64)" in out  # tokenized at the notebook's sequence length
    assert "Epoch 3/3" in out  # model.fit ran its three epochs
    predicted = [line.split()[0] for line in out.splitlines() if line.endswith(("cup final.", "its forecast."))]
    assert len(predicted) == 2 and set(predicted) <= {"sport", "business"}
    assert (tmp_path / "serving" / "headlines" / "1" / "saved_model.pb").is_file()
    (served,) = [line for line in out.splitlines() if line.startswith("[b'")]  # the SavedModel's answer
    labels = re.findall(r"b'(\w+)'", served)
    assert len(labels) == 2 and set(labels) <= {"sport", "business"}, served
