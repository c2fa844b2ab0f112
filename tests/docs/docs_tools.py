"""Loading tools/build_docs.py and its modules (tools/ is not a package) for the docs tests."""

import pathlib
import re
import sys

TOOLS = pathlib.Path(__file__).resolve().parents[2] / "tools"


def build_docs():
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    import build_docs as module

    return module


def tables(markdown):
    """Every Markdown table of a page: a list of {header: cell} rows per table."""
    found, lines = [], markdown.splitlines()
    for index, line in enumerate(lines[:-1]):
        if line.startswith("|") and re.fullmatch(r"\|(-+:?\|)+", lines[index + 1].replace(" ", "")):
            header = [cell.strip() for cell in line.strip("|").split("|")]
            rows = []
            for row in lines[index + 2:]:
                if not row.startswith("|"):
                    break
                rows.append(dict(zip(header, (cell.strip() for cell in row.strip("|").split("|")))))
            found.append(rows)
    return found


def shows(cell, value):
    """Whether a table cell shows `value` to the cell's own precision (commas, a unit or a % sign allowed)."""
    match = re.fullmatch(r"-?[\d,]+(\.\d+)?", cell.replace("%", "").replace("x", "").strip())
    if not match:
        return False
    digits = len(match.group(1)) - 1 if match.group(1) else 0
    return abs(float(match.group(0).replace(",", "")) - value) <= 0.5 * 10 ** -digits + 1e-9
