"""The generated command-line reference lists every subcommand and flag that `keras-bert-app --help` shows.

The help texts come from the real entry point (`keras_bert_app.cli.main`),
read here independently of the generator: each command's section of the
page must hold its help, and every option line of that help.
"""

import contextlib
import io
import re

from keras_bert_app import cli
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


def sections(page):
    """{heading text: section body} of the reference page."""
    parts = re.split(r"^#{1,4} (keras-bert-app[^\n{]*?) \{#[^}]*\}\n", page, flags=re.M)
    return {parts[index].strip(): parts[index + 1] for index in range(1, len(parts), 2)}


def test_every_command_and_flag_is_in_the_reference():
    page = tools.docs_cli_reference.render()
    by_heading = sections(page)
    helps = all_helps()
    assert {("finetune", "classify"), ("study", "objectives"), ("pretrain",), ("quickstart",)} <= helps.keys()
    for path, text in helps.items():
        name = " ".join(("keras-bert-app", *path))
        assert name in by_heading, f"{name} has no section"
        section = by_heading[name]
        for flag in options(text):
            assert re.search(rf"^  .*{re.escape(flag)}\b", section, re.M), f"{name}: {flag} missing"
        assert text.splitlines()[0].split("[")[0].strip() in section  # the usage line
    assert len(by_heading) == len(helps)


def test_the_command_table_lists_every_command():
    page = tools.docs_cli_reference.render()
    listed = set(re.findall(r"^\| \[`(keras-bert-app [^`]+)`\]", page, re.M))
    assert listed == {" ".join(("keras-bert-app", *path)) for path in all_helps() if path}
