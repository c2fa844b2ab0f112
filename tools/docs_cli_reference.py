"""The command-line reference page, generated from `keras-bert-app`'s own argument parsers.

Every command and nested subcommand (`finetune classify`, `study objectives`,
...) is found by walking the parsers' `--help` output: the entry point's
`build_parser()` is asked for the help of each path, and the subcommands a
help text lists under its positional `COMMAND`/`TASK`/... argument are
walked in turn. Nothing is retyped, so a new flag shows up at the next build.
"""

import contextlib
import io
import os
import re

HELP_WIDTH = "100"  # argparse wraps at $COLUMNS: fixed, so the page does not depend on the terminal
SECTION = re.compile(r"^(\S[^:]*):$")
FLAG = re.compile(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)")


def command_help(path):
    """The `--help` text of `keras-bert-app PATH...`, from the real parser."""
    from keras_bert_app.commands import main as entry_point

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    output = io.StringIO()
    try:
        parser = entry_point.build_parser()
        with contextlib.redirect_stdout(output):
            try:
                parser.parse_args([*path, "--help"])
            except SystemExit:
                pass
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous
    return output.getvalue()


def subcommands(help_text):
    """The subcommand names a help text lists: the choices indented under its positional metavar."""
    names, in_positionals, under_metavar = [], False, False
    for line in help_text.splitlines():
        section = SECTION.match(line)
        if section:
            in_positionals = section.group(1) == "positional arguments"
            under_metavar = False
            continue
        if not in_positionals or not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        word = line.split()[0]
        if indent == 2:
            under_metavar = word.isupper()  # COMMAND, TASK, STUDY: a subparser's metavar
        elif indent == 4 and under_metavar and re.fullmatch(r"[a-z][a-z0-9-]*", word):
            names.append(word)
    return names


def flags(help_text):
    """The `--long-options` of a help text's option lists (each option line starts at indent 2 with `-`)."""
    seen = []
    for line in help_text.splitlines():
        if not line.startswith("  -"):
            continue
        head = re.split(r"\s{2,}", line.strip())[0]  # the option's names and metavars, not its help
        for flag in FLAG.findall(head):
            if flag not in seen:
                seen.append(flag)
    return seen


def walk(path=()):
    """[(path, help text)] for the command at `path` and every subcommand below it, depth first."""
    text = command_help(list(path))
    pages = [(tuple(path), text)]
    for name in subcommands(text):
        pages.extend(walk((*path, name)))
    return pages


def _description(text):
    """The first paragraph after the usage block: the parser's description."""
    paragraphs = [block.strip() for block in text.split("\n\n") if block.strip()]
    for block in paragraphs[1:]:
        if not SECTION.match(block.splitlines()[0]):
            return " ".join(block.split())
    return ""


def render():
    """The Markdown of the whole reference page."""
    pages = walk()
    lines = [
        "# Command line",
        "",
        "`keras-bert-app COMMAND [SUBCOMMAND] [options]`. This page is generated from the command's own",
        "argument parsers by `python tools/build_docs.py`; `keras-bert-app COMMAND --help` prints the same text.",
        "Bad input exits with code 2 and one line on stderr.",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    for path, text in pages[1:]:
        anchor = "-".join(("keras-bert-app", *path))
        lines.append(f"| [`keras-bert-app {' '.join(path)}`](#{anchor}) | {_description(text)} |")
    for path, text in pages:
        name = " ".join(("keras-bert-app", *path))
        anchor = "-".join(("keras-bert-app", *path))
        level = "#" * min(2 + max(len(path) - 1, 0), 4)
        lines += ["", f"{level} {name} {{#{anchor}}}", ""]
        description = _description(text) if path else ""
        if description:
            lines += [description, ""]
        lines += ["```text", text.rstrip(), "```"]
    return "\n".join(lines) + "\n"
