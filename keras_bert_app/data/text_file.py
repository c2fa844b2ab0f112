"""Open a user's text file: UTF-8, with or without a byte-order mark.

Editors and spreadsheets on Windows write a UTF-8 byte-order mark (BOM) at
the start of a file; read as plain UTF-8 it sticks to the first header name
(`'\\ufefftext'`) or word. Both helpers drop it. Bytes that are not UTF-8
(a Latin-1 or UTF-16 export) raise `DataError` naming the file, line and
column instead of Python's codec error.
"""

import contextlib
import pathlib

from keras_bert_app import errors

UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


@contextlib.contextmanager
def open_text(path, newline=None):
    """The file open for reading as UTF-8 text, a leading BOM dropped.

    Args:
        path: str or path.
        newline: as `open`'s (`""` for the csv module).

    Raises:
        keras_bert_app.errors.DataError: bytes that are not UTF-8, raised
            while the caller reads (the file, line and column of the first).
    """
    try:
        with open(path, encoding="utf-8-sig", newline=newline) as file:
            yield file
    except UnicodeDecodeError:
        raise decoding_error(path) from None


def read_text(path):
    """The whole file as a str (see `open_text`)."""
    with open_text(path) as file:
        return file.read()


def decoding_error(path):
    """`DataError` for the first bytes of `path` that are not UTF-8: file, line, column and a likely cause."""
    data = pathlib.Path(path).read_bytes()
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line_start = data.rfind(b"\n", 0, error.start) + 1
        line_end = data.find(b"\n", error.start)
        line_end = len(data) if line_end < 0 else line_end
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - line_start + 1
        if data.startswith(UTF16_BOMS):
            cause = "it starts with a UTF-16 byte-order mark"
        else:
            near = data[max(line_start, error.start - 12) : min(line_end, error.start + 12)]
            cause = f"byte 0x{data[error.start]:02x} at column {column}, near {near!r}; Latin-1 or Windows-1252?"
        return errors.DataError(f"{path}:{line}: not UTF-8 text ({cause}); save the file as UTF-8.")
    return errors.DataError(f"{path}: not UTF-8 text; save the file as UTF-8.")
