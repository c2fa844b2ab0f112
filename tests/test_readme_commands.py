"""Every `keras-bert-app` command line the README shows parses with the real entry point's parser.

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

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def readme_commands():
    """The `keras-bert-app ...` lines of README code blocks and inline code, continuations joined."""
    text = README.read_text(encoding="utf-8")
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
        pytest.fail(f"README line does not parse ({exit.code}): {command}\n{capsys.readouterr().err}")
