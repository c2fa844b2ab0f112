"""Read the lines of a corpus file: strict UTF-8, `.gz` decompressed, LF, CRLF or bare-CR line ends.

Shared by the pretraining data (`data.corpus`) and the vocabulary learner
(`preprocessing.vocabulary_training`), so both read a file alike.
"""

import gzip
import zlib


def _open_binary(path):
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def read_lines(path, open_binary=None):
    """Yield `(line_number, text)` for each line of a corpus file.

    `open_binary`: optional callable opening `path` as a binary stream with
    `readline` (such as Apache Beam's `FileSystems.open`, for `gs://` and
    other remote files); by default a local file, `.gz` decompressed.

    Lines are decoded as strict UTF-8 and stripped; a blank line yields an
    empty string (a document boundary). Lines may end in LF, CRLF or a bare
    CR.

    Raises:
        ValueError: for bytes that are not UTF-8 or a corrupt `.gz` file,
            naming the file and the line.
    """
    line_number = 0
    try:
        with (open_binary or _open_binary)(path) as stream:
            for raw in _split_bare_cr(stream):
                line_number += 1
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    bad = raw[error.start : error.start + 4]
                    raise ValueError(
                        f"{path}:{line_number}: not valid UTF-8 (byte "
                        f"{bad[:1].hex()} at column {error.start + 1}, near "
                        f"{bad!r}); the corpus must be UTF-8 text."
                    ) from None
                yield line_number, text.strip()
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise ValueError(
            f"{path}:{line_number + 1}: cannot read: {error}"
        ) from None


def _split_bare_cr(stream):
    """The lines of a binary stream, a CR not followed by LF also ending a line."""
    for raw in iter(stream.readline, b""):
        if b"\r" not in raw.rstrip(b"\r\n"):
            yield raw
            continue
        body = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1] if raw.endswith((b"\n", b"\r")) else raw
        yield from body.split(b"\r")
