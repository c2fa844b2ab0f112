"""The teacher's side of `distill`: its data read against its labels, and its logits, computed once (or cached).

The teacher labels the training set, the optional transfer set (one text a
line, Turc et al. 2019's unlabelled task text) and the dev set once, before
the student trains. With a cache folder, its logits are kept in
`TEACHER-KEY.npz`, the key a SHA-256 of the teacher preset's files, the
sequence length and the texts: a later call on the same teacher and texts
(another student, seed or loss weight) reads them instead of running the
teacher again.
"""

import hashlib
import pathlib

from keras_bert_app import errors


def read_labelled(task, path, teacher_labels, teacher):
    """A labelled file's examples, their class ids those of the teacher's label names; one line for others."""
    examples = task.read(path)
    if teacher_labels is None or examples.label_names is None:
        return examples
    unknown = [name for name in examples.label_names if name not in teacher_labels]
    if unknown:
        raise errors.DataError(
            f"{path}: labels {unknown} are not the teacher's; {teacher} was fine-tuned on {teacher_labels}. "
            "Distil on data of the teacher's task."
        )
    index = {name: i for i, name in enumerate(teacher_labels)}
    examples.labels = [index[examples.label_names[i]] for i in examples.labels]
    examples.label_names = list(teacher_labels)
    return examples


def read_unlabeled(path, text_pair_column):
    """The transfer set: one text a line, blank lines skipped; one line for an empty, binary or non-UTF-8 file."""
    from keras_bert_app.data.text_classification import TextExamples
    from keras_bert_app.data.text_file import read_text

    if text_pair_column is not None:
        raise errors.ArgumentError(
            "unlabeled", "the teacher reads text pairs; an unlabelled file holds single texts, one a line.",
        )
    data = pathlib.Path(path).read_bytes()
    if b"\x00" in data:
        line = data.count(b"\n", 0, data.index(b"\x00")) + 1
        raise errors.DataError(f"{path}:{line}: a NUL byte: a binary file, not text (one text a line).")
    texts, lines = [], []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if line.strip():
            texts.append(line.strip())
            lines.append(number)
    if not texts:
        raise errors.DataError(f"{path}: no text in the unlabelled file (one text a line expected).")
    return TextExamples(texts, None, None, None, str(path), lines)


def joined(train, transfer):
    """The labelled examples followed by the transfer set's, as one unlabelled `TextExamples`."""
    from keras_bert_app.data.text_classification import TextExamples

    if transfer is None:
        return TextExamples(train.texts, train.text_pairs, None, None, train.source, train.lines)
    return TextExamples(train.texts + transfer.texts, None, None, None,
                        f"{train.source} + {transfer.source}", train.lines + transfer.lines)




def teacher_logits(task, teacher_model, teacher, splits, batch_size, cache=None, log=None):
    """The teacher's logits on each featurized split of `splits` ({name: (split, examples)}), and whether cached.

    Args:
        task: the `TextClassification` that featurized the splits.
        teacher_model: the teacher `BertClassifier`.
        teacher: pathlib.Path. Its preset folder (its files make the key).
        splits: dict, name -> (featurized split, `TextExamples` it came from).
        batch_size: int.
        cache: pathlib.Path or None. Folder of cached logits (created).
        log: callable taking a str, or None.

    Returns:
        (dict name -> float array [examples, outputs], bool: read from the cache).
    """
    import numpy as np

    path = None
    if cache is not None:
        key = cache_key(teacher, task.sequence_length, [examples for _, examples in splits.values()])
        path = pathlib.Path(cache) / f"teacher-{key[:32]}.npz"
        if path.is_file():
            with np.load(path) as stored:
                if sorted(stored.files) == sorted(splits):
                    if log:
                        log(f"Teacher logits read from the cache {path}.")
                    return {name: stored[name] for name in splits}, True
    logits = {name: task.logits(teacher_model, split, batch_size) for name, (split, _) in splits.items()}
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(path.stem + ".tmp.npz")
            np.savez(temporary, **logits)
            temporary.replace(path)
        except OSError as error:
            raise errors.ArgumentError("teacher_cache", f"teacher_cache {cache}: cannot write there "
                                       f"({error.strerror or error}).") from None
    return logits, False


def cache_key(teacher, sequence_length, example_sets):
    """SHA-256 (hex) of the teacher preset's files (names and bytes), the sequence length and every text."""
    digest = hashlib.sha256()
    for file in sorted(path for path in pathlib.Path(teacher).rglob("*") if path.is_file()):
        digest.update(str(file.relative_to(teacher)).encode() + b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    digest.update(f"\0length {sequence_length}\0".encode())
    for examples in example_sets:
        pairs = examples.text_pairs or [None] * len(examples.texts)
        for text, pair in zip(examples.texts, pairs):
            digest.update(text.encode("utf-8") + b"\x1f" + (pair or "").encode("utf-8") + b"\x1e")
        digest.update(b"\x1d")
    return digest.hexdigest()
