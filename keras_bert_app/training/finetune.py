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

from keras_bert_app.training.task_data import TaskData

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
    parser.add_argument("--no-jit-compile", action="store_true", help="turn XLA off (default: on for TensorFlow and JAX, CPU included)")


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
    model.compile(learning_rate=args.learning_rate, total_steps=total_steps, jit_compile=not args.no_jit_compile and "auto")
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
