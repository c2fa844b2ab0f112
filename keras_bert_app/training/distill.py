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

Token classification and question answering are not distilled here: their
teachers' per-position and span outputs need their own soft losses.
"""

import dataclasses
import json
import os
import pathlib
import re
import time
from typing import Callable, Optional, Sequence, Union

from keras_bert_app import errors

# `student_size`: "LAYERSxHIDDEN", e.g. "3x384"; heads of 64 dimensions, a 4H feed-forward layer (BERT's shapes).
SIZE_PATTERN = re.compile(r"^(\d+)x(\d+)$")
HEAD_DIM = 64


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
    epochs: int = 3,
    batch_size: int = 32,
    learning_rate: float = 5e-5,
    sequence_length: Optional[int] = None,
    seed: int = 0,
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
        epochs: int. Passes over the labelled and transfer sets together (3).
        batch_size: int. (32.)
        learning_rate: float. Peak AdamW rate, 10% warmup, linear decay (5e-5).
        sequence_length: int or None. Tokens per example (None: the teacher's).
        seed: int. Seed of the student's initialisation, dropout and shuffling.
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
    epochs = errors.check_int("epochs", epochs, minimum=1)
    batch_size = errors.check_int("batch_size", batch_size, minimum=1)
    learning_rate = errors.check_number("learning_rate", learning_rate, minimum=0, minimum_inclusive=False)
    if sequence_length is not None:
        errors.check_int("sequence_length", sequence_length, minimum=3)
    errors.check_int("seed", seed, minimum=0)
    errors.check_type("bucketing", bucketing, bool)
    errors.check_int("verbose", verbose, minimum=0, maximum=2)
    _check_one_student(student, student_layers, student_size)
    if student is not None:
        check_preset("student", student)

    teacher = preset_folder(teacher, log, task=True)
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
    train_examples = _read_labelled(task, train, teacher_labels, teacher)
    if not len(train_examples):
        raise errors.DataError(f"{train}: the training set is empty; nothing to distil on.")
    dev_examples = _read_labelled(task, dev, teacher_labels, teacher)
    task.label_names = teacher_labels
    transfer = _read_unlabeled(unlabeled, options["text_pair_column"]) if unlabeled is not None else None

    import keras
    import numpy as np

    from keras_bert_app.models.xla import pads_to_exact_length, resolve_jit_compile
    from keras_bert_app.training.distillation_loss import DistillationLoss
    from keras_bert_app.training.finetune import training_callbacks
    from keras_bert_app.training.throughput import StepTimes

    jit_compile = resolve_jit_compile(jit_compile)
    keras.utils.set_random_seed(seed)
    teacher_model = task.build_model(teacher)
    student_model, student_note = _build_student(teacher_model, teacher, student, student_layers, student_size)
    if task.num_segments() > student_model.encoder.num_segments:
        raise errors.ArgumentError(
            "student", "the data has text pairs (two segments), but the student's encoder has one segment type.",
        )

    output.mkdir(parents=True, exist_ok=True)

    # === The teacher labels every example once ===
    examples = _joined(train_examples, transfer)
    split = task.featurize("train", examples, training=True)
    log(task.summary(split))
    dev_split = task.featurize("dev", dev_examples)
    log(task.summary(dev_split))
    started = time.perf_counter()
    teacher_logits = task.logits(teacher_model, split, batch_size)  # (examples, outputs)
    teacher_dev = task.decode(dev_split, task.logits(teacher_model, dev_split, batch_size))
    teacher_scores = task.metrics(dev_split, teacher_dev)
    teacher_seconds = time.perf_counter() - started
    teacher_parameters = int(teacher_model.count_params())
    log(
        f"Teacher ({teacher_parameters:,} parameters) labelled {len(examples)} examples in "
        f"{teacher_seconds:.1f} s; dev: " + ", ".join(f"{k} {v:.4f}" for k, v in teacher_scores.items())
    )
    del teacher_model

    # === The student learns them ===
    labels = np.zeros(len(examples), "float32")
    labels[: len(train_examples)] = train_examples.labels
    labelled = np.zeros(len(examples), "float32")
    labelled[: len(train_examples)] = 1.0
    targets = np.concatenate([teacher_logits, labels[:, None], labelled[:, None]], axis=1)
    num_outputs = teacher_logits.shape[1]
    loss = DistillationLoss(num_outputs, temperature=temperature, hard_label_weight=hard_label_weight)
    steps_per_epoch = -(-len(examples) // batch_size)
    student_model.compile(
        loss=loss, metrics=[], learning_rate=learning_rate, total_steps=steps_per_epoch * epochs,
        jit_compile=jit_compile,
    )
    task.exact_lengths = bucketing and pads_to_exact_length(student_model)
    dataset = _training_batches(task, split, targets, batch_size, seed)
    log(
        f"Distilling into {student_note} ({student_model.count_params():,} parameters) for {epochs} epochs x "
        f"{steps_per_epoch} steps, batch {batch_size}, learning rate {learning_rate:g}, temperature "
        f"{temperature:g}, hard-label weight {hard_label_weight:g}."
    )
    step_times = StepTimes(batch_size, len(examples))
    callbacks = [step_times, *training_callbacks(output / "logs", log)]
    started = time.perf_counter()
    student_model.fit(dataset, epochs=epochs, callbacks=callbacks, verbose=verbose, shuffle=False)
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
            "unlabeled": None if unlabeled is None else str(unlabeled),
            "unlabeled_examples": 0 if transfer is None else len(transfer),
            "teacher_seconds": round(teacher_seconds, 1),
        },
    }
    task.write_predictions(task.predictions_path(output, "dev"), dev_split, predictions)
    scores = {k: v for k, v in metrics["dev"].items() if isinstance(v, float)}
    log("dev: " + ", ".join(f"{k} {v:.4f}" for k, v in scores.items()))
    (output / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    folder = task.save_preset(student_model, output / "preset")
    log(f"Wrote {output / 'metrics.json'}, TensorBoard logs in {output / 'logs'}, preset {folder}.")
    return DistillResult(metrics=metrics, preset=pathlib.Path(folder), output=output)


def _check_one_student(student, student_layers, student_size):
    given = [name for name, value in (("student", student), ("student_layers", student_layers),
                                       ("student_size", student_size)) if value is not None]
    if len(given) != 1:
        raise errors.ArgumentError(
            "student", "give exactly one of student (a preset), student_layers (teacher layers) or student_size "
            f"(LAYERSxHIDDEN); got {given or 'none'}.",
        )
    if student_layers is not None:
        errors.check_type("student_layers", student_layers, (list, tuple), "a list of int")
        if not student_layers:
            raise errors.ArgumentError("student_layers", "student_layers is empty; name at least one teacher layer.")
        for layer in student_layers:
            errors.check_int("student_layers", layer)
        if len(set(student_layers)) != len(student_layers):
            raise errors.ArgumentError("student_layers", f"student_layers repeats a layer: {list(student_layers)}.")
    if student_size is not None:
        errors.check_type("student_size", student_size, str)
        match = SIZE_PATTERN.match(student_size)
        if not match or int(match[1]) < 1 or int(match[2]) < HEAD_DIM or int(match[2]) % HEAD_DIM:
            raise errors.ArgumentError(
                "student_size", f"student_size is LAYERSxHIDDEN with HIDDEN a multiple of {HEAD_DIM} (e.g. "
                f"'3x384'); got {student_size!r}.",
            )


def _read_labelled(task, path, teacher_labels, teacher):
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


def _read_unlabeled(path, text_pair_column):
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


def _joined(train, transfer):
    """The labelled examples followed by the transfer set's, as one unlabelled `TextExamples`."""
    from keras_bert_app.data.text_classification import TextExamples

    if transfer is None:
        return TextExamples(train.texts, train.text_pairs, None, None, train.source, train.lines)
    return TextExamples(train.texts + transfer.texts, None, None, None,
                        f"{train.source} + {transfer.source}", train.lines + transfer.lines)


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


def _build_student(teacher_model, teacher, student, student_layers, student_size):
    """The student classifier and a phrase naming it."""
    from keras_bert_app.models.bert_classifier import BertClassifier
    from keras_bert_app.models.bert_encoder import BertEncoder

    num_classes = teacher_model.num_classes
    pooling = teacher_model.pooling
    encoder_config = teacher_model.encoder.get_config()
    if student is not None:
        _check_same_tokenizer(teacher, student)
        model = BertClassifier.from_preset(student, num_classes=num_classes, pooling=pooling)
        return model, f"the student preset {student}"
    if student_size is not None:
        num_layers, hidden_dim = (int(value) for value in SIZE_PATTERN.match(student_size).groups())
        config = {
            **encoder_config, "num_layers": num_layers, "hidden_dim": hidden_dim, "num_heads": hidden_dim // HEAD_DIM,
            "intermediate_dim": 4 * hidden_dim, "embedding_dim": None, "num_groups": None,
        }
        encoder = BertEncoder.from_config(config)
        return BertClassifier(encoder, num_classes, pooling=pooling), f"a random {student_size} student"
    encoder = teacher_model.encoder
    if encoder.num_groups not in (None, encoder.num_layers):
        raise errors.ArgumentError(
            "student_layers", f"the teacher shares weights across layers (num_groups {encoder.num_groups}); "
            "its layers cannot be taken one by one.",
        )
    out_of_range = [layer for layer in student_layers if not 0 <= layer < encoder.num_layers]
    if out_of_range:
        raise errors.ArgumentError(
            "student_layers", f"student_layers {out_of_range} out of range: the teacher has {encoder.num_layers} "
            f"layers, 0 to {encoder.num_layers - 1}.",
        )
    model = BertClassifier(BertEncoder.from_config({**encoder_config, "num_layers": len(student_layers)}),
                           num_classes, pooling=pooling)
    copy_teacher_layers(teacher_model, model, student_layers)
    return model, f"teacher layers {','.join(str(layer) for layer in student_layers)}"


def copy_teacher_layers(teacher_model, student_model, layers):
    """DistilBERT's initialisation: the student's layer i is the teacher's `layers[i]`; every other weight copied.

    Args:
        teacher_model: `BertClassifier`.
        student_model: `BertClassifier`, its encoder of `len(layers)` layers, otherwise of the teacher's shapes.
        layers: list of int, 0-based teacher layers.
    """
    teacher, student = teacher_model.encoder, student_model.encoder
    pairs = [(student.embeddings, teacher.embeddings), (student.pooler, teacher.pooler)]
    if student.embedding_projection is not None:
        pairs.append((student.embedding_projection, teacher.embedding_projection))
    pairs += [(student.transformer_layers[i], teacher.transformer_layers[index]) for i, index in enumerate(layers)]
    heads = [layer for layer in student_model.layers if layer is not student and layer.weights]  # by name
    pairs += [(layer, teacher_model.get_layer(layer.name)) for layer in heads]
    for target, source in pairs:
        target.set_weights(source.get_weights())
    copied = sum(len(target.weights) for target, _ in pairs)
    if copied != len(student_model.weights):  # a weight of a part this list misses would stay random
        raise ValueError(f"copy_teacher_layers: copied {copied} of the student's {len(student_model.weights)} weights.")


def _check_same_tokenizer(teacher, student):
    """The student's tokenizer must be the teacher's: the same vocabulary (or SentencePiece model) and casing."""
    if _tokenizer_identity(teacher) != _tokenizer_identity(student):
        raise errors.ArgumentError(
            "student", f"the student preset {student} tokenizes differently from the teacher {teacher} (another "
            "vocabulary or casing): their token ids would not mean the same. Take a student with the teacher's "
            "vocabulary (e.g. `pretrain` one from a preset with that vocabulary).",
        )


def _tokenizer_identity(preset):
    from keras_bert_app.convert import resolve
    from keras_bert_app.preprocessing.preset_tokenizer import SENTENCEPIECE

    resolved = resolve.resolve_preset(preset, fetch_weights=False)
    entry = resolved.config.get("tokenizer", {})
    if entry.get("type") == SENTENCEPIECE:
        return SENTENCEPIECE, resolved.sentencepiece_model_path.read_bytes()
    tokens = resolved.vocabulary_path.read_text(encoding="utf-8").splitlines()
    return "wordpiece", bool(entry.get("lowercase", True)), [token.strip() for token in tokens if token.strip()]
