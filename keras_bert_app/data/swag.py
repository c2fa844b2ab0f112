"""SWAG (Zellers et al. 2018) CSV files -> multiple-choice tf.data batches.

The distributed `train.csv` / `val.csv` have the columns `sent1`, `sent2`,
`ending0` .. `ending3` and `label` (not in the test file), among others. Each
choice is packed as `[CLS] sent1 [SEP] sent2 + " " + ending_i [SEP]`, as in
the paper's section 4.4.
"""

import dataclasses

from keras_bert_app.data.text_classification import read_rows


@dataclasses.dataclass
class ChoiceExamples:
    """Multiple-choice examples: a context and `num_choices` continuations each.

    Attributes:
        contexts: list of str (segment A of every choice).
        choices: list of lists of str, `num_choices` segment Bs per example.
        labels: list of int (the right choice) or None.
        source: str, the file (for messages).
        lines: list of int, the line of each example.
    """

    contexts: list
    choices: list
    labels: list
    source: str
    lines: list

    def __len__(self):
        return len(self.contexts)

    @property
    def num_choices(self):
        return len(self.choices[0]) if self.choices else 0


def read_swag(path, num_choices=4, labeled=True):
    """Read a SWAG CSV.

    Args:
        path: `train.csv`, `val.csv` or `test.csv` (then `labeled=False`).
        num_choices: int. Endings per row (`ending0` .. `ending{n-1}`).
        labeled: bool. Read the `label` column.

    Returns:
        `ChoiceExamples`.
    """
    endings = [f"ending{i}" for i in range(num_choices)]
    contexts, choices, labels, lines = [], [], [], []
    wanted = ["sent1", "sent2", *endings, *(["label"] if labeled else [])]
    for number, row in read_rows(path, delimiter=",", columns=wanted):
        missing = [c for c in wanted if c not in row]
        if missing:
            raise ValueError(f"{path}:{number}: no column {missing[0]!r}; the columns are {sorted(row)}.")
        extra = [c for c in row if c.startswith("ending") and c not in endings]
        if extra:
            raise ValueError(f"{path}:{number}: expected {num_choices} endings ({endings}); "
                             f"the file also has {extra}.")
        empty = [c for c in endings if not row[c].strip()]
        if empty:
            raise ValueError(f"{path}:{number}: expected {num_choices} endings; {empty} empty.")
        contexts.append(row["sent1"])
        choices.append([f"{row['sent2']} {row[c]}".strip() for c in endings])
        if labeled:
            label = row["label"].strip()
            if label not in {str(i) for i in range(num_choices)}:
                raise ValueError(f"{path}:{number}: label {label!r} is not a choice index 0..{num_choices - 1}.")
            labels.append(int(label))
        lines.append(number)
    return ChoiceExamples(contexts, choices, labels if labeled else None, str(path), lines)


def count_truncated(examples, preprocessor):
    """How many (context, ending) pairs have more tokens than the packed sequence holds."""
    tokenizer = preprocessor.tokenizer
    context_lengths = tokenizer(examples.contexts).row_lengths().numpy()
    flat = [choice for row in examples.choices for choice in row]
    ending_lengths = tokenizer(flat).row_lengths().numpy().reshape(len(examples), -1)
    total = context_lengths[:, None] + ending_lengths
    return int((total > preprocessor.sequence_length - 3).sum())


def multiple_choice_examples(examples, preprocessor):
    """tf.data of single packed examples: inputs [num_choices, sequence_length] (and the label), cached.

    Args:
        examples: `ChoiceExamples`.
        preprocessor: `keras_bert_app.BertPreprocessor` (pads to its `sequence_length`).
    """
    import tensorflow as tf

    from keras_bert_app.data.packed_dataset import packed_examples

    if not len(examples):
        raise ValueError(f"{examples.source}: no examples.")
    num_choices = examples.num_choices
    contexts = [[context] * num_choices for context in examples.contexts]
    features = (contexts, examples.choices)
    labels = () if examples.labels is None else (tf.constant(examples.labels, "int32"),)
    dataset = tf.data.Dataset.from_tensor_slices((features, *labels))

    def pack(segments, *labels):
        first, second = (tf.reshape(s, [-1]) for s in segments)  # (batch * choices,)
        inputs = preprocessor((first, second))
        inputs = {
            name: tf.reshape(value, [-1, num_choices, preprocessor.sequence_length])
            for name, value in inputs.items()
        }  # (batch, choices, seq)
        return (inputs, *labels)

    return packed_examples(dataset, pack, len(examples))

