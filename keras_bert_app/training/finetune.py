"""`kba.finetune`: fine-tune a preset on a downstream task, with one loop for every task.

```python
import keras_bert_app as kba

result = kba.finetune(
    "classify", "runs/mini/preset", "runs/topics", train="train.csv", dev="dev.csv",
    text_column="text", label_column="label",
)
result.metrics["dev"]["accuracy"], result.preset
```

The task (a `keras_bert_app.tasks` class, or its registry name) reads its
files, builds its model and scores it; this loop trains it. A run folder
gets `metrics.json` (the official dev metrics), `logs/` (TensorBoard and
`history.csv`), the dev predictions and `preset/`: the fine-tuned model as a
preset folder (with a "task" entry naming the model class, labels and how
to read its input) that `predict`, `evaluate` and `export_for_serving` take.
"""

import dataclasses
import functools
import json
import os
import pathlib
import time
import warnings
from typing import Callable, Optional, Union

from keras_bert_app import errors
from keras_bert_app.convert import resolve
from keras_bert_app.data.bucketing import describe as describe_padding
from keras_bert_app.models.sequence_length import sequence_length_for
from keras_bert_app.tasks.base import Task, check_preset
from keras_bert_app.tasks.registry import resolve_task


@dataclasses.dataclass
class FinetuneResult:
    """What `finetune` wrote.

    Attributes:
        metrics: dict, as in `metrics.json`: "task" (how the run read its
            files), "train_examples", "train_seconds" (and SQuAD's window
            counts), and per dev set its official scores and counts.
        preset: pathlib.Path. The fine-tuned preset folder (`output/preset`).
        output: pathlib.Path. The run folder.
    """

    metrics: dict
    preset: pathlib.Path
    output: pathlib.Path


def finetune(
    task: Union[str, type, Task],
    preset: Union[str, os.PathLike],
    output: Union[str, os.PathLike],
    *,
    epochs: Optional[int] = None,
    batch_size: Optional[int] = None,
    learning_rate: Optional[float] = None,
    sequence_length: Optional[int] = None,
    seed: int = 0,
    jit_compile: Union[bool, str] = "auto",
    verbose: int = 2,
    log: Optional[Callable[[str], None]] = None,
    layerwise_lr_decay: Optional[float] = None,
    bucketing: bool = True,
    group_by_length: Optional[bool] = None,
    validation_freq: int = 1,
    mixed_precision: bool = False,
    strategy: str = "auto",
    tpu: Optional[str] = None,
    **task_options: object,
) -> FinetuneResult:
    """Fine-tune `preset` on a task; write metrics, logs, dev predictions and the preset.

    Trains with AdamW (10% warmup, linear decay), evaluates each dev set with
    the task's official metrics after the last epoch (SQuAD v2.0: after
    tuning the no-answer threshold on dev), and saves the fine-tuned preset.
    The same seed gives the same numbers.

    Args:
        task: a registry name ("classify", "glue", "swag", "ner", "squad"; see
            `kba.TASKS`), a `Task` subclass, or a `Task` instance (then no
            `task_options`).
        preset: str or path. A preset name or folder with encoder weights.
        output: str or path. The run folder (created; files in it are replaced).
        epochs: int. Training epochs (None: the task's default; the paper's
            A.3: 3, SQuAD 2).
        batch_size: int. (None: 32.)
        learning_rate: float. Peak learning rate (None: 2e-5; NER 5e-5; SQuAD 3e-5;
            an ELECTRA preset: 1e-4, the reference's, said in the log).
        sequence_length: int. Tokens per packed example (None: 128, SQuAD 384, or
            the encoder's `max_sequence_length` when shorter; a longer one is refused).
        seed: int. Seed of initialisation, dropout and shuffling.
        jit_compile: "auto", True or False: Keras' `jit_compile` ("auto":
            XLA on JAX and on TensorFlow with a GPU or TPU; `models.xla`).
        verbose: int. Keras' `fit` verbosity (0, 1 or 2).
        log: callable taking a str, for progress lines (None: quiet).
        layerwise_lr_decay: float in (0, 1] or None. Layer-wise learning-rate
            decay as ELECTRA fine-tunes: layer i of n (0-based) learns at
            `learning_rate * decay**(n + 1 - i)`, the embeddings at
            `decay**(n + 2)`, the pooler and head at the full rate
            (`models.layerwise_lr_decay`). None: one rate for all, or 0.8 for
            an ELECTRA preset (the reference's).
        bucketing: bool. Pad each batch to its longest example rounded up to
            a bucket length (`data.bucketing`), or to that longest example
            itself where the model compiles nothing per shape
            (`models.xla.pads_to_exact_length`). False pads every batch to
            `sequence_length`, as the original BERT.
        group_by_length: bool or None. With `bucketing`: training batches of
            similar lengths, as HF's `group_by_length`, each group sorted per
            class where examples have one label (`data.length_grouping`).
            None (the default): True with `bucketing`. False: batches of a
            random order, each cut to its longest example.
        validation_freq: int. Score the first dev set during training every
            this many epochs (the `val_*` curves of the logs) and after the
            last epoch, the pass that also gives `metrics.json`'s dev scores
            (`training.last_epoch_validation`). The trained weights do not
            depend on it.
        mixed_precision: bool. Build the model under Keras' `mixed_bfloat16`
            policy (bfloat16 computation, float32 weights), faster on
            hardware that computes in bfloat16. The global dtype policy is
            left as it was and the saved preset loads in float32.
        strategy: str. Where to train (`kba.create_distribution`): "auto" (a
            TPU where one is reachable, else all GPUs, else one device; one
            device on JAX and PyTorch), "tpu", "mirrored", "cpu". Inside a
            strategy's scope, that strategy. `batch_size` is the global
            batch, a multiple of the replicas.
        tpu: str or None. TPU name or grpc:// address (strategy "tpu").
        **task_options: the task's options, e.g. classify: `train`, `dev`,
            `text_column`, `label_column`, `text_pair_column`, `labels`,
            `regression`; glue: `glue_task`, `data_dir`; swag: `train`, `dev`,
            `num_choices`; ner: `train`, `dev`; squad: `version`, `train`,
            `dev`, `doc_stride`, `max_query_length`, `n_best_size`,
            `max_answer_length`, `null_score_diff_threshold`.

    Returns:
        `FinetuneResult`: the metrics, the preset folder and the run folder.

    Raises:
        keras_bert_app.errors.ArgumentError: an unknown task or option, a bad
            value (`ArgumentTypeError` for a wrong type), naming the argument.
        keras_bert_app.errors.MissingFileError: a training file, data folder
            or preset folder that is not there.
        ValueError: data that cannot be read (the file, line and problem).
    """
    from keras_bert_app.training.distribution import STRATEGY_NAMES, distribution_in_scope_or

    log = log or (lambda message: None)
    task = resolve_task(task, task_options)
    task.check_training_options()
    preset = resolve.resolve_preset(check_preset("preset", preset))  # read once, passed down as it is
    output = errors.check_path("output", output)
    defaults = task.DEFAULTS
    learning_rate, layerwise_lr_decay = _family_recipe(preset, learning_rate, layerwise_lr_decay, log)
    epochs = errors.check_int("epochs", defaults["epochs"] if epochs is None else epochs, minimum=1)
    batch_size = errors.check_int("batch_size", defaults["batch_size"] if batch_size is None else batch_size, minimum=1)
    learning_rate = errors.check_number(
        "learning_rate", defaults["learning_rate"] if learning_rate is None else learning_rate,
        minimum=0, minimum_inclusive=False,
    )
    if sequence_length is not None:
        errors.check_int("sequence_length", sequence_length, minimum=3)
    sequence_length = sequence_length_for(preset, sequence_length, defaults["sequence_length"])
    errors.check_int("seed", seed, minimum=0)
    errors.check_type("bucketing", bucketing, bool)
    if group_by_length is None:
        group_by_length = bucketing
    errors.check_type("group_by_length", group_by_length, bool)
    if group_by_length and not bucketing:
        raise errors.ArgumentError(
            "group_by_length", "group_by_length needs bucketing: with fixed padding every batch is "
            "sequence_length long, whatever its examples' lengths.",
        )
    validation_freq = errors.check_int("validation_freq", validation_freq, minimum=1)
    errors.check_type("mixed_precision", mixed_precision, bool)
    errors.check_choice("strategy", strategy, STRATEGY_NAMES)
    if tpu is not None:
        errors.check_type("tpu", tpu, str)
    from keras_bert_app.models.xla import pads_to_exact_length, resolve_jit_compile

    jit_compile = resolve_jit_compile(jit_compile)
    errors.check_int("verbose", verbose, minimum=0, maximum=2)
    if layerwise_lr_decay is not None:
        errors.check_number("layerwise_lr_decay", layerwise_lr_decay, minimum=0, maximum=1, minimum_inclusive=False)
    train_path, dev_paths = task.training_files()
    distribution = distribution_in_scope_or(strategy, tpu)
    distribution.per_replica_batch_size(batch_size)  # one line unless the replicas share it evenly

    import keras

    from keras_bert_app.models.bert_encoder import POOLER_WITHOUT_GRADIENT
    from keras_bert_app.training.last_epoch_validation import (
        LastEpochValidation, keras_validation_epochs, scores_from_predictions,
    )
    from keras_bert_app.training.throughput import StepTimes

    keras.utils.set_random_seed(seed)
    output.mkdir(parents=True, exist_ok=True)
    task.prepare(preset, sequence_length)
    task.bucketing = bucketing
    task.group_by_length = group_by_length
    train_examples = task.read(train_path)
    if not len(train_examples):
        source = getattr(train_examples, "source", train_path)
        raise errors.DataError(f"{source}: the training set is empty; nothing to fine-tune on.")
    task.learn_labels(train_examples)
    train = task.featurize("train", train_examples, training=True)
    log(task.summary(train))
    devs = []
    for name, path in dev_paths:
        examples = task.read(path)
        if not len(examples):
            raise errors.DataError(f"{examples.source}: the {name} set is empty; nothing to evaluate on.")
        devs.append(task.featurize(name, examples))
        log(task.summary(devs[-1]))

    steps_per_epoch = -(-train.num_features // batch_size)
    if train.num_features < batch_size:
        log(
            f"train: {train.num_features} {task.TRUNCATED_UNIT}, fewer than one batch of {batch_size}: "
            "each epoch is one step on all of them."
        )
    if distribution.num_replicas > 1:
        log(f"Distribution: {distribution.name}, {distribution.num_replicas} replicas, global batch {batch_size} "
            f"({distribution.per_replica_batch_size(batch_size)} a replica).")
    with distribution.scope():
        model = _build_model(task, preset, mixed_precision)
        if task.num_segments() > model.encoder.num_segments:
            raise errors.ArgumentError(
                "preset", f"the {task.NAME} task packs {task.num_segments()} segments (segment ids 0 and 1), but "
                f"the preset's encoder has {model.encoder.num_segments} segment type (type_vocab_size); it reads "
                "single texts only.",
            )
        model.compile(
            learning_rate=learning_rate, total_steps=steps_per_epoch * epochs,
            jit_compile=jit_compile,
            layerwise_lr_decay=layerwise_lr_decay,
        )
    # Where nothing compiles per shape, batches are cut to their longest example (`models.xla.pads_to_exact_length`).
    task.exact_lengths = bucketing and pads_to_exact_length(model)
    log(describe_padding(sequence_length, bucketing, group_by_length, task.exact_lengths, task.ONE_LABEL,
                         regression=getattr(model, "num_classes", None) == 1))
    fit_arguments = task.fit_arguments(train, batch_size, seed)
    decay_note = "" if layerwise_lr_decay is None else f", layer-wise decay {layerwise_lr_decay:g}"
    if model.encoder.dtype_policy.name != "float32":
        decay_note += f", dtype policy {model.encoder.dtype_policy.name}"
    log(
        f"Fine-tuning {type(model).__name__} ({model.count_params():,} parameters) for "
        f"{epochs} epochs x {steps_per_epoch} steps, batch {batch_size}, learning rate {learning_rate:g}{decay_note}."
    )
    callbacks = training_callbacks(output / "logs", log)
    last_epoch = None
    if scores_from_predictions(task):
        # The last epoch's val_* and the dev logits from one pass (`training.last_epoch_validation`); Keras'
        # validation dataset is made only for the epochs before it that `validation_freq` scores.
        logits = functools.partial(task.logits, model, devs[0], batch_size)
        last_epoch = LastEpochValidation(epochs, logits, callbacks)
        callbacks.insert(0, last_epoch)
        validation_freq = keras_validation_epochs(epochs, validation_freq)
    validation_data = task.validation_data(devs[0], batch_size) if validation_freq else None
    step_times = StepTimes(batch_size, train.num_features)
    callbacks.insert(0, step_times)
    started = time.perf_counter()
    with warnings.catch_warnings():
        # Tagging and span heads read the tokens, not the pooler: it gets no gradient, as it should.
        warnings.filterwarnings("ignore", message=POOLER_WITHOUT_GRADIENT)
        model.fit(
            **fit_arguments,
            validation_data=validation_data,
            validation_freq=validation_freq or 1,
            epochs=epochs,
            callbacks=callbacks,
            verbose=verbose,
        )
    train_seconds = time.perf_counter() - started

    metrics = {"task": None, "train_examples": len(train), **task.training_statistics(train)}
    metrics["train_seconds"] = round(train_seconds, 1)
    metrics.update(step_times.summary())
    scoring = model
    if model.encoder.dtype_policy.name != "float32":
        # The preset holds the float32 weights, which `predict` and `evaluate` run in float32: so do the dev scores.
        scoring = task.build_model(preset)
        scoring.set_weights(model.get_weights())
    for index, split in enumerate(devs):
        if index == 0 and last_epoch is not None and last_epoch.dev_logits is not None and scoring is model:
            logits = last_epoch.dev_logits
        else:
            logits = task.logits(scoring, split, batch_size)
        if index == 0:
            task.tune(split, logits, log)
        predictions = task.decode(split, logits)
        metrics[split.name] = {**task.metrics(split, predictions), **task.statistics(split)}
        task.write_predictions(task.predictions_path(output, split.name), split, predictions)
        scores = {k: v for k, v in metrics[split.name].items() if isinstance(v, float)}
        log(f"{split.name}: " + ", ".join(f"{k} {v:.4f}" for k, v in scores.items()))
    metrics["task"] = task.spec()
    _write_json(output / "metrics.json", metrics)
    folder = task.save_preset(model, output / "preset")
    log(f"Wrote {output / 'metrics.json'}, TensorBoard logs in {output / 'logs'}, preset {folder}.")
    return FinetuneResult(metrics=metrics, preset=pathlib.Path(folder), output=output)


def _family_recipe(preset, learning_rate, layerwise_lr_decay, log):
    """An ELECTRA preset's reference rate and layer-wise decay where the caller gave none (`models.electra_recipe`).

    Epochs (3; SQuAD 2) and the 10% warmup are every task's defaults already. `preset` is resolved.
    """
    from keras_bert_app.models import electra_recipe

    if not electra_recipe.is_electra_config(preset.config):
        return learning_rate, layerwise_lr_decay
    if learning_rate is None:
        learning_rate = electra_recipe.FINETUNING_LEARNING_RATE
    if layerwise_lr_decay is None:
        layerwise_lr_decay = electra_recipe.FINETUNING_LAYERWISE_LR_DECAY
    if isinstance(learning_rate, (int, float)) and isinstance(layerwise_lr_decay, (int, float)):
        log(electra_recipe.finetuning_recipe_line(learning_rate, layerwise_lr_decay))
    return learning_rate, layerwise_lr_decay


def _build_model(task, preset, mixed_precision):
    """The task's model, its layers under `mixed_bfloat16` when asked (the global policy restored after)."""
    import keras

    if not mixed_precision:
        return task.build_model(preset)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        return task.build_model(preset)
    finally:
        keras.config.set_dtype_policy(previous)


def training_callbacks(log_dir, log=print):
    """Per-epoch CSV history, and TensorBoard logs when TensorBoard is installed."""
    import importlib.util

    import keras

    log_dir.mkdir(parents=True, exist_ok=True)
    callbacks = [keras.callbacks.CSVLogger(str(log_dir / "history.csv"))]
    if importlib.util.find_spec("tensorboard") is None:
        log("TensorBoard is not installed (pip install tensorboard): logging to history.csv only.")
    else:
        callbacks.append(keras.callbacks.TensorBoard(log_dir=str(log_dir)))
    return callbacks


def _write_json(path, content):
    path.write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")
