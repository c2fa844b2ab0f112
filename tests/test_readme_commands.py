"""Every `keras-bert-app` command line the README and the docs show parses with the real entry point's parser.

The tests of each command run it through `cli.main`; this one makes sure no
README line is left unreachable (as `evaluate squad` and `predict squad`
once were: their tests called the functions, and the command ended in an
argparse error).
"""

import pathlib
import re
import shlex

import pytest

from keras_bert_app.commands import main as entry_point

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def documentation_files():
    """README.md and the hand-written Markdown of docs/ (not the pages tools/build_docs.py generates)."""
    generated = {"reference", "data"}
    pages = [path for path in sorted((ROOT / "docs").rglob("*.md"))
             if not generated & set(path.relative_to(ROOT / "docs").parts[:-1])
             and not (path.parent.name == "results" and path.name != "index.md")]
    return [README, *pages]


def readme_commands():
    """The `keras-bert-app ...` lines of README and docs code blocks and inline code, continuations joined."""
    return [command for path in documentation_files() for command in file_commands(path)]


def file_commands(path):
    """The `keras-bert-app ...` lines of one Markdown file's code blocks and inline code."""
    text = path.read_text(encoding="utf-8")
    commands = []
    blocks, current = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            if current is None:
                current = [] if line.strip() in ("```", "```bash", "```sh") else False
            else:
                if current is not False:
                    blocks.append("\n".join(current))
                current = None
        elif current not in (None, False):
            current.append(line)
    for block in blocks:
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.strip()
            for part in re.split(r"&&|;", line):
                part = part.strip()
                if part.startswith("keras-bert-app"):
                    commands.append(part)
    for span in re.findall(r"`(keras-bert-app [^`]+)`", text):
        # Inline code in prose: full command lines only, not a bare command
        # name, an elided one ("...") or a synopsis with [optional] parts.
        if " --" in span and "..." not in span and not re.search(r"\[-", span):
            commands.append(span)
    return commands


def _argv(command):
    words = shlex.split(command, comments=True)
    words = [word for word in words if word != "..."]
    return words[1:]


def test_the_docs_are_scanned():
    names = {path.relative_to(ROOT).as_posix() for path in documentation_files()}
    assert {"README.md", "docs/getting-started.md", "docs/guides/fine-tuning.md", "docs/results/index.md"} <= names
    assert "docs/reference/cli.md" not in names  # generated from the parser itself


def test_the_readme_shows_commands_of_every_kind():
    names = {(_argv(command) or ["--help"])[0] for command in readme_commands()}
    assert {"quickstart", "pretrain", "finetune", "evaluate", "predict", "export", "convert", "bench"} <= names


@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_parses(command, capsys):
    argv = _argv(command)
    parser = entry_point.build_parser()
    if argv[-1:] == ["--help"] or argv in ([], ["COMMAND", "--help"]):
        pytest.skip("help lines")
    try:
        parser.parse_args(argv)
    except SystemExit as exit:
        pytest.fail(f"README/docs line does not parse ({exit.code}): {command}\n{capsys.readouterr().err}")
