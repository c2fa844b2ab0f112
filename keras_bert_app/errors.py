"""Typed errors of the stage functions.

Every stage function raises one of these for bad input, with a message that
names the argument, file, line or field, and what was expected against what
came. The command line prints it as one line on stderr and exits with code
2; Python callers catch `KerasBertAppError` (or the built-in class each one
also is: `ValueError`, `FileNotFoundError`, `FileExistsError`, `TypeError`).

This module imports nothing from the package: every layer may raise these.
"""

import pathlib


class KerasBertAppError(Exception):
    """Base class: bad input to a stage function, said in one line."""


class ArgumentError(KerasBertAppError, ValueError):
    """An argument with a value that cannot be used (out of range, unknown name, ...).

    Attributes:
        argument: str. The parameter's name, as the stage function spells it.
    """

    def __init__(self, argument, message):
        self.argument = argument
        super().__init__(message)


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong type."""


class MissingFileError(ArgumentError, FileNotFoundError):
    """A path argument that names no file (or no matching file)."""


class DataError(KerasBertAppError, ValueError):
    """Input data that cannot be read: the file, line, field and what was expected."""


class OutputExistsError(KerasBertAppError, FileExistsError):
    """An output folder that holds something else and would be overwritten."""


# === Checks used at the top of stage functions ===
def check_type(argument, value, types, expected=None):
    """`value` if it is an instance of `types`; else `ArgumentTypeError` naming `argument`.

    bool is not accepted where int or float is asked for.
    """
    types = types if isinstance(types, tuple) else (types,)
    wrong_bool = isinstance(value, bool) and bool not in types
    if not isinstance(value, types) or wrong_bool:
        expected = expected or " or ".join(t.__name__ for t in types)
        raise ArgumentTypeError(argument, f"{argument} must be {expected}; got {type(value).__name__} {value!r}.")
    return value


def check_path(argument, value):
    """`value` as an expanded `pathlib.Path`; `ArgumentTypeError` unless str or path-like."""
    check_type(argument, value, (str, pathlib.PurePath), "a path (str or pathlib.Path)")
    return pathlib.Path(value).expanduser()


def check_file(argument, value):
    """The path of an existing file; `MissingFileError` naming `argument` when there is none."""
    path = check_path(argument, value)
    if not path.is_file():
        what = "a folder, not a file" if path.is_dir() else "no such file"
        raise MissingFileError(argument, f"{argument}: {path}: {what}.")
    return path


def check_int(argument, value, minimum=None, maximum=None):
    """An int within [minimum, maximum]; typed errors naming `argument` otherwise."""
    check_type(argument, value, int)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        bounds = {(True, True): f"in [{minimum}, {maximum}]", (True, False): f">= {minimum}", (False, True): f"<= {maximum}"}
        raise ArgumentError(argument, f"{argument} must be {bounds[(minimum is not None, maximum is not None)]}; got {value}.")
    return value


def check_number(argument, value, minimum=None, maximum=None, minimum_inclusive=True):
    """A float (ints accepted) within bounds; typed errors naming `argument` otherwise."""
    check_type(argument, value, (int, float), "a number")
    below = minimum is not None and (value < minimum if minimum_inclusive else value <= minimum)
    if below or (maximum is not None and value > maximum):
        low = f"{'>=' if minimum_inclusive else '>'} {minimum}" if minimum is not None else ""
        high = f"<= {maximum}" if maximum is not None else ""
        raise ArgumentError(argument, f"{argument} must be {' and '.join(b for b in (low, high) if b)}; got {value}.")
    return float(value)


def check_choice(argument, value, choices):
    """`value` if it is one of `choices`; else `ArgumentError` listing them."""
    if value not in choices:
        raise ArgumentError(argument, f"{argument} must be one of {sorted(choices)}; got {value!r}.")
    return value
