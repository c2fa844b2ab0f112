"""Text classification data: CSV, TSV or JSON lines with named columns -> tf.data.

Also the shared half of the sentence(-pair) readers: `TextExamples`,
`classification_examples` and `classification_dataset`, which GLUE uses too.
"""

import csv
import dataclasses
import json
import pathlib
import sys


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


def read_rows(path, delimiter=None, header=True):
    """(line number, row) of a CSV, TSV or JSON-lines file.

    Rows are dicts keyed by the header (or by the JSON keys), or lists when
    `header=False`. TSVs are read without quote handling, as the GLUE files
    need; CSVs with standard quoting.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")
    kind = _file_kind(path, delimiter)
    if kind == "jsonl":
        yield from _read_jsonl(path)
        return
    with path.open(encoding="utf-8", newline="") as file:
        if kind == "tsv":
            lines = ((n, line.rstrip("\r\n").split("\t")) for n, line in enumerate(file, 1))
        else:
            csv.field_size_limit(sys.maxsize)
            reader = csv.reader(file)
            lines = ((reader.line_num, row) for row in reader)
        columns = None
        for number, row in lines:
            if not any(field.strip() for field in row):
                continue
            if not header:
                yield number, row
            elif columns is None:
                columns = row
            elif len(row) != len(columns):
                raise ValueError(
                    f"{path}:{number}: expected {len(columns)} fields (columns "
                    f"{columns}); got {len(row)}."
                )
            else:
                yield number, dict(zip(columns, row))


def read_text_classification(
    path,
    text_column,
    label_column=None,
    text_pair_column=None,
    label_names=None,
    regression=False,
    delimiter=None,
):
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
    for number, row in read_rows(path, delimiter):
        missing = [c for c in wanted if c not in row or row[c] is None]
        if missing:
            raise ValueError(
                f"{path}:{number}: no column {missing[0]!r}; the columns are {sorted(row)}."
            )
        texts.append(str(row[text_column]))
        if text_pair_column is not None:
            pairs.append(str(row[text_pair_column]))
        if label_column is not None:
            raw_labels.append(row[label_column])
        lines.append(number)
    return make_examples(
        texts, pairs if text_pair_column else None, raw_labels if label_column else None,
        label_names, regression, str(path), lines,
    )


def make_examples(texts, text_pairs, raw_labels, label_names, regression, source, lines):
    """`TextExamples` with labels mapped to ids (or floats), checked line by line."""
    if raw_labels is None:
        return TextExamples(texts, text_pairs, None, label_names, source, lines)
    if regression:
        labels = []
        for value, line in zip(raw_labels, lines):
            try:
                labels.append(float(value))
            except (TypeError, ValueError):
                raise ValueError(f"{source}:{line}: expected a numeric score; got {value!r}.") from None
        return TextExamples(texts, text_pairs, labels, None, source, lines)
    raw_labels = [str(value).strip() for value in raw_labels]
    if label_names is None:
        label_names = sorted(set(raw_labels))
    label_names = [str(name) for name in label_names]
    index = {name: i for i, name in enumerate(label_names)}
    labels = []
    for value, line in zip(raw_labels, lines):
        if value not in index:
            raise ValueError(f"{source}:{line}: label {value!r} is not one of {label_names}.")
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
    if examples.labels is not None:
        dtype = "int32" if examples.label_names is not None else "float32"
        dataset = tf.data.Dataset.from_tensor_slices((features, tf.constant(examples.labels, dtype)))
    else:
        dataset = tf.data.Dataset.from_tensor_slices((features,))

    def pack(segments, *labels):
        inputs = preprocessor(segments[0] if len(segments) == 1 else tuple(segments))
        return (inputs, *labels)

    return packed_examples(dataset, pack, len(examples))


def classification_dataset(examples, preprocessor, batch_size, shuffle=False, seed=None, bucketing=False):
    """tf.data batches `(inputs, labels)` (or `inputs` when unlabelled).

    Args:
        examples: `TextExamples`.
        preprocessor: `keras_bert_app.BertPreprocessor`.
        batch_size: int.
        shuffle: bool. Shuffle the examples each epoch (training).
        seed: int or None. Shuffle seed.
        bucketing: bool. Pad each batch to its longest example rounded up
            to a bucket length, batches grouped by length
            (`bucketing.grouped_batches`); False: every batch to the
            preprocessor's `sequence_length`.

    Returns:
        `tf.data.Dataset` of `({"token_ids", "segment_ids", "padding_mask"}, labels)`.
    """
    from keras_bert_app.data.bucketing import grouped_batches

    return grouped_batches(
        classification_examples(examples, preprocessor), len(examples), batch_size, preprocessor.sequence_length,
        shuffle=shuffle, seed=seed, bucketing=bucketing,
    )


def _file_kind(path, delimiter):
    if delimiter == "\t":
        return "tsv"
    if delimiter == ",":
        return "csv"
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if suffix in (".tsv", ".txt"):
        return "tsv"
    if suffix == ".csv":
        return "csv"
    raise ValueError(f"{path}: cannot tell the format from {suffix!r}; expected .csv, .tsv or .jsonl.")


def _read_jsonl(path):
    with path.open(encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: malformed JSON ({error.msg}).") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{number}: expected a JSON object; got {type(row).__name__}.")
            yield number, row
