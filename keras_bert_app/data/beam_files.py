"""The files of the Beam pipeline, checked before any worker starts: the corpus (local paths and globs, or any
file system Beam reads: gs://, s3://, ...), its first bytes (text, not binary), and the output folder's old shards.
"""

import os

from apache_beam.io.filesystems import FileSystems

from keras_bert_app import errors
from keras_bert_app.data.pretraining_records import RECORD_SUFFIX
from keras_bert_app.data.pretraining_tasks import check_output as check_local_output
from keras_bert_app.data.pretraining_tasks import input_files_of

SNIFF_BYTES = 1 << 16  # read of each file before the pipeline starts


def corpus_files(input_files):
    """The files of paths and globs: local ones as the local command lists them, others by `FileSystems.match`."""
    patterns = [input_files] if isinstance(input_files, (str, os.PathLike)) else list(input_files)
    files = []
    for pattern in map(os.fspath, patterns):
        if FileSystems.get_scheme(pattern) is None:
            matches = input_files_of([pattern])
        else:
            try:
                matches = sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
            except Exception:  # Beam's error for a path that is not there (BeamIOError)
                matches = []
            if not matches:
                raise errors.MissingFileError("input_files", f"input_files: Input pattern {pattern!r} matches no file.")
        files.extend(path for path in matches if path not in files)
    return files


def check_corpus_files(files):
    """Refuse a binary file or a corpus without text, from the first bytes of each file, before any worker starts.

    The files are read a few at a time (a bucket of many files answers in
    parallel); the first bad file in the given order is named.
    """
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=16) as pool:
        with_text = sum(pool.map(_sniff, files))
    if not with_text:
        raise errors.DataError(
            f"The corpus {files} is empty: its files hold no text (expected one sentence a line, a blank "
            "line between documents)."
        )


def _sniff(path):
    """Whether a file's first bytes hold text; `DataError` for a binary or non-UTF-8 start."""
    try:
        with FileSystems.open(path) as stream:
            head = stream.read(SNIFF_BYTES + 1)
    except Exception as error:  # a corrupt .gz, a file that vanished: one line naming it
        raise errors.DataError(f"{path}: cannot read: {error}") from None
    body = head[:SNIFF_BYTES]
    if b"\0" in body:
        offset = body.index(b"\0")
        raise errors.DataError(
            f"{path}: a binary file (a NUL byte at offset {offset}), not a corpus: expected UTF-8 text, one "
            "sentence a line."
        )
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as error:
        cut_at_the_end = error.end == len(body) and len(head) > SNIFF_BYTES
        if not cut_at_the_end:
            line = body[: error.start].count(b"\n") + 1
            raise errors.DataError(
                f"{path}:{line}: not valid UTF-8 (byte {body[error.start:error.start + 1].hex()}): "
                "a binary file or another encoding; the corpus must be UTF-8 text."
            ) from None
    return bool(body.strip()) or len(head) > SNIFF_BYTES


def check_output(output_dir, overwrite):
    """The local command's refusal of old shards, for any file system; returns the old shard names."""
    if FileSystems.get_scheme(output_dir) is None:
        return check_local_output(output_dir, overwrite)
    pattern = FileSystems.join(output_dir, f"*{RECORD_SUFFIX}")
    old = sorted(m.path.rsplit("/", 1)[-1] for m in FileSystems.match([pattern])[0].metadata_list)
    if old and not overwrite:
        raise errors.OutputExistsError(
            f"output_dir {output_dir!r} already holds {len(old)} *.tfrecord file(s) ({old[0]}, ...) from another "
            "run; choose an empty directory or overwrite them (overwrite=True, --overwrite)."
        )
    return old
