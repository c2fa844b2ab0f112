"""Text classification data: CSV, TSV or JSON lines with named columns -> tf.data.

Also the shared half of the sentence(-pair) readers: `TextExamples`,
`classification_examples`, which GLUE uses too.
"""

import csv
import dataclasses
import json
import math
import pathlib
import sys

from keras_bert_app.data.text_file import open_text
from keras_bert_app.errors import DataError


@dataclasses.dataclass
class TextExamples:
    """Sentence or sentence-pair examples read from one file.

    Attributes:
        texts: list of str, the first segment.
        text_pairs: list of str (the second segment) or None.
        labels: list of int class ids, float scores (regression) or None
            (unlabelled data).
        label_names: list of str, the class of each id (None for regression).
        source: str, the file they came from (for messages).
        lines: list of int, the line of each example in `source`.
    """

    texts: list
    text_pairs: list
    labels: list
    label_names: list
    source: str
    lines: list

    def __len__(self):
        return len(self.texts)


def read_rows(path, delimiter=None, header=True, columns=()):
    """(line number, row) of a CSV, TSV or JSON-lines file.

    Rows are dicts keyed by the header (or by the JSON keys), or lists when
    `header=False`. TSVs are read without quote handling, as the GLUE files
    need; CSVs with standard quoting. Blank rows are skipped, except in a
    one-column CSV, where an empty field is an empty text (so `predict`
    gives every row a line). `columns`: the names the caller reads, each of
    which must not appear twice in the header.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")
    kind = _file_kind(path, delimiter)
    if kind == "jsonl":
        yield from _read_jsonl(path)
        return
    with open_text(path, newline="") as file:
        if kind == "tsv":
            lines = ((n, line.rstrip("\r\n").split("\t")) for n, line in enumerate(file, 1))
        else:
            lines = _csv_records(path, file)
        names = None
        for number, row in lines:
            one_column_text = kind == "csv" and names is not None and len(names) == len(row) == 1
            if not any(field.strip() for field in row) and not one_column_text:
                continue
            if not header:
                yield number, row
            elif names is None:
                names = row
                _check_header(path, number, names, columns)
            elif len(row) != len(names):
                raise DataError(
                    f"{path}:{number}: expected {len(names)} fields (columns "
                    f"{names}); got {len(row)}{_quote_hint(row)}."
                )
            else:
                yield number, dict(zip(names, row))


def read_text_classification(path, text_column, label_column=None, text_pair_column=None, label_names=None,
                             regression=False, delimiter=None):
    """Read a CSV (.csv), TSV (.tsv) or JSON lines (.jsonl) file with named columns.

    Args:
        path: the file. CSV and TSV files start with a header row.
        text_column: str. Column of the text (segment A).
        label_column: str or None. Column of the label; None for unlabelled data.
        text_pair_column: str or None. Column of segment B for pair tasks.
        label_names: list of str or None. The classes, in id order; None takes
            the sorted distinct labels of this file (do this for the training
            file and pass the result for the dev file).
        regression: bool. Labels are float scores.
        delimiter: "," or "\\t" or None (from the extension).

    Returns:
        `TextExamples`.
    """
    wanted = [c for c in (text_column, text_pair_column, label_column) if c is not None]
    texts, pairs, raw_labels, lines = [], [], [], []
    for number, row in read_rows(path, delimiter, columns=wanted):
        for column in wanted:
            _check_field(path, number, row, column)
        texts.append(str(row[text_column]))
        if text_pair_column is not None:
            pairs.append(str(row[text_pair_column]))
        if label_column is not None:
            raw_labels.append(row[label_column])
        lines.append(number)
    return make_examples(
        texts, pairs if text_pair_column else None, raw_labels if label_column else None,
        label_names, regression, str(path), lines, label_column=label_column,
    )


def make_examples(texts, text_pairs, raw_labels, label_names, regression, source, lines, label_column=None):
    """`TextExamples` with labels mapped to ids (or floats), checked line by line.

    Scores must be finite numbers; class labels must not be empty (an empty
    cell would otherwise become a class of its own).
    """
    if raw_labels is None:
        return TextExamples(texts, text_pairs, None, label_names, source, lines)
    if regression:
        labels = []
        for value, line in zip(raw_labels, lines):
            try:
                score = float(value)
            except (TypeError, ValueError):
                raise DataError(f"{source}:{line}: expected a numeric score; got {value!r}.") from None
            if not math.isfinite(score):
                raise DataError(f"{source}:{line}: expected a finite numeric score; got {value!r}.")
            labels.append(score)
        return TextExamples(texts, text_pairs, labels, None, source, lines)
    raw_labels = [str(value).strip() for value in raw_labels]
    if label_names is None:
        empty = [line for value, line in zip(raw_labels, lines) if not value]
        if empty:
            column = "" if label_column is None else f" (column {label_column!r})"
            more = f", and on {len(empty) - 1} more rows" if len(empty) > 1 else ""
            raise DataError(
                f"{source}:{empty[0]}: the label{column} is empty{more}; expected a class name on every row."
            )
        label_names = sorted(set(raw_labels))
    label_names = [str(name) for name in label_names]
    index = {name: i for i, name in enumerate(label_names)}
    labels = []
    for value, line in zip(raw_labels, lines):
        if value not in index:
            raise DataError(f"{source}:{line}: label {value!r} is not one of {label_names}.")
        labels.append(index[value])
    return TextExamples(texts, text_pairs, labels, label_names, source, lines)


def count_truncated(examples, preprocessor):
    """How many examples have more tokens than the packed sequence holds."""
    return token_counts(examples, preprocessor)[0]


def token_counts(examples, preprocessor):
    """`(truncated, empty)`: examples longer than the packed sequence holds, examples with no tokens."""
    tokenizer = preprocessor.tokenizer
    lengths = tokenizer(examples.texts).row_lengths().numpy()
    budget = preprocessor.sequence_length - 2
    if examples.text_pairs is not None:
        lengths = lengths + tokenizer(examples.text_pairs).row_lengths().numpy()
        budget -= 1
    return int((lengths > budget).sum()), int((lengths == 0).sum())


def classification_examples(examples, preprocessor):
    """tf.data of single packed examples `(inputs, label)` (or `(inputs,)`), cached.

    Strings are tokenized and packed by `preprocessor` inside the pipeline,
    once: the packed examples are cached in memory for later epochs.

    Args:
        examples: `TextExamples`.
        preprocessor: `keras_bert_app.BertPreprocessor` (pads to its `sequence_length`).
    """
    import tensorflow as tf

    from keras_bert_app.data.packed_dataset import packed_examples

    if not len(examples):
        raise ValueError(f"{examples.source}: no examples.")
    features = (examples.texts,) if examples.text_pairs is None else (examples.texts, examples.text_pairs)
    dtype = "int32" if examples.label_names is not None else "float32"
    labels = () if examples.labels is None else (tf.constant(examples.labels, dtype),)
    dataset = tf.data.Dataset.from_tensor_slices((features, *labels))

    def pack(segments, *labels):
        inputs = preprocessor(segments[0] if len(segments) == 1 else tuple(segments))
        return (inputs, *labels)

    return packed_examples(dataset, pack, len(examples))


_SUFFIX_KINDS = {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".tsv": "tsv", ".txt": "tsv", ".csv": "csv"}


def _file_kind(path, delimiter):
    if delimiter in ("\t", ","):
        return "tsv" if delimiter == "\t" else "csv"
    suffix = path.suffix.lower()
    if suffix not in _SUFFIX_KINDS:
        raise ValueError(f"{path}: cannot tell the format from {suffix!r}; expected .csv, .tsv or .jsonl.")
    return _SUFFIX_KINDS[suffix]


def _read_jsonl(path):
    with open_text(path, newline="") as file:
        for number, line in enumerate(file, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise DataError(f"{path}:{number}: malformed JSON ({error.msg}).") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{number}: expected a JSON object; got {type(row).__name__}.")
            yield number, row


def _csv_records(path, file):
    """(first line, fields) of each CSV record; csv's errors as `DataError` naming the line."""
    csv.field_size_limit(sys.maxsize)
    reader = csv.reader(file)
    first = 1
    try:
        for row in reader:
            yield first, row
            first = reader.line_num + 1
    except csv.Error as error:
        raise DataError(f"{path}:{first}: not a readable CSV record ({error}).") from None


def _check_header(path, number, names, columns):
    for column in columns:
        count = names.count(column)
        if count > 1:
            raise DataError(
                f"{path}:{number}: column {column!r} appears {count} times in the header {names}; "
                "expected it once (rename the others)."
            )


def _quote_hint(row):
    """A hint for a record that swallowed line breaks: a quote opened and never closed."""
    if any("\n" in field or "\r" in field for field in row):
        return " (a quoted field runs over several lines: an unclosed quote?)"
    return ""


def _check_field(path, number, row, column):
    """A row's `column` must be there and hold text (a JSON string or number)."""
    if column not in row:
        raise DataError(f"{path}:{number}: no column {column!r}; the columns are {sorted(row)}.")
    value = row[column]
    if value is None:
        raise DataError(f"{path}:{number}: {column!r} is null; expected a string.")
    if isinstance(value, (list, dict)):
        kind = "an array" if isinstance(value, list) else "an object"
        raise DataError(f"{path}:{number}: {column!r} is {kind}; expected a string.")
