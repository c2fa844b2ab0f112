"""Periodic, atomic checkpoints of model + optimizer, and resuming from them.

`fit` runs in "epochs" of `checkpoint_every` steps; after each one the
weights and the optimizer state (moments and step counter, so the schedule
resumes where it stopped) go to `step-NNNNNNNN.weights.h5`, written to a
temporary file and renamed, so a kill at any moment leaves the last complete
checkpoint intact. (Keras' `BackupAndRestore` writes in place and records the
epoch in a second file, so a kill between the two writes can pair new
weights with an old position; this does not.)
"""

import os
import pathlib
import re

import keras

CHECKPOINT_PATTERN = re.compile(r"^step-(\d{8})\.weights\.h5$")


def checkpoint_path(directory, step):
    return pathlib.Path(directory) / f"step-{step:08d}.weights.h5"


def list_checkpoints(directory):
    """`[(step, path)]` of the complete checkpoints in a folder, oldest first."""
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        match = CHECKPOINT_PATTERN.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def restore_latest(model, directory):
    """Load the newest checkpoint into a compiled, built model; return its step (0: none).

    The optimizer is built first so its state loads too.
    """
    checkpoints = list_checkpoints(directory)
    if not checkpoints:
        return 0
    if not model.optimizer.built:
        model.optimizer.build(model.trainable_variables)
    step, path = checkpoints[-1]
    model.load_weights(str(path))
    return step


class ResumableCheckpoint(keras.callbacks.Callback):
    """Save model + optimizer atomically at the end of every epoch.

    Args:
        directory: str or path. Checkpoint folder.
        steps_per_epoch: int. Optimizer steps in one `fit` epoch.
        keep: int. Checkpoints kept (older ones are deleted).
        enabled: bool. False on non-chief workers of a multi-worker run.
    """

    def __init__(self, directory, steps_per_epoch, keep=2, enabled=True):
        super().__init__()
        self.directory = pathlib.Path(directory)
        self.steps_per_epoch = steps_per_epoch
        self.keep = keep
        self.enabled = enabled

    def on_epoch_end(self, epoch, logs=None):
        if not self.enabled:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        step = (epoch + 1) * self.steps_per_epoch
        path = checkpoint_path(self.directory, step)
        temporary = path.with_name(f".{path.name}.tmp.weights.h5")
        self.model.save_weights(str(temporary), overwrite=True)
        os.replace(temporary, path)
        for _, old in list_checkpoints(self.directory)[: -self.keep]:
            old.unlink()
