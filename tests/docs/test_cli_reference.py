"""The generated command-line reference lists every subcommand and flag that `keras-bert-app --help` shows.

The help texts come from the real entry point (`keras_bert_app.cli.main`),
read here independently of the generator: each command's section of the
page must hold a table row for every option of that help, and every option
must have help text.
"""

import contextlib
import io
import re

import pytest

from keras_bert_app import cli
from keras_bert_app.commands import main as entry_point
from tests.docs.docs_tools import build_docs

tools = build_docs()


def help_text(path):
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        try:
            cli.main([*path, "--help"])
        except SystemExit as exit:
            assert exit.code == 0
    return output.getvalue()


def all_helps(path=()):
    """{path: help} of the command and every subcommand its help lists (under COMMAND, TASK, STUDY, ...)."""
    text = help_text(path)
    found = {path: text}
    block = re.search(r"positional arguments:\n(.*?)(?:\n\S|\Z)", text, re.S)
    metavar = None
    for line in (block.group(1).splitlines() if block else []):
        if re.match(r"  [A-Z]+$", line):
            metavar = line.strip()
        elif metavar and re.match(r"    [a-z][a-z0-9-]*( |$)", line):
            found.update(all_helps((*path, line.split()[0])))
    return found


def options(text):
    return {flag for line in text.splitlines() if line.startswith("  -")
            for flag in re.findall(r"--[a-z0-9-]+", re.split(r"\s{2,}", line.strip())[0])}


def options_without_help(text):
    """The option lines of a help text that have no help: nothing after the names, nor on the next line."""
    lines = text.splitlines() + [""]
    missing = []
    for line, following in zip(lines, lines[1:]):
        if not line.startswith("  -"):
            continue
        has_help = len(re.split(r"\s{2,}", line.strip(), maxsplit=1)) == 2
        continued = following.startswith("   ") and following.strip() and not following.startswith("  -")
        if not (has_help or continued):
            missing.append(line.strip())
    return missing


def sections(page):
    """{heading text: section body} of the reference page."""
    parts = re.split(r"^#{1,4} (keras-bert-app[^\n{]*?) \{#[^}]*\}\n", page, flags=re.M)
    return {parts[index].strip(): parts[index + 1] for index in range(1, len(parts), 2)}


@pytest.fixture(scope="module")
def helps():
    return all_helps()


@pytest.fixture(scope="module")
def page():
    return tools.docs_cli_reference.render()


def test_every_command_and_flag_is_a_row_of_the_reference(helps, page):
    by_heading = sections(page)
    assert {("finetune", "classify"), ("study", "objectives"), ("pretrain",), ("quickstart",)} <= helps.keys()
    for path, text in helps.items():
        if not path:
            continue
        name = " ".join(("keras-bert-app", *path))
        assert name in by_heading, f"{name} has no section"
        rows = [line for line in by_heading[name].splitlines() if line.startswith("| `-")]
        for flag in options(text) - {"--help"}:
            (row,) = [row for row in rows if re.search(rf"`{re.escape(flag)}`", row.split(" | ")[0])]
            cells = [cell.strip() for cell in row.strip("|").split(" | ")]
            assert len(cells) == 4 and all(cells[:3]), row  # option, value, default, help
        assert len(rows) == len(options(text) - {"--help"}) - sum(
            1 for flag in options(text) if flag.startswith("--no-") and flag.replace("--no-", "--") in options(text))
    assert len(by_heading) == len(helps) - 1


def test_every_flag_has_help(helps, page):
    missing = {" ".join(path): lines for path, text in helps.items() if (lines := options_without_help(text))}
    assert not missing, missing
    for row in re.findall(r"^\| `-.*\|$", page, re.M):
        assert row.rstrip("|").rsplit(" | ", 1)[1].strip(), row


def test_the_help_check_notices_a_flag_without_help():
    text = "options:\n  -h, --help   show this help\n  --seed SEED\n  --long-option-name LONG_OPTION_NAME\n" \
           "                        the help on its own line\n  --last\n"
    assert options_without_help(text) == ["--seed SEED", "--last"]


def test_the_command_table_lists_every_command(helps, page):
    listed = set(re.findall(r"^\| \[`([^`]+)`\]\(#keras-bert-app", page, re.M))
    assert listed == {" ".join(path) for path in helps if path}


def test_the_page_fits_its_column(page):
    """Nothing in a code block is wider than 76 columns; tables wrap (no preformatted help texts)."""
    blocks = re.findall(r"^```text\n(.*?)^```", page, re.S | re.M)
    assert len(blocks) == len(sections(page))
    assert max(len(line) for block in blocks for line in block.splitlines()) <= 76


def test_layers_takes_negative_indices_after_an_equals_sign(capsys):
    """`--layers=-1,-2` parses with argparse's public behaviour; `--layers -1,-2` is argparse's one-line error."""
    argv = ["extract-features", "--input", "in.txt", "--preset", "P", "--output", "out.jsonl"]
    parser = entry_point.build_parser()
    assert parser.parse_args([*argv, "--layers=-1,-2"]).layers == "-1,-2"
    assert parser.parse_args([*argv, "--layers", "-1"]).layers == "-1"
    with pytest.raises(SystemExit) as exit:
        cli.main([*argv, "--layers", "-1,-2"])
    assert exit.value.code == 2
    assert "argument --layers: expected one argument" in capsys.readouterr().err
