"""`Task`: what one downstream task owns, from its files to its served outputs.

`kba.finetune` runs one training loop for every task and asks the task for
its files (`training_files`, `read`), labels (`learn_labels`), model inputs
(`featurize`, `fit_arguments`, `validation_data`), model (`build_model`),
predictions (`logits`, `tune`, `decode`), official scores (`metrics`),
prediction files (`write_predictions`) and fine-tuned preset (`save_preset`).
A task gives its single examples (`examples_dataset`); batches are made in
one place for every task (`data.bucketing.grouped_batches`). `kba.predict`
and `kba.evaluate` rebuild the task from the preset's "task" entry
(`from_spec`), and `kba.export_for_serving` asks it for its serving head.

A subclass declares, as plain data (no TensorFlow needed to read them): its
registry `NAME`, the `READER` stored in its presets, its `MODEL_CLASS_NAME`, the
paper's hyperparameter `DEFAULTS` and its `OPTIONS`.
"""

import copy
import dataclasses
import json
import os
import pathlib

from keras_bert_app import errors

# The paper's fine-tuning recipe (appendix A.3), overridden per task.
DEFAULTS = {"epochs": 3, "batch_size": 32, "learning_rate": 2e-5, "sequence_length": 128}


@dataclasses.dataclass
class Split:
    """One file of a task, read and featurized.

    Attributes:
        name: str. "train", "dev", a GLUE dev file's name, or "input".
        examples: what the task's reader returned (`TextExamples`,
            `ChoiceExamples`, `TaggedSentences`, `SquadData`).
        features: what the model is fed (the examples themselves for the
            sentence tasks; arrays or windows for the others).
        num_features: int. Model inputs made (batches count these).
        truncated: int. Examples cut at the sequence length.
        empty: int. Examples without a single token (empty text).
        packed: the tf.data of its single features, made once (`Task.packed_examples`).
    """

    name: str
    examples: object
    features: object
    num_features: int
    truncated: int = 0
    empty: int = 0
    packed: object = dataclasses.field(default=None, repr=False, compare=False)

    def __len__(self):
        return len(self.examples)


class Task:
    """Base of the downstream tasks (see the module docstring for the protocol).

    Construct with the task's options as keywords (`Task(**options)`): unknown
    names and wrong types raise `keras_bert_app.errors` exceptions naming the
    option; `check_training_options` adds what fine-tuning needs (required
    options, existing files). A task instance then carries the state of one
    run: `prepare(preset, sequence_length)` loads the tokenizer, and
    `learn_labels` (or the preset) sets `label_names`; `bucketing` (True
    unless the run turns it off) pads each batch to a bucket length.

    Args:
        **options: the task's `OPTIONS`.
    """

    NAME = None  # registry name: `kba.finetune(NAME, ...)`, `keras-bert-app finetune NAME`
    DESCRIPTION = ""
    READER = None  # "reader" of the fine-tuned preset's task data: how its files are read
    MODEL_CLASS_NAME = None  # the task model's class name, as a preset's "task" entry records it
    DEFAULTS = DEFAULTS
    OPTIONS = ()
    SERVING_TASK = None  # the export's task name ("classification", ...); None: not servable
    TRUNCATED_UNIT = "examples"
    PER_POSITION = False  # the model's outputs are per position ([batch, seq, ...])
    ONE_LABEL = False  # one label per example, first after the inputs: length groups stratified by it

    def __init__(self, **options):
        self.options = self.check_options(options)
        self.label_names = None
        self.sequence_length = self.DEFAULTS["sequence_length"]
        self.tokenizer = None
        self._preprocessor = None
        self.bucketing = True
        self.group_by_length = True  # training batches of similar lengths (`finetune(group_by_length=False)`: random)
        self.exact_lengths = False  # batches cut to their longest example (`finetune`: `xla.pads_to_exact_length`)
        self.family = None  # the preset's ("bert", "electra", "albert"), set by `build_model`

    # === Options and the preset's "task" entry ===
    @classmethod
    def check_options(cls, options):
        """The options with defaults filled in; typed errors naming a bad one."""
        declared = {option.name: option for option in cls.OPTIONS}
        unknown = sorted(set(options) - set(declared))
        if unknown:
            raise errors.ArgumentError(
                unknown[0], f"{unknown[0]} is not an option of the {cls.NAME} task; its options are {sorted(declared)}."
            )
        return {name: option.check(options.get(name, option.default)) for name, option in declared.items()}

    def check_training_options(self):
        """Raise unless the options fine-tuning needs are given and their files exist."""
        for option in self.OPTIONS:
            value = self.options[option.name]
            if value is None and option.required:
                raise errors.ArgumentError(option.name, f"the {self.NAME} task needs {option.name}.")
            if value is not None and option.kind == "file":
                errors.check_file(option.name, value)
            if value is not None and option.kind == "folder" and not value.is_dir():
                raise errors.MissingFileError(option.name, f"{option.name}: {value}: no such folder.")

    @classmethod
    def from_spec(cls, spec, label_names=None, **overrides):
        """The task a fine-tuned preset's "task" entry describes.

        Args:
            spec: dict. The entry's "data": `reader`, `sequence_length` and
                the stored options (missing ones take their defaults).
            label_names: list of str or None. The entry's "label_names".
            **overrides: stored options to change (e.g. SQuAD's
                `null_score_diff_threshold` for `predict`).
        """
        stored = {option.name for option in cls.OPTIONS if option.stored}
        for name in overrides:
            if name not in stored:
                raise errors.ArgumentError(
                    name, f"{name} cannot be changed for a fine-tuned {cls.NAME} preset; the options are {sorted(stored)}."
                )
        options = {name: value for name, value in spec.items() if name in stored}
        task = cls(**{**options, **{k: v for k, v in overrides.items() if v is not None}})
        task.sequence_length = spec.get("sequence_length", cls.DEFAULTS["sequence_length"])
        if label_names is not None:
            task.label_names = list(label_names)
        return task

    def spec(self):
        """The "data" of the preset's "task" entry: how the run read its files."""
        stored = {option.name: self.options[option.name] for option in self.OPTIONS if option.stored}
        return {"reader": self.READER, "sequence_length": self.sequence_length, **stored}

    def copy(self):
        """A deep copy: a run changes its copy's state (tokenizer, labels), not this instance."""
        return copy.deepcopy(self)

    # === Files and features ===
    def prepare(self, preset, sequence_length=None):
        """Load the tokenizer the preset names (WordPiece, or ALBERT's SentencePiece); `sequence_length`
        packs the examples. Returns self."""
        from keras_bert_app.preprocessing.preset_tokenizer import tokenizer_from_preset

        if sequence_length is not None:
            self.sequence_length = sequence_length
        self.tokenizer = tokenizer_from_preset(preset)
        self._preprocessor = None
        return self

    @property
    def preprocessor(self):
        """`BertPreprocessor` of the tokenizer at the run's sequence length."""
        if self._preprocessor is None:
            from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor

            self._preprocessor = BertPreprocessor(self.tokenizer, sequence_length=self.sequence_length)
        return self._preprocessor

    def training_files(self):
        """`(train path, [(dev name, dev path), ...])` from the options."""
        return self.options["train"], [("dev", self.options["dev"])]

    def read(self, path, labeled=True):
        """The examples of a file in the task's format."""
        raise NotImplementedError

    def learn_labels(self, examples):
        """Take the label names from the training examples when not given."""

    def featurize(self, name, examples, training=False):
        """`Split` of the examples: what the model is fed."""
        raise NotImplementedError

    def summary(self, split):
        """One line: how many examples, how many truncated."""
        line = f"{split.name}: {len(split)} examples from {split.examples.source}"
        if split.truncated:
            line += f"; {split.truncated} {self.TRUNCATED_UNIT} longer than {self.sequence_length} tokens were truncated"
        if split.empty:
            line += f"; {split.empty} {self.TRUNCATED_UNIT} have no tokens (empty text: [CLS] [SEP] alone)"
        return line

    def examples_dataset(self, split):
        """tf.data of the split's single features `(inputs, *labels)`, padded to the sequence length."""
        raise NotImplementedError

    def packed_examples(self, split):
        """`examples_dataset(split)`, made once per split: training, validation and predictions share it."""
        if split.packed is None:
            split.packed = self.examples_dataset(split)
        return split.packed

    def dataset(self, split, batch_size, shuffle=False, seed=None):
        """tf.data batches of a split (with labels when it has them), each padded to a bucket unless not `bucketing`.

        Grouped by length (training: per class where `ONE_LABEL`; random if not `group_by_length`: `kba.finetune`)."""
        from keras_bert_app.data.bucketing import grouped_batches

        return grouped_batches(
            self.packed_examples(split), split.num_features, batch_size, self.sequence_length,
            shuffle=shuffle, seed=seed, bucketing=self.bucketing,
            group_by_length=not shuffle or self.group_by_length, exact_lengths=self.exact_lengths, stratified=self.ONE_LABEL,
        )

    def fit_arguments(self, split, batch_size, seed):
        """The training data arguments of `model.fit` (the rest is the loop's)."""
        return {"x": self.dataset(split, batch_size, shuffle=True, seed=seed), "shuffle": False}

    def validation_data(self, split, batch_size):
        """`validation_data` of `model.fit` (None: none)."""
        return self.dataset(split, batch_size)

    # === Model ===
    def model_class(self):
        """The task model's class (imported on first use: Keras is heavy)."""
        raise NotImplementedError

    def model_arguments(self):
        """The head's constructor arguments (`num_classes`, ...)."""
        return {}

    def num_segments(self):
        """Segments an example is packed into (2: `[CLS] A [SEP] B [SEP]`); the encoder needs as many."""
        return 2

    def build_model(self, preset):
        """The task model on the preset's encoder, or the preset's own fine-tuned task (its family kept for
        `save_preset`); an HF task checkpoint of another task's head is refused."""
        from keras_bert_app.convert import family, huggingface_heads, resolve

        resolved = resolve.resolve_preset(preset)
        self.family = family.family(resolved.config)
        if resolved.source_format == "huggingface":  # an HF task checkpoint: of this task's head
            huggingface_heads.check_task_head(resolved.folder, self.MODEL_CLASS_NAME, self.NAME)
        return self.model_class().from_preset(preset, **self.model_arguments())

    def save_preset(self, model, folder):
        """Tokenizer + model preset, with the spec and the labels in the "task" entry (and the family of an
        ELECTRA or ALBERT encoder in "architecture": the heads and formats it is read with)."""
        from keras_bert_app import presets
        from keras_bert_app.convert import family

        self.tokenizer.save_to_preset(folder)
        folder = model.save_to_preset(folder, label_names=self.label_names)
        task = presets.read_config(folder)["task"]
        presets.write_config_entry(folder, "task", {**task, "data": self.spec()})
        if self.family not in (None, family.BERT):
            presets.write_config_entry(folder, "architecture", self.family)
        return folder

    # === Predictions and scores ===
    def logits(self, model, split, batch_size, on_batch=None):
        """The model's raw outputs on a split (NumPy), in its order; per-position ones padded to the sequence length.

        `on_batch(labels, outputs)` for each batch as run (`bucketing.predict_in_order`)."""
        import numpy as np

        from keras_bert_app.data.bucketing import plain_map, predict_in_order
        from keras_bert_app.models.xla import pads_to_exact_length

        inputs = self.packed_examples(split) if on_batch else plain_map(self.packed_examples(split), lambda x, *rest: x)
        outputs = predict_in_order(
            model, inputs, split.num_features, batch_size, self.sequence_length,
            bucketing=self.bucketing, per_position=self.PER_POSITION, on_batch=on_batch,
            exact_lengths=pads_to_exact_length(model),
        )
        return np.asarray(outputs, dtype="float32")

    def tune(self, split, logits, log):
        """Settle settings on the (first) dev set after training (SQuAD v2.0's threshold)."""

    def decode(self, split, logits):
        """Predictions per example (class names, scores, choice ids, tag lists, answers)."""
        raise NotImplementedError

    def metrics(self, split, predictions):
        """The official metrics of the task on a labelled split."""
        raise NotImplementedError

    def statistics(self, split):
        """Counts recorded beside a split's scores."""
        return {"examples": len(split)}

    def training_statistics(self, split):
        """Counts of the training split recorded in `metrics.json` besides `train_examples`."""
        return {}

    def predictions_path(self, output, name):
        """Where a fine-tuning run writes the predictions of its dev set `name`."""
        return pathlib.Path(output) / f"{name}_predictions.jsonl"

    def write_predictions(self, path, split, predictions, logits=None):
        """JSON lines: each example's source line and prediction (and logits when given)."""
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as file:
            for index, prediction in enumerate(predictions):
                row = None if logits is None else logits[index]
                file.write(json.dumps(self.prediction_record(split, index, prediction, row)) + "\n")
        return [path]

    def prediction_record(self, split, index, prediction, logits=None):
        """The JSON object of one prediction."""
        record = {"line": split.examples.lines[index], "prediction": prediction}
        if logits is not None:
            record["logits"] = [round(float(value), 6) for value in logits]
        return record

    # === Serving ===
    def serving_task(self, model):
        """The export's task name for this model (`SERVING_TASK`); None: not servable."""
        return self.SERVING_TASK

    def serving_defaults(self):
        """Serving settings a run fixes (`text_pair`, `max_query_length`, ...)."""
        return {}

    def serving_head(self, model, preprocessor, label_names=None, text_pair=False, **settings):
        """The `ServingHead` that turns raw text into this task's outputs."""
        raise NotImplementedError


def check_preset(argument, value):
    """`value` if it names a built-in preset or an existing folder; typed errors naming `argument`."""
    from keras_bert_app import presets

    errors.check_type(argument, value, (str, os.PathLike), "a preset name or folder (str or pathlib.Path)")
    if pathlib.Path(value).expanduser().is_dir():
        return value
    try:
        presets.preset_dir(value)
    except ValueError as error:
        text = str(value)
        if isinstance(value, os.PathLike) or (os.sep in text and "://" not in text):
            raise errors.MissingFileError(argument, f"{argument}: {text}: no such preset folder.") from None
        raise errors.ArgumentError(argument, f"{argument}: {error}") from None
    return value
