"""The command-line reference page, generated from `keras-bert-app`'s own argument parsers.

Each row of `keras_bert_app.commands.main.COMMANDS` names a module whose
`add_arguments(parser)` fills that command's parser. Here it fills a
`RecordingParser`: an `argparse.ArgumentParser` that keeps the `Action` each
`add_argument` call returns (argparse's public return value), in its groups
and nested subcommands (`finetune classify`, `study objectives`) too. Each
command gets a table of its options (option, value, default, help) that
wraps to the page, and a synopsis with its required options. Nothing is retyped, so a new command
or flag shows up at the next build.
"""

import argparse
import contextlib
import os

SYNOPSIS_WIDTH = 76  # columns of the synopsis block: it fits the page's column


class RecordingParser(argparse.ArgumentParser):
    """An ArgumentParser that records its options (`options`) and subcommands (`subcommands`)."""

    def __init__(self, *args, **kwargs):
        self.options = []  # [(Action, required group's option strings or ())]
        self.subcommands = {}  # name -> RecordingParser
        self.recording = False  # argparse's own groups (positionals, options) stay plain
        super().__init__(*args, **kwargs)
        self.recording = True

    def add_argument(self, *args, **kwargs):
        action = super().add_argument(*args, **kwargs)
        self.options.append((action, ()))
        return action

    def add_argument_group(self, *args, **kwargs):
        group = super().add_argument_group(*args, **kwargs)
        return _RecordingGroup(self, group) if self.recording else group

    def add_mutually_exclusive_group(self, *args, **kwargs):
        return _RecordingGroup(self, super().add_mutually_exclusive_group(*args, **kwargs))

    def add_subparsers(self, *args, **kwargs):
        self.subcommand_metavar = kwargs.get("metavar") or "SUBCOMMAND"
        return _RecordingSubparsers(self, super().add_subparsers(*args, **kwargs))


class _RecordingGroup:
    """An argument group (or a mutually exclusive one) whose options its parser records."""

    def __init__(self, parser, group):
        self.parser, self.group, self.members = parser, group, []

    def add_argument(self, *args, **kwargs):
        action = self.group.add_argument(*args, **kwargs)
        self.members.append(action)
        one_of = self.members if getattr(self.group, "required", False) else ()
        self.parser.options.append((action, one_of))
        return action

    def add_argument_group(self, *args, **kwargs):
        return _RecordingGroup(self.parser, self.group.add_argument_group(*args, **kwargs))

    def add_mutually_exclusive_group(self, *args, **kwargs):
        return _RecordingGroup(self.parser, self.group.add_mutually_exclusive_group(*args, **kwargs))


class _RecordingSubparsers:
    """A subparsers action whose `add_parser` records each subcommand."""

    def __init__(self, parser, subparsers):
        self.parser, self.subparsers = parser, subparsers

    def add_parser(self, name, **kwargs):
        child = self.subparsers.add_parser(name, **kwargs)
        self.parser.subcommands[name] = child
        return child


def command_parsers():
    """[(path, RecordingParser)] of every command and nested subcommand, in COMMANDS' order, depth first."""
    from keras_bert_app.commands import main as entry_point

    found = []

    def walk(path, parser):
        found.append((path, parser))
        for name, child in parser.subcommands.items():
            walk((*path, name), child)

    for name, (_, help_text) in entry_point.COMMANDS.items():
        parser = RecordingParser(prog=f"keras-bert-app {name}", description=help_text)
        entry_point.command_module(name).add_arguments(parser)
        walk((name,), parser)
    return found


def visible_options(parser):
    """[(Action, one_of)] of a parser's options as `--help` lists them (not -h, not hidden ones)."""
    return [(action, one_of) for action, one_of in parser.options
            if action.help != argparse.SUPPRESS and "-h" not in action.option_strings]


def _cell(text):
    """Text for a Markdown table cell: its pipes, asterisks and angle brackets escaped, on one line."""
    text = " ".join(str(text).split())
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*").replace("<", "&lt;")


def _names(action):
    return action.option_strings or [action.metavar or action.dest]


def value_cell(action):
    """The option's value: its choices, its type, or `flag` for a switch."""
    if action.nargs == 0:
        return "flag"
    if action.choices is not None:
        return ", ".join(f"`{choice}`" for choice in action.choices)
    kind = getattr(action.type, "__name__", None) or "text"
    kind = {"str": "text", "int": "integer", "float": "number"}.get(kind, kind.replace("_", " "))
    if action.nargs in ("+", "*"):
        kind = f"{kind}, several"
    return kind


def default_cell(action, one_of):
    if one_of:
        return "required: one of " + ", ".join(f"`{_names(member)[0]}`" for member in one_of)
    if action.required:
        return "required"
    if action.dest == "workers" and action.default == os.cpu_count():
        return "the number of CPUs"
    if action.nargs == 0 and action.default in (False, None, True):
        return "on" if action.default else "off"
    if action.default is None:
        return "-"
    if isinstance(action.default, (list, tuple)):
        return "`" + ",".join(str(value) for value in action.default) + "`"
    return f"`{action.default}`"


def help_cell(parser, action):
    """The option's help as `--help` prints it (argparse's `%(default)s`-style fields filled in)."""
    text = action.help or ""
    if "%" in text:
        text = text % {**vars(action), "prog": parser.prog}
    return _cell(text)


def _synopsis_part(action, one_of):
    if one_of:
        return "(" + " | ".join(_synopsis_part(member, ()) for member in one_of) + ")"
    name = _names(action)[0]
    if not action.option_strings or action.nargs == 0:
        return name
    metavar = action.metavar or action.dest.upper()
    return f"{name} {metavar} [{metavar} ...]" if action.nargs in ("+", "*") else f"{name} {metavar}"


def synopsis(path, parser):
    """`keras-bert-app PATH` with its required options (and subcommand), wrapped at SYNOPSIS_WIDTH columns."""
    parts, groups = [], []
    for action, one_of in visible_options(parser):
        if one_of:
            if one_of not in groups:
                groups.append(one_of)
                parts.append(_synopsis_part(action, one_of))
        elif action.required:
            parts.append(_synopsis_part(action, ()))
        elif not action.option_strings:  # an optional positional, e.g. `evaluate [squad]`
            parts.append(f"[{_synopsis_part(action, ())}]")
    if parser.subcommands:
        parts.insert(0, parser.subcommand_metavar)
    if len(parts) < len(visible_options(parser)) or parser.subcommands:
        parts.append("[options]")
    lines = [" ".join(("keras-bert-app", *path))]
    # An option stays on one line with its value; a group of alternatives too long for one
    # line breaks between its alternatives.
    parts = [piece for part in parts for piece in (
        part.replace(" | ", "\n| ").split("\n") if len(part) > SYNOPSIS_WIDTH - 4 else [part])]
    for part in parts:
        if len(lines[-1]) + 1 + len(part) > SYNOPSIS_WIDTH:
            lines.append("   ")
        lines[-1] += " " + part
    return "\n".join(lines)


def anchor(path):
    return "-".join(("keras-bert-app", *path))


def render():
    """The Markdown of the whole reference page."""
    with contextlib.redirect_stdout(None):
        commands = command_parsers()
    lines = [
        "# Command line",
        "",
        "`keras-bert-app COMMAND [SUBCOMMAND] [options]`. This page is generated from the command's",
        "own argument parsers by `python tools/build_docs.py`; `keras-bert-app COMMAND --help`",
        "prints the same options. Bad input exits with code 2 and one line on stderr.",
        "",
        "An option whose value begins with a minus sign takes it after `=`:",
        "`--layers=-1,-2` (argparse reads a separate word `-1,-2` as an option of its own).",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    for path, parser in commands:
        lines.append(f"| [`{' '.join(path)}`](#{anchor(path)}) | {_cell(parser.description or '')} |")
    for path, parser in commands:
        level = "#" * min(len(path) + 1, 4)
        lines += ["", f"{level} keras-bert-app {' '.join(path)} {{#{anchor(path)}}}", ""]
        if parser.description:
            lines += [_cell(parser.description), ""]
        lines += ["```text", synopsis(path, parser), "```", ""]
        options = visible_options(parser)
        if parser.subcommands:
            names = ", ".join(f"[`{name}`](#{anchor((*path, name))})" for name in parser.subcommands)
            lines += [f"Subcommands: {names}.", ""]
        if options:  # in a div the site's stylesheet keeps option names on one line in
            lines += ['<div class="cli-options" markdown>', "", "| option | value | default | help |", "|---|---|---|---|"]
            for action, one_of in options:
                names = ", ".join(f"`{name}`" for name in _names(action))
                lines.append(f"| {names} | {value_cell(action)} | {default_cell(action, one_of)} | "
                             f"{help_cell(parser, action)} |")
            lines += ["", "</div>"]
    return "\n".join(lines) + "\n"
