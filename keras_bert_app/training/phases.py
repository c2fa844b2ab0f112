"""Two-phase pretraining: most steps on short sequences, the last ones on long ones (BERT's schedule).

Devlin et al. (2018, appendix A.2) pretrain 90% of the steps at sequence
length 128 and the last 10% at 512, because attention costs grow with the
square of the length. `kba.pretrain(..., phase2_data=..., phase2_steps=N)`
reads `phase2_data` (records of another length) for the last N steps, at
`phase2_batch_size`. It is one run: one model, one optimizer and one
learning-rate schedule over all `steps`; a run killed in phase 2 resumes in
phase 2. Position embeddings past phase 1's length learn in phase 2 only,
as in the paper.
"""

import dataclasses
import json
import os

from keras_bert_app import errors

PHASE2_KEYS = ("phase2_data", "phase2_steps", "phase2_batch_size", "phase2_max_seq_length")


@dataclasses.dataclass(frozen=True)
class Phase:
    """One phase of a run: its settings (data, batch size, shapes) and its steps `[first, end)`."""

    number: int
    settings: object
    first: int
    end: int


def phase2_arguments(phase2_data, phase2_steps, phase2_batch_size, phase2_max_seq_length, steps, batch_size):
    """The phase-2 arguments checked (typed errors naming them), the batch size defaulted.

    Returns:
        dict of `PHASE2_KEYS` (`phase2_steps` 0 and the others None without a phase 2).
    """
    if phase2_data is None:
        for name, value in (("phase2_steps", phase2_steps), ("phase2_batch_size", phase2_batch_size),
                            ("phase2_max_seq_length", phase2_max_seq_length)):
            if value is not None:
                raise errors.ArgumentError(name, f"{name} applies to a phase 2: give phase2_data (its records) too.")
        return {"phase2_data": None, "phase2_steps": 0, "phase2_batch_size": None, "phase2_max_seq_length": None}
    phase2_data = os.fspath(errors.check_type("phase2_data", phase2_data, (str, os.PathLike), "a file pattern (str or path)"))
    if phase2_steps is None:
        raise errors.ArgumentError("phase2_steps", "phase2_data needs phase2_steps: the last steps of the run that read it.")
    errors.check_int("phase2_steps", phase2_steps, minimum=1)
    if phase2_steps >= steps:
        raise errors.ArgumentError(
            "phase2_steps",
            f"phase2_steps ({phase2_steps}) must be fewer than steps ({steps}), the steps of the whole run "
            "(phase 1 runs the first steps - phase2_steps).",
        )
    phase2_batch_size = batch_size if phase2_batch_size is None else phase2_batch_size
    errors.check_int("phase2_batch_size", phase2_batch_size, minimum=1)
    if phase2_max_seq_length is not None:
        errors.check_int("phase2_max_seq_length", phase2_max_seq_length, minimum=1)
    return {"phase2_data": phase2_data, "phase2_steps": phase2_steps, "phase2_batch_size": phase2_batch_size,
            "phase2_max_seq_length": phase2_max_seq_length}


def check_checkpoint_every(checkpoint_every, steps, phase2_steps):
    """Checkpoints fall on the phase switch: `checkpoint_every` must divide both phases' steps."""
    if phase2_steps and (steps - phase2_steps) % checkpoint_every:
        raise errors.ArgumentError(
            "checkpoint_every",
            f"checkpoint_every ({checkpoint_every}) must divide the steps of each phase "
            f"({steps - phase2_steps} and {phase2_steps}): a checkpoint falls on the switch to phase 2.",
        )


def phase2_shape(settings, encoder_config):
    """`phase2_max_seq_length` and `phase2_max_predictions` of the phase-2 records, checked.

    Every file's first record must hold the same length (files of two
    lengths in one pattern are refused, naming them), equal to
    `phase2_max_seq_length` when given; the records go through the checks
    of phase 1 (features, masked positions, pairing, the model's length).
    """
    if settings.phase2_data is None:
        return {}
    from keras_bert_app.training.pretraining_inputs import data_shape, records_shape

    length = records_shape(settings.phase2_data, argument="phase2_data", label="phase-2 records")[0]
    if settings.phase2_max_seq_length is not None and settings.phase2_max_seq_length != length:
        raise errors.ArgumentError(
            "phase2_max_seq_length",
            f"phase2_max_seq_length is {settings.phase2_max_seq_length} but the phase-2 records in "
            f"{settings.phase2_data!r} hold sequences of {length} tokens.",
        )
    limit = encoder_config.get("max_sequence_length", 512)
    if length > limit:
        raise errors.ArgumentError(
            "phase2_data",
            f"The phase-2 records in {settings.phase2_data!r} hold sequences of {length} tokens, longer than "
            f"the model's max_sequence_length {limit}.",
        )
    phase2 = dataclasses.replace(
        settings, data=settings.phase2_data, corpus=None, max_seq_length=None, max_predictions=None, pairing=None
    )
    shape = data_shape(phase2, encoder_config)
    return {"phase2_max_seq_length": shape["max_seq_length"], "phase2_max_predictions": shape["max_predictions"],
            "phase2_pairing": shape["pairing"]}


def phases(settings):
    """The run's phases: one, or phase 1 on `data`/`corpus` then phase 2 on `phase2_data`."""
    if settings.phase2_data is None:
        return [Phase(1, settings, 0, settings.steps)]
    switch = settings.steps - settings.phase2_steps
    second = dataclasses.replace(
        settings, data=settings.phase2_data, corpus=None, batch_size=settings.phase2_batch_size,
        max_seq_length=settings.phase2_max_seq_length, max_predictions=settings.phase2_max_predictions,
        pairing=settings.phase2_pairing or settings.pairing,
    )
    return [Phase(1, settings, 0, switch), Phase(2, second, switch, settings.steps)]


def run_config_entries(settings):
    """The phase-2 keys stored in `run_config.json` (none for a one-phase run: its folder stays as before)."""
    if settings.phase2_data is None:
        return {}
    return {key: getattr(settings, key) for key in PHASE2_KEYS}


def check_same_phases(run_dir, settings):
    """A rerun must give the stored phase-2 arguments (one-phase runs store none)."""
    from keras_bert_app.training.run_folder import RUN_CONFIG_FILE

    path = run_dir / RUN_CONFIG_FILE
    if not path.is_file():
        return
    stored = json.loads(path.read_text())
    given = run_config_entries(settings)
    differences = [
        f"{key}: {stored.get(key)!r} there, {given.get(key)!r} now"
        for key in PHASE2_KEYS
        if stored.get(key) != given.get(key)
    ]
    if differences:
        raise errors.ArgumentError(
            "output",
            f"{run_dir} holds a run with other phase-2 arguments ({'; '.join(differences)}). "
            "Rerun with the same arguments to resume it, or pass a new output folder.",
        )


def _raise_for_unreadable_records(error, settings):
    """A `DataError` naming the record file that `error` (from `fit`) failed to read, if that is what happened."""
    import tensorflow as tf

    from keras_bert_app.training.pretraining_inputs import unreadable_record_file

    if not isinstance(error, tf.errors.DataLossError) or settings.data is None:
        return
    found = unreadable_record_file(settings.data)
    if found is not None:
        path, message = found
        raise errors.DataError(
            f"{path} breaks off or is corrupt ({message}); rerun create-pretraining-data for it, or leave it out "
            "of the pattern. Checkpoints written before it stay."
        ) from None


def train(settings, resolved, pretrainer, distribution, checkpoint_dir):
    """Fit each phase from the last checkpoint on, checkpointing every `checkpoint_every` steps; write the preset."""
    import warnings

    import keras

    from keras_bert_app.models.bert_encoder import POOLER_WITHOUT_GRADIENT
    from keras_bert_app.training.checkpointing import ResumableCheckpoint, restore_latest
    from keras_bert_app.training.objectives import get_objective
    from keras_bert_app.training.pretraining_inputs import pretraining_batches
    from keras_bert_app.training.run_folder import PRESET_FOLDER, write_preset
    from keras_bert_app.training.throughput import ThroughputCallback, peak_flops

    run_dir = settings.output
    every = settings.checkpoint_every
    with distribution.scope():
        start_step = restore_latest(pretrainer, checkpoint_dir)
    run_phases = phases(settings)
    if start_step:
        phase = next(p for p in run_phases if p.first <= start_step < p.end) if start_step < settings.steps else None
        where = f", in phase {phase.number}" if phase is not None and len(run_phases) > 1 else ""
        settings.say(
            f"Resumed from step {start_step} of {settings.steps}{where} "
            f"(checkpoint {checkpoint_dir}/step-{start_step:08d}.weights.h5)."
        )
    peak = settings.peak_tflops * 1e12 if settings.peak_tflops else peak_flops(num_devices=distribution.num_replicas)
    chief = distribution.is_chief
    for phase in run_phases:
        if start_step >= phase.end:
            continue
        first = max(start_step, phase.first)
        current = phase.settings
        if len(run_phases) > 1:
            settings.say(
                f"Phase {phase.number}: steps {first + 1}-{phase.end} of {settings.steps}, sequences of "
                f"{current.max_seq_length} tokens, batch {current.batch_size}."
            )
        distribution.per_replica_batch_size(current.batch_size)
        batches = current.accumulation_steps
        dataset = pretraining_batches(current, resolved).skip((first - phase.first) * batches)
        flops = get_objective(current.objective).training_flops(pretrainer, current)
        callbacks = [
            ResumableCheckpoint(checkpoint_dir, every, enabled=chief),
            ThroughputCallback(current.batch_size, current.max_seq_length, flops, peak,
                               print_fn=settings.log if chief else None),
        ]
        if chief:
            callbacks += [
                keras.callbacks.CSVLogger(str(run_dir / "metrics.csv"), append=True),
                keras.callbacks.TensorBoard(str(run_dir / "logs"), update_freq=max(1, every // 10)),
            ]
        counter = _batch_counter()
        callbacks.append(counter)
        build_without_reading(pretrainer, dataset)
        with warnings.catch_warnings():
            # Without NSP (masked LM only, ELECTRA) no loss reads the pooler: expected, not worth a warning.
            warnings.filterwarnings("ignore", message=POOLER_WITHOUT_GRADIENT)
            try:
                pretrainer.fit(
                    dataset,
                    epochs=phase.end // every,
                    initial_epoch=first // every,
                    steps_per_epoch=every * batches,
                    callbacks=callbacks,
                    shuffle=False,  # the datasets shuffle, with a seed
                    verbose=settings.verbose,
                )
            except UnboundLocalError:  # Keras 3.15's JAX trainer on data that gives no batch at all
                if counter.batches:
                    raise
            except Exception as error:  # a record file that breaks off after its first record: one line naming it
                _raise_for_unreadable_records(error, current)
                raise
        _check_data_lasted(counter.batches, (phase.end - first) * batches, current)
    if chief:
        write_preset(pretrainer, settings.preset, run_dir / PRESET_FOLDER, resolved)
        settings.say(f"Done: {settings.steps} steps. Preset: {run_dir / PRESET_FOLDER}")


def build_without_reading(model, dataset):
    """Build the model's compiled losses, metrics and optimizer from the dataset's element spec, reading no batch.

    Left to `fit`, Keras on JAX and PyTorch builds them from a first batch of
    an iterator it throws away, which advances the seeded shuffles' shared
    seed generator: a resumed run would then see other batches than an
    uninterrupted one. Built here from zeros shaped as the spec and the
    model's outputs (`compute_output_spec`: no random draw), `fit` reads one
    iterator from the start.
    """
    import keras
    import numpy as np

    if keras.config.backend() == "tensorflow":
        return

    def zeros(spec):
        shape = [1] + [dimension or 1 for dimension in spec.shape[1:]]
        return np.zeros(shape, spec.dtype.as_numpy_dtype)

    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(keras.tree.map_structure(zeros, dataset.element_spec))
    symbolic = keras.tree.map_structure(lambda value: keras.KerasTensor(value.shape, str(value.dtype)), x)
    y_pred = keras.tree.map_structure(
        lambda spec: np.zeros(spec.shape, spec.dtype), model.compute_output_spec(symbolic, training=False)
    )
    model.compute_loss(x, y, y_pred, sample_weight, training=False)
    model.compute_metrics(x, y, y_pred, sample_weight)
    model.reset_metrics()
    if model.optimizer is not None and not model.optimizer.built:
        model.optimizer.build(model.trainable_variables)


def _batch_counter():
    """A Keras callback whose `batches` is the number of batches `fit` trained on (per epoch, the last batch index + 1)."""
    import keras

    class BatchCounter(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.per_epoch = {}
            self.epoch = None

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch

        def on_train_batch_end(self, batch, logs=None):
            self.per_epoch[self.epoch] = max(self.per_epoch.get(self.epoch, 0), batch + 1)

        @property
        def batches(self):
            return sum(self.per_epoch.values())

    return BatchCounter()


def _check_data_lasted(trained, expected, settings):
    """A `DataError` when `fit` stopped early: the repeated data ran dry, i.e. one pass gives no full batch.

    The datasets repeat forever and keep full batches only, so they run out
    only when a whole pass over the data (a dynamic-masking corpus is batched
    pass by pass) holds fewer examples than one batch; `fit` then stops with
    a warning, and the run would say it was done after training on nothing.
    """
    if trained >= expected:
        return
    source = f"corpus {', '.join(settings.corpus)}" if settings.data is None else f"records {settings.data}"
    raise errors.DataError(
        f"The {source} ran out after {trained} of {expected} batches: one pass over it gives fewer than one "
        f"batch of {settings.batch_size} pairs. Pass a smaller --batch-size (or more text)."
    )
