"""`keras-bert-app finetune TASK`: fine-tune a preset on GLUE, SWAG, NER or your own CSV.

    keras-bert-app finetune glue --task MRPC --data-dir glue_data/MRPC --preset P --output RUN
    keras-bert-app finetune swag --train train.csv --dev val.csv --preset P --output RUN
    keras-bert-app finetune ner --train train.txt --dev dev.txt --preset P --output RUN
    keras-bert-app finetune classify --train train.csv --dev dev.csv --text-column text \\
        --label-column label --preset P --output RUN

A run folder gets `metrics.json` (the official dev metrics), `logs/`
(TensorBoard), `dev_predictions.jsonl` and `preset/`: the fine-tuned model
as a preset folder (vocabulary, encoder, task weights and a "task" entry
naming the model class, labels and how to read its input) that `predict`,
`evaluate` and `export` take.

Each task is a `TASKS` entry naming a module (or `module:object`) with
`add_arguments(parser)` and `run(args)`; add one there for a new task.
"""

import importlib
import json
import pathlib
import time

# task -> ("module" or "module:object" with add_arguments/run, one-line help)
TASKS = {
    "glue": ("keras_bert_app.training.finetune:GLUE", "a GLUE task from its distributed TSV files"),
    "swag": ("keras_bert_app.training.finetune:SWAG", "SWAG multiple choice from its CSV files"),
    "ner": ("keras_bert_app.training.finetune:NER", "named entities from CoNLL-2003 column files"),
    "classify": ("keras_bert_app.training.finetune:CLASSIFY", "your own CSV/TSV/JSONL text classification"),
    "squad": ("keras_bert_app.training.finetune_squad", "SQuAD v1.1/v2.0 question answering from its JSON files"),
}


def add_arguments(parser):
    subparsers = parser.add_subparsers(dest="finetune_task", metavar="TASK", required=True)
    for name, (target, help_text) in TASKS.items():
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(_finetune_target=target)
        _resolve(target).add_arguments(sub)


def run(args):
    return _resolve(args._finetune_target).run(args)


def _resolve(target):
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module


def add_common_arguments(parser, learning_rate=2e-5, epochs=3, batch_size=32, sequence_length=128):
    """The options every fine-tuning task shares (the paper's A.3 ranges as defaults)."""
    parser.add_argument("--preset", required=True, help="preset name or folder (with encoder weights)")
    parser.add_argument("--output", required=True, help="run folder to write")
    parser.add_argument("--epochs", type=int, default=epochs, help=f"training epochs (default {epochs})")
    parser.add_argument("--batch-size", type=int, default=batch_size, help=f"batch size (default {batch_size})")
    parser.add_argument(
        "--learning-rate", type=float, default=learning_rate,
        help=f"peak AdamW learning rate, 10%% warmup then linear decay (default {learning_rate})",
    )
    parser.add_argument(
        "--sequence-length", type=int, default=sequence_length,
        help=f"tokens per packed example; longer ones are truncated (default {sequence_length})",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of initialisation, dropout and shuffling")


class _Task:
    """One fine-tuning task: its reader, model and metrics (see `TaskData`)."""

    def __init__(self, reader, add_task_arguments, learning_rate):
        self.reader = reader
        self.add_task_arguments = add_task_arguments
        self.learning_rate = learning_rate

    def add_arguments(self, parser):
        self.add_task_arguments(parser)
        add_common_arguments(parser, learning_rate=self.learning_rate)

    def run(self, args):
        spec = {"reader": self.reader, "sequence_length": args.sequence_length}
        spec.update(_task_spec(self.reader, args))
        return finetune(spec, args)


def _glue_arguments(parser):
    parser.add_argument("--task", required=True, help="CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE or WNLI")
    parser.add_argument("--data-dir", required=True, help="the task's folder with train.tsv and dev*.tsv")


def _file_arguments(parser):
    parser.add_argument("--train", required=True, help="training file")
    parser.add_argument("--dev", required=True, help="dev file (evaluated after training)")


def _swag_arguments(parser):
    _file_arguments(parser)
    parser.add_argument("--num-choices", type=int, default=4, help="endings per row (default 4)")


def _classify_arguments(parser):
    _file_arguments(parser)
    parser.add_argument("--text-column", required=True, help="column of the text (segment A)")
    parser.add_argument("--text-pair-column", help="column of segment B, for sentence-pair tasks")
    parser.add_argument("--label-column", required=True, help="column of the label")
    parser.add_argument("--labels", help="comma-separated class names in id order (default: sorted train labels)")
    parser.add_argument("--regression", action="store_true", help="labels are numbers: regress with MSE")


def _task_spec(reader, args):
    if reader == "glue":
        from keras_bert_app.data.glue import glue_task

        glue_task(args.task)  # fail early on an unknown name
        return {"glue_task": args.task.lower().replace("-", "")}
    if reader == "swag":
        return {"num_choices": args.num_choices}
    if reader == "classify":
        return {
            "text_column": args.text_column,
            "text_pair_column": args.text_pair_column,
            "label_column": args.label_column,
            "regression": bool(args.regression),
        }
    return {}


GLUE = _Task("glue", _glue_arguments, 2e-5)
SWAG = _Task("swag", _swag_arguments, 2e-5)
NER = _Task("ner", _file_arguments, 5e-5)
CLASSIFY = _Task("classify", _classify_arguments, 2e-5)


def training_files(spec, args):
    """`(train path, [(dev name, dev path), ...])` of a run's arguments."""
    if spec["reader"] == "glue":
        from keras_bert_app.data import glue

        task = glue.glue_task(spec["glue_task"])
        return (
            glue.glue_file(args.data_dir, "train"),
            [(name, glue.glue_file(args.data_dir, name)) for name in task.dev_files],
        )
    return pathlib.Path(args.train), [("dev", pathlib.Path(args.dev))]


def finetune(spec, args):
    """Train, evaluate on dev, write metrics, TensorBoard logs and the preset."""
    import keras

    keras.utils.set_random_seed(args.seed)
    output = pathlib.Path(args.output).expanduser()
    output.mkdir(parents=True, exist_ok=True)
    data = TaskData(spec, args.preset, label_names=_label_option(args))
    train_path, dev_paths = training_files(spec, args)

    train = data.read(train_path)
    data.set_label_names(train)
    print(data.summary("train", train))
    devs = [(name, data.read(path)) for name, path in dev_paths]
    for name, examples in devs:
        if not len(examples):
            raise ValueError(f"{examples.source}: the {name} set is empty; nothing to evaluate on.")
        print(data.summary(name, examples))

    train_dataset = data.dataset(train, args.batch_size, shuffle=True, seed=args.seed)
    steps_per_epoch = -(-len(train) // args.batch_size)
    total_steps = steps_per_epoch * args.epochs
    model = data.build_model(args.preset)
    model.compile(learning_rate=args.learning_rate, total_steps=total_steps)
    print(
        f"Fine-tuning {type(model).__name__} ({model.count_params():,} parameters) for "
        f"{args.epochs} epochs x {steps_per_epoch} steps, batch {args.batch_size}, "
        f"learning rate {args.learning_rate:g}."
    )
    started = time.perf_counter()
    model.fit(
        train_dataset,
        validation_data=data.dataset(devs[0][1], args.batch_size),
        epochs=args.epochs,
        shuffle=False,  # the dataset shuffles itself
        callbacks=training_callbacks(output / "logs"),
        verbose=2,
    )
    train_seconds = time.perf_counter() - started

    metrics = {"task": spec, "train_examples": len(train), "train_seconds": round(train_seconds, 1)}
    for name, examples in devs:
        predictions, _ = data.predict(model, examples, args.batch_size)
        metrics[name] = data.metrics(examples, predictions)
        metrics[name]["examples"] = len(examples)
        data.write_predictions(output / f"{name}_predictions.jsonl", examples, predictions)
        print(f"{name}: " + ", ".join(f"{k} {v:.4f}" for k, v in _flat_scores(metrics[name]).items()))
    (output / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    folder = data.save_preset(model, output / "preset")
    print(f"Wrote {output / 'metrics.json'}, TensorBoard logs in {output / 'logs'}, preset {folder}.")
    return 0


def training_callbacks(log_dir):
    """Per-epoch CSV history, and TensorBoard logs when TensorBoard is installed."""
    import importlib.util

    import keras

    log_dir.mkdir(parents=True, exist_ok=True)
    callbacks = [keras.callbacks.CSVLogger(str(log_dir / "history.csv"))]
    if importlib.util.find_spec("tensorboard") is None:
        print("TensorBoard is not installed (pip install tensorboard): logging to history.csv only.")
    else:
        callbacks.append(keras.callbacks.TensorBoard(log_dir=str(log_dir)))
    return callbacks


def _label_option(args):
    labels = getattr(args, "labels", None)
    return [name.strip() for name in labels.split(",")] if labels else None


def _flat_scores(scores):
    return {k: v for k, v in scores.items() if isinstance(v, float)}


class TaskData:
    """Reading, batching, predicting and scoring for one task spec.

    The spec is a dict: `reader` ("glue", "classify", "swag" or "ner"),
    `sequence_length`, and the reader's options (`glue_task`; `text_column`,
    `text_pair_column`, `label_column`, `regression`; `num_choices`). A
    fine-tuned preset stores it (with the label names) in its "task" entry,
    so `predict` and `evaluate` read new files the way training did.

    Args:
        spec: dict, as above.
        preset: str. The preset whose tokenizer to use.
        label_names: list of str or None. Class (or tag) names in id order;
            None takes them from the training file (`set_label_names`).
    """

    def __init__(self, spec, preset, label_names=None):
        from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
        from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

        if spec.get("reader") not in TASKS:
            raise ValueError(f"Unknown task reader {spec.get('reader')!r}: expected one of {sorted(TASKS)}.")
        self.spec = dict(spec)
        self.reader = spec["reader"]
        self.tokenizer = BertTokenizer.from_preset(preset)
        self.preprocessor = BertPreprocessor(self.tokenizer, sequence_length=spec["sequence_length"])
        self.label_names = label_names
        if self.reader == "glue":
            from keras_bert_app.data.glue import glue_task

            names = glue_task(spec["glue_task"]).label_names
            self.label_names = list(names) if names else None
        self._encoded = {}

    @classmethod
    def from_preset(cls, preset):
        """The TaskData a fine-tuned preset was trained with."""
        from keras_bert_app import presets

        task = presets.read_config(preset).get("task")
        if not task or "data" not in task:
            raise ValueError(
                f"Preset {str(preset)!r} has no fine-tuned task (no 'task' entry with "
                "'data' in its config.json); pass the preset/ folder of a finetune run."
            )
        return cls(task["data"], preset, label_names=task.get("label_names"))

    @property
    def regression(self):
        return self.reader in ("glue", "classify") and self.label_names is None and (
            self.reader == "glue" or self.spec.get("regression", False)
        )

    # === Reading ===
    def read(self, path, labeled=True):
        """The examples of a file in the spec's format."""
        spec = self.spec
        if self.reader == "glue":
            from keras_bert_app.data.glue import read_glue

            return read_glue(path, spec["glue_task"], labeled=labeled)
        if self.reader == "classify":
            from keras_bert_app.data.text_classification import read_text_classification

            return read_text_classification(
                path,
                spec["text_column"],
                label_column=spec["label_column"] if labeled else None,
                text_pair_column=spec.get("text_pair_column"),
                label_names=self.label_names,
                regression=spec.get("regression", False),
            )
        if self.reader == "swag":
            from keras_bert_app.data.swag import read_swag

            return read_swag(path, num_choices=spec["num_choices"], labeled=labeled)
        from keras_bert_app.data.conll import read_conll

        return read_conll(path, labeled=labeled)

    def set_label_names(self, train):
        """Take the class or tag names from the training examples when not given."""
        if self.label_names is not None or self.reader == "swag":
            return
        if self.reader == "ner":
            from keras_bert_app.data.conll import tag_names

            self.label_names = tag_names(train)
        else:
            self.label_names = train.label_names

    def summary(self, name, examples):
        """One line: how many examples, how many truncated."""
        truncated = self._truncated(examples)
        line = f"{name}: {len(examples)} examples from {examples.source}"
        if truncated:
            unit = "pairs" if self.reader == "swag" else "examples"
            line += f"; {truncated} {unit} longer than {self.spec['sequence_length']} tokens were truncated"
        return line

    def _truncated(self, examples):
        if self.reader == "ner":
            return self._encode(examples)[1]
        if self.reader == "swag":
            from keras_bert_app.data.swag import count_truncated
        else:
            from keras_bert_app.data.text_classification import count_truncated
        return count_truncated(examples, self.preprocessor) if len(examples) else 0

    def _encode(self, examples):
        from keras_bert_app.data.conll import encode_tagged

        key = id(examples)
        if key not in self._encoded:
            self._encoded[key] = encode_tagged(
                examples, self.tokenizer, self.spec["sequence_length"], self.label_names
            )
        return self._encoded[key]

    def dataset(self, examples, batch_size, shuffle=False, seed=None):
        """tf.data batches of the examples (with labels when they have them)."""
        if self.reader == "ner":
            from keras_bert_app.data.conll import tagging_dataset

            return tagging_dataset(self._encode(examples)[0], batch_size, shuffle, seed)
        if self.reader == "swag":
            from keras_bert_app.data.swag import multiple_choice_dataset

            return multiple_choice_dataset(examples, self.preprocessor, batch_size, shuffle, seed)
        from keras_bert_app.data.text_classification import classification_dataset

        return classification_dataset(examples, self.preprocessor, batch_size, shuffle, seed)

    # === Model ===
    def build_model(self, preset):
        """The task model on the preset's encoder (or the preset's own fine-tuned task)."""
        if self.reader == "ner":
            from keras_bert_app.models.bert_token_classifier import BertTokenClassifier

            return BertTokenClassifier.from_preset(preset, num_classes=len(self.label_names))
        if self.reader == "swag":
            from keras_bert_app.models.bert_multiple_choice import BertMultipleChoice

            return BertMultipleChoice.from_preset(preset, num_choices=self.spec["num_choices"])
        from keras_bert_app.models.bert_classifier import BertClassifier

        num_classes = 1 if self.label_names is None else len(self.label_names)
        return BertClassifier.from_preset(preset, num_classes=num_classes)

    def save_preset(self, model, folder):
        """Tokenizer + model preset, with this spec and the labels in the "task" entry."""
        from keras_bert_app import presets

        self.tokenizer.save_to_preset(folder)
        folder = model.save_to_preset(folder, label_names=self.label_names)
        task = presets.read_config(folder)["task"]
        presets.write_config_entry(folder, "task", {**task, "data": self.spec})
        return folder

    # === Predictions and scores ===
    def predict(self, model, examples, batch_size):
        """`(predictions, logits)`: class names, scores, choice ids or tag lists per example."""
        import numpy as np

        dataset = self.dataset(examples, batch_size).map(lambda inputs, *rest: inputs)
        logits = np.asarray(model.predict(dataset, verbose=0), dtype="float32")
        if self.reader == "ner":
            from keras_bert_app.data.conll import decode_tags

            return decode_tags(logits, self._encode(examples)[0], examples, self.label_names), logits
        if self.reader == "swag":
            return logits.argmax(-1).tolist(), logits
        if self.label_names is None:
            return logits[:, 0].tolist(), logits
        return [self.label_names[i] for i in logits.argmax(-1)], logits

    def metrics(self, examples, predictions):
        """The official metrics of the task on labelled examples."""
        from keras_bert_app.evaluation import glue_metrics

        if self.reader == "ner":
            from keras_bert_app.evaluation.entity_f1 import entity_scores

            return entity_scores(examples.tags, predictions)
        if self.reader == "swag":
            return {"accuracy": glue_metrics.accuracy(examples.labels, predictions)}
        if self.label_names is None:
            names = ("pearson", "spearman")
            gold = examples.labels
        else:
            names = ("accuracy",) if len(self.label_names) > 2 else ("accuracy", "f1")
            if self.reader == "glue":
                from keras_bert_app.data.glue import glue_task

                names = glue_task(self.spec["glue_task"]).metrics
            index = {name: i for i, name in enumerate(self.label_names)}
            gold, predictions = examples.labels, [index[p] for p in predictions]
        return glue_metrics.compute_metrics(names, gold, predictions)

    def write_predictions(self, path, examples, predictions):
        """JSON lines: the source line and the prediction of each example."""
        with open(path, "w", encoding="utf-8") as file:
            for index, (line, prediction) in enumerate(zip(examples.lines, predictions)):
                if self.reader == "ner":
                    record = {"line": line, "words": examples.words[index], "tags": prediction}
                else:
                    record = {"line": line, "prediction": prediction}
                file.write(json.dumps(record) + "\n")
