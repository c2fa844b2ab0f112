"""`Option`: one option of a task, declared as plain data: a keyword of `kba.finetune` and a flag of `finetune TASK`."""

import dataclasses

from keras_bert_app import errors

OPTION_KINDS = ("file", "folder", "text", "int", "float", "bool", "names")


@dataclasses.dataclass(frozen=True)
class Option:
    """One option of a task: a keyword of `kba.finetune` and a flag of `finetune TASK`.

    Attributes:
        name: str. The keyword argument, e.g. `text_column`.
        kind: str. One of `OPTION_KINDS`: a path ("file", "folder"), "text",
            "int", "float", "bool" or "names" (a list of str; comma-separated
            on the command line).
        help: str. One line for `--help`.
        default: the value when not given.
        required: bool. Needed to fine-tune.
        choices: tuple of the allowed values, or None.
        minimum: the smallest allowed number, or None.
        flag: str. The command line's spelling (default `--` + the name with dashes).
        stored: bool. Part of a fine-tuned preset's "task" entry (training
            files are not).
    """

    name: str
    kind: str
    help: str
    default: object = None
    required: bool = False
    choices: tuple = None
    minimum: float = None
    flag: str = None
    stored: bool = True

    @property
    def command_line_flag(self):
        return self.flag or "--" + self.name.replace("_", "-")

    def check(self, value):
        """`value` checked against the option's kind; a typed error naming it otherwise."""
        if value is None:
            return None
        name = self.name
        if self.kind in ("file", "folder"):
            return errors.check_path(name, value)
        if self.kind == "text":
            value = errors.check_type(name, value, str)
        elif self.kind == "int":
            value = errors.check_int(name, value, minimum=self.minimum)
        elif self.kind == "float":
            value = errors.check_number(name, value, minimum=self.minimum)
        elif self.kind == "bool":
            value = errors.check_type(name, value, bool)
        elif self.kind == "names":
            errors.check_type(name, value, (list, tuple), "a list of str")
            for item in value:
                errors.check_type(name, item, str, "a list of str")
            if len(set(value)) != len(value) or not value:
                raise errors.ArgumentError(name, f"{name} must be distinct names, at least one; got {list(value)}.")
            value = list(value)
        if self.choices is not None:
            errors.check_choice(name, value, self.choices)
        return value
