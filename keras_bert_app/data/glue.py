"""GLUE's distributed TSV files (Wang et al. 2018) -> `TextExamples`.

A task folder (e.g. `glue_data/MRPC`) holds `train.tsv` and `dev.tsv` (MNLI:
`dev_matched.tsv` and `dev_mismatched.tsv`), as written by GLUE's download
script. CoLA's files have no header (columns: source, label, original label,
sentence), except its test.tsv (index, sentence); the others have a header
row naming their columns.
"""

import collections
import pathlib

from keras_bert_app.data.text_classification import make_examples
from keras_bert_app.data.text_classification import read_rows

GlueTask = collections.namedtuple(
    "GlueTask",
    ["text_column", "text_pair_column", "label_column", "label_names", "metrics", "dev_files"],
)

# Column names (CoLA: column indices), labels in id order (None: regression), metrics.
GLUE_TASKS = {
    "cola": GlueTask(3, None, 1, ("0", "1"), ("matthews_correlation",), ("dev",)),
    "sst2": GlueTask("sentence", None, "label", ("0", "1"), ("accuracy",), ("dev",)),
    "mrpc": GlueTask("#1 String", "#2 String", "Quality", ("0", "1"), ("accuracy", "f1"), ("dev",)),
    "stsb": GlueTask("sentence1", "sentence2", "score", None, ("pearson", "spearman"), ("dev",)),
    "qqp": GlueTask("question1", "question2", "is_duplicate", ("0", "1"), ("accuracy", "f1"), ("dev",)),
    "mnli": GlueTask(
        "sentence1", "sentence2", "gold_label", ("contradiction", "entailment", "neutral"),
        ("accuracy",), ("dev_matched", "dev_mismatched"),
    ),
    "qnli": GlueTask("question", "sentence", "label", ("entailment", "not_entailment"), ("accuracy",), ("dev",)),
    "rte": GlueTask("sentence1", "sentence2", "label", ("entailment", "not_entailment"), ("accuracy",), ("dev",)),
    "wnli": GlueTask("sentence1", "sentence2", "label", ("0", "1"), ("accuracy",), ("dev",)),
}


def glue_task(name):
    """The `GlueTask` of a name such as "MRPC", "sst-2" or "STS-B"."""
    key = str(name).lower().replace("-", "").replace("_", "")
    if key not in GLUE_TASKS:
        raise ValueError(f"Unknown GLUE task {name!r}: expected one of {sorted(GLUE_TASKS)}.")
    return GLUE_TASKS[key]


def glue_file(data_dir, split):
    """The TSV of a split ("train", "dev", "dev_matched", "test", ...) in a task folder."""
    path = pathlib.Path(data_dir) / f"{split}.tsv"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such GLUE file (expected {split}.tsv in {data_dir}).")
    return path


def read_glue(path, task_name, labeled=True):
    """Read one GLUE TSV of a task.

    Args:
        path: a `train.tsv`, `dev*.tsv` or a TSV in the same layout.
        task_name: str. A key of `GLUE_TASKS` (case and dashes ignored).
        labeled: bool. False for files without labels (GLUE's test files).

    Returns:
        `TextExamples` with the task's label names.
    """
    task = glue_task(task_name)
    if not labeled and isinstance(task.text_column, int) and _first_field(path) == "index":
        task = task._replace(text_column="sentence")  # CoLA's test.tsv: a header, then index and sentence
    header = not isinstance(task.text_column, int)
    wanted = [task.text_column, task.text_pair_column, task.label_column if labeled else None]
    wanted = [column for column in wanted if column is not None]
    texts, pairs, labels, lines = [], [], [], []
    for number, row in read_rows(path, delimiter="\t", header=header, columns=wanted if header else ()):
        missing = [column for column in wanted if (column not in row if header else column >= len(row))]
        if missing:
            columns = sorted(row) if header else f"{len(row)} fields"
            raise ValueError(f"{path}:{number}: no column {missing[0]!r} (got {columns}).")
        texts.append(row[task.text_column])
        if task.text_pair_column is not None:
            pairs.append(row[task.text_pair_column])
        if labeled:
            labels.append(row[task.label_column])
        lines.append(number)
    return make_examples(
        texts, pairs if task.text_pair_column is not None else None, labels if labeled else None,
        list(task.label_names) if task.label_names else None, task.label_names is None, str(path), lines,
        label_column=task.label_column,
    )


def _first_field(path):
    """The first tab-separated field of a file's first line ("" for an empty or unreadable file)."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as file:
            return file.readline().split("\t", 1)[0].strip()
    except OSError:
        return ""
