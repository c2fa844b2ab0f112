"""The notebook's page on the docs site: docs/notebooks/bert_in_colab.md, written from the .ipynb.

    python tools/docs_notebook_page.py          # rewrite the page after editing the notebook

Markdown cells as they are, code cells as fenced blocks (shell lines, `!...`, as bash), and a link to
download the notebook. tests/test_notebook.py runs the notebook and checks the page is its rendering.
"""

import json
import pathlib

NOTEBOOK = pathlib.Path(__file__).resolve().parent.parent / "docs" / "notebooks" / "bert_in_colab.ipynb"
HEADER = (
    "<!-- Written by tools/docs_notebook_page.py from bert_in_colab.ipynb: edit the notebook, then run it. -->\n\n"
)


def render(notebook):
    """The markdown page of a notebook (its parsed JSON)."""
    parts = []
    for cell in notebook["cells"]:
        source = "".join(cell["source"]).strip("\n")
        if cell["cell_type"] == "markdown":
            parts.append(source)
        elif source.startswith("!"):
            parts.append("```bash\n" + "\n".join(line.removeprefix("!") for line in source.splitlines()) + "\n```")
        else:
            parts.append("```python\n" + source + "\n```")
        if not parts[1:] and cell["cell_type"] == "markdown":  # below the title
            parts.append(f"Download the notebook: [{NOTEBOOK.name}]({NOTEBOOK.name}) (File > Upload notebook in Colab).")
    return HEADER + "\n\n".join(parts) + "\n"


def main():
    page = NOTEBOOK.with_suffix(".md")
    page.write_text(render(json.loads(NOTEBOOK.read_text(encoding="utf-8"))), encoding="utf-8")
    print(f"wrote {page}")


if __name__ == "__main__":
    main()
