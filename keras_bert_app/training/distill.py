"""`kba.distill`: a small student learns a fine-tuned teacher's outputs (knowledge distillation).

```python
import keras_bert_app as kba

result = kba.distill("runs/topics/preset", "runs/topics-3", student_layers=[0, 2, 4],
                     train="train.csv", dev="dev.csv", unlabeled="more_sentences.txt")
result.metrics["dev"]["accuracy"], result.metrics["teacher"]["dev"]["accuracy"]
```

The teacher (a `finetune classify` run: classification or regression)
labels the training set and the optional unlabelled transfer set once; the
student then trains on both with `DistillationLoss` (Hinton et al. 2015's
soft cross-entropy at a temperature, T² scaled, plus the hard-label loss on
the labelled examples). The student is a preset (e.g. one `pretrain` made:
Turc et al. 2019's pretrained compact student), a subset of the teacher's
layers (DistilBERT's initialisation, Sanh et al. 2019), or a size with
random initialisation. The run folder is `finetune`'s (`metrics.json`,
`logs/`, `dev_predictions.jsonl`, `preset/`), so `predict`, `evaluate` and
`export_for_serving` take it unchanged; `metrics.json` adds the teacher's
dev scores and the distillation settings.

The student's and teacher's parts live beside this file:
`distill_student` (the three kinds of student), `distill_teacher` (reading
the data against the teacher's labels; its logits, optionally cached),
`distill_hidden_states` (TinyBERT's hidden-state matching, with the teacher
run on every step).

Token classification and question answering are not distilled here: their
teachers' per-position and span outputs need their own soft losses.
"""

import dataclasses
import json
import os
import pathlib
import time
from typing import Callable, Optional, Sequence, Union

from keras_bert_app import errors
from keras_bert_app.training.distill_student import build_student, check_one_student
from keras_bert_app.training.distill_teacher import joined, read_labelled, read_unlabeled, teacher_logits


@dataclasses.dataclass
class DistillResult:
    """What `distill` wrote.

    Attributes:
        metrics: dict, as in `metrics.json`: finetune's entries, plus
            "teacher" (its preset and dev scores) and "distillation" (the
            student, temperature, hard-label weight, example counts).
        preset: pathlib.Path. The student's preset folder (`output/preset`).
        output: pathlib.Path. The run folder.
    """

    metrics: dict
    preset: pathlib.Path
    output: pathlib.Path


def distill(
    teacher: Union[str, os.PathLike],
    output: Union[str, os.PathLike],
    *,
    train: Union[str, os.PathLike],
    dev: Union[str, os.PathLike],
    student: Optional[Union[str, os.PathLike]] = None,
    student_layers: Optional[Sequence[int]] = None,
    student_size: Optional[str] = None,
    unlabeled: Optional[Union[str, os.PathLike]] = None,
    text_column: Optional[str] = None,
    label_column: Optional[str] = None,
    text_pair_column: Optional[str] = None,
    temperature: float = 2.0,
    hard_label_weight: float = 0.5,
    hidden_state_weight: float = 0.0,
    epochs: int = 3,
    batch_size: int = 32,
    learning_rate: float = 5e-5,
    sequence_length: Optional[int] = None,
    seed: int = 0,
    teacher_cache: Optional[Union[str, os.PathLike]] = None,
    bucketing: bool = True,
    jit_compile: Union[bool, str] = "auto",
    verbose: int = 2,
    log: Optional[Callable[[str], None]] = None,
) -> DistillResult:
    """Distil a fine-tuned classify teacher into a student; write a `finetune`-style run folder.

    Args:
        teacher: str or path. A `finetune classify` run folder or its
            `preset/` (classification or regression).
        output: str or path. The run folder (created; files in it replaced).
        train: str or path. The labelled training file (CSV, TSV or JSON
            lines, read as `finetune classify` reads it).
        dev: str or path. The labelled dev file, scored after training.
        student: str or path or None. A preset name or folder whose encoder
            starts the student (its tokenizer must be the teacher's).
        student_layers: list of int or None. Build the student from these
            0-based layers of the teacher, with its embeddings, pooler and
            head (DistilBERT's initialisation).
        student_size: str or None. "LAYERSxHIDDEN" (e.g. "3x384"): a randomly
            initialised student of that size (heads of 64 dimensions, a 4H
            feed-forward layer), the teacher's vocabulary and positions.
            Exactly one of `student`, `student_layers`, `student_size`.
        unlabeled: str or path or None. A UTF-8 text file, one text a line
            (blank lines skipped): the transfer set, labelled by the teacher
            (soft loss only).
        text_column, label_column, text_pair_column: str or None. The
            files' columns (None: the teacher's).
        temperature: float > 0. T of the soft cross-entropy (2.0).
        hard_label_weight: float in [0, 1]. Weight w of the hard-label loss;
            the soft loss gets 1 - w (0.5).
        hidden_state_weight: float >= 0. Weight of TinyBERT's hidden-state
            matching (`distill_hidden_states`: each student layer learns a
            teacher layer, through a learned projection when the widths
            differ; the teacher then runs on every step). 0: off (0.0).
        epochs: int. Passes over the labelled and transfer sets together (3).
        batch_size: int. (32.)
        learning_rate: float. Peak AdamW rate, 10% warmup, linear decay (5e-5).
        sequence_length: int or None. Tokens per example (None: the teacher's).
        seed: int. Seed of the student's initialisation, dropout and shuffling.
        teacher_cache: str or path or None. A folder keeping the teacher's
            logits (`distill_teacher`): a call with the same teacher, length
            and texts reads them instead of running the teacher (None: the
            teacher labels on every call).
        bucketing: bool. As `finetune`'s.
        jit_compile: "auto", True or False. As `finetune`'s.
        verbose: int. Keras' `fit` verbosity (0, 1 or 2).
        log: callable taking a str, for progress lines (None: quiet).

    Returns:
        `DistillResult`.

    Raises:
        keras_bert_app.errors.ArgumentError: a bad argument (a teacher that is
            not a classify run, a student tokenizer other than the teacher's,
            layers out of range, a temperature <= 0), naming it.
        keras_bert_app.errors.MissingFileError: a file or folder not there.
        keras_bert_app.errors.DataError: labels the teacher does not have, an
            empty or binary transfer file, unreadable data (file and line).
    """
    from keras_bert_app.convert import resolve
    from keras_bert_app.convert.local_preset import preset_folder
    from keras_bert_app.models.sequence_length import sequence_length_for
    from keras_bert_app.tasks.base import check_preset
    from keras_bert_app.tasks.registry import task_from_preset
    from keras_bert_app.tasks.text_classification import TextClassification

    log = log or (lambda message: None)
    check_preset("teacher", teacher)
    output = errors.check_path("output", output)
    train = errors.check_file("train", train)
    dev = errors.check_file("dev", dev)
    if unlabeled is not None:
        unlabeled = errors.check_file("unlabeled", unlabeled)
    temperature = errors.check_number("temperature", temperature, minimum=0, minimum_inclusive=False)
    hard_label_weight = errors.check_number("hard_label_weight", hard_label_weight, minimum=0, maximum=1)
    hidden_state_weight = errors.check_number("hidden_state_weight", hidden_state_weight, minimum=0)
    epochs = errors.check_int("epochs", epochs, minimum=1)
    batch_size = errors.check_int("batch_size", batch_size, minimum=1)
    learning_rate = errors.check_number("learning_rate", learning_rate, minimum=0, minimum_inclusive=False)
    if sequence_length is not None:
        errors.check_int("sequence_length", sequence_length, minimum=3)
    errors.check_int("seed", seed, minimum=0)
    if teacher_cache is not None:
        teacher_cache = errors.check_path("teacher_cache", teacher_cache)
    errors.check_type("bucketing", bucketing, bool)
    errors.check_int("verbose", verbose, minimum=0, maximum=2)
    check_one_student(student, student_layers, student_size)
    if student is not None:
        student = resolve.resolve_preset(check_preset("student", student))  # read once, passed down as it is

    teacher = resolve.resolve_preset(preset_folder(teacher, log, task=True))
    stored = task_from_preset(teacher)
    if not isinstance(stored, TextClassification):
        raise errors.ArgumentError(
            "teacher", f"{teacher} holds a fine-tuned {stored.NAME} model; distill takes a `finetune classify` "
            "teacher (classification or regression).",
        )
    options = {
        "text_column": text_column or stored.options["text_column"],
        "label_column": label_column or stored.options["label_column"],
        "text_pair_column": text_pair_column or stored.options["text_pair_column"],
        "regression": stored.options["regression"],
    }
    task = TextClassification(train=train, dev=dev, **options)
    sequence_length = sequence_length_for(teacher, sequence_length, stored.sequence_length)
    if student is not None:
        sequence_length_for(student, sequence_length, sequence_length)  # the student's positions hold it
    task.prepare(teacher, sequence_length)
    task.bucketing = bucketing
    teacher_labels = stored.label_names
    train_examples = read_labelled(task, train, teacher_labels, teacher)
    if not len(train_examples):
        raise errors.DataError(f"{train}: the training set is empty; nothing to distil on.")
    dev_examples = read_labelled(task, dev, teacher_labels, teacher)
    task.label_names = teacher_labels
    transfer = read_unlabeled(unlabeled, options["text_pair_column"]) if unlabeled is not None else None

    import keras
    import numpy as np

    from keras_bert_app.models.xla import pads_to_exact_length, resolve_jit_compile
    from keras_bert_app.training.distillation_loss import DistillationLoss
    from keras_bert_app.training.finetune import training_callbacks
    from keras_bert_app.training.throughput import StepTimes

    jit_compile = resolve_jit_compile(jit_compile)
    keras.utils.set_random_seed(seed)
    teacher_model = task.build_model(teacher)
    student_model, student_note = build_student(teacher_model, teacher, student, student_layers, student_size)
    if task.num_segments() > student_model.encoder.num_segments:
        raise errors.ArgumentError(
            "student", "the data has text pairs (two segments), but the student's encoder has one segment type.",
        )

    output.mkdir(parents=True, exist_ok=True)

    # === The teacher labels every example once ===
    examples = joined(train_examples, transfer)
    split = task.featurize("train", examples, training=True)
    log(task.summary(split))
    dev_split = task.featurize("dev", dev_examples)
    log(task.summary(dev_split))
    started = time.perf_counter()
    logits, cached = teacher_logits(task, teacher_model, teacher, {"train": (split, examples), "dev": (
        dev_split, dev_examples)}, batch_size, teacher_cache, log)
    train_logits = logits["train"]  # (examples, outputs)
    teacher_dev = task.decode(dev_split, logits["dev"])
    teacher_scores = task.metrics(dev_split, teacher_dev)
    teacher_seconds = time.perf_counter() - started
    teacher_parameters = int(teacher_model.count_params())
    log(
        f"Teacher ({teacher_parameters:,} parameters) labelled {len(examples)} examples "
        f"{'(cached)' if cached else f'in {teacher_seconds:.1f} s'}; dev: " + ", ".join(f"{k} {v:.4f}" for k, v in teacher_scores.items())
    )
    if not hidden_state_weight:
        del teacher_model  # its logits are all the student needs

    # === The student learns them ===
    labels = np.zeros(len(examples), "float32")
    labels[: len(train_examples)] = train_examples.labels
    labelled = np.zeros(len(examples), "float32")
    labelled[: len(train_examples)] = 1.0
    targets = np.concatenate([train_logits, labels[:, None], labelled[:, None]], axis=1)
    num_outputs = train_logits.shape[1]
    loss = DistillationLoss(num_outputs, temperature=temperature, hard_label_weight=hard_label_weight)
    steps_per_epoch = -(-len(examples) // batch_size)
    student_model.compile(
        loss=loss, metrics=[], learning_rate=learning_rate, total_steps=steps_per_epoch * epochs,
        jit_compile=jit_compile,
    )
    fit_model = student_model
    if hidden_state_weight:
        from keras_bert_app.training.distill_hidden_states import training_model

        fit_model = training_model(teacher_model, student_model, hidden_state_weight)
        optimizer = student_model.default_optimizer(learning_rate, steps_per_epoch * epochs)  # its own slots
        fit_model.compile(optimizer=optimizer, loss=loss, jit_compile=jit_compile)
    task.exact_lengths = bucketing and pads_to_exact_length(student_model)
    dataset = _training_batches(task, split, targets, batch_size, seed)
    log(
        f"Distilling into {student_note} ({student_model.count_params():,} parameters) for {epochs} epochs x "
        f"{steps_per_epoch} steps, batch {batch_size}, learning rate {learning_rate:g}, temperature "
        f"{temperature:g}, hard-label weight {hard_label_weight:g}"
        + (f", hidden-state weight {hidden_state_weight:g}." if hidden_state_weight else ".")
    )
    step_times = StepTimes(batch_size, len(examples))
    callbacks = [step_times, *training_callbacks(output / "logs", log)]
    started = time.perf_counter()
    fit_model.fit(dataset, epochs=epochs, callbacks=callbacks, verbose=verbose, shuffle=False)
    train_seconds = time.perf_counter() - started

    predictions = task.decode(dev_split, task.logits(student_model, dev_split, batch_size))
    metrics = {
        "task": task.spec(),
        "train_examples": len(train_examples),
        "train_seconds": round(train_seconds, 1),
        **step_times.summary(),
        "dev": {**task.metrics(dev_split, predictions), **task.statistics(dev_split)},
        "teacher": {"preset": str(teacher), "parameters": teacher_parameters, "dev": teacher_scores},
        "distillation": {
            "student": student_note,
            "parameters": int(student_model.count_params()),
            "temperature": temperature,
            "hard_label_weight": hard_label_weight,
            "hidden_state_weight": hidden_state_weight,
            "unlabeled": None if unlabeled is None else str(unlabeled),
            "unlabeled_examples": 0 if transfer is None else len(transfer),
            "teacher_seconds": round(teacher_seconds, 1),
            "teacher_cached": cached,
        },
    }
    task.write_predictions(task.predictions_path(output, "dev"), dev_split, predictions)
    scores = {k: v for k, v in metrics["dev"].items() if isinstance(v, float)}
    log("dev: " + ", ".join(f"{k} {v:.4f}" for k, v in scores.items()))
    (output / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    folder = task.save_preset(student_model, output / "preset")
    log(f"Wrote {output / 'metrics.json'}, TensorBoard logs in {output / 'logs'}, preset {folder}.")
    return DistillResult(metrics=metrics, preset=pathlib.Path(folder), output=output)


def _training_batches(task, split, targets, batch_size, seed):
    """Length-grouped, shuffled batches `(inputs, targets)`: each example's packed inputs and its target row."""
    import tensorflow as tf

    from keras_bert_app.data.bucketing import grouped_batches

    inputs = task.packed_examples(split)  # (inputs,) per example
    paired = tf.data.Dataset.zip((inputs, tf.data.Dataset.from_tensor_slices(targets)))
    paired = paired.map(tf.autograph.experimental.do_not_convert(lambda packed, target: (packed[0], target)))
    return grouped_batches(
        paired, split.num_features, batch_size, task.sequence_length, shuffle=True, seed=seed,
        bucketing=task.bucketing, group_by_length=task.bucketing, exact_lengths=task.exact_lengths,
    )
