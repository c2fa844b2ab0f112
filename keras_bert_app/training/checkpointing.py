"""Periodic, atomic checkpoints of model + optimizer, and resuming from them.

`fit` runs in "epochs" of `checkpoint_every` steps; after each one the
weights and the optimizer state go to `step-NNNNNNNN.weights.h5`, written to
a temporary file and renamed, so a kill at any moment leaves the last
complete checkpoint intact (Keras' `BackupAndRestore` writes in place).

The dropout random state (each `keras.random.SeedGenerator`; on PyTorch,
torch's generators), which `save_weights` leaves out, goes to
`step-NNNNNNNN.seeds.npz` first, so a resumed run draws the masks the
uninterrupted run would have drawn.
"""

import os
import pathlib
import re

import keras
import numpy as np

CHECKPOINT_PATTERN = re.compile(r"^step-(\d{8})\.weights\.h5$")
SEED_STATE_NAME = "seed_generator_state"  # the variable of every `keras.random.SeedGenerator`


def checkpoint_path(directory, step):
    return pathlib.Path(directory) / f"step-{step:08d}.weights.h5"


def seeds_path(directory, step):
    return pathlib.Path(directory) / f"step-{step:08d}.seeds.npz"


def seed_states(model):
    """The model's random-seed state variables (its dropout layers' and any other `SeedGenerator`'s), in order."""
    return [variable for variable in model.variables if variable.name == SEED_STATE_NAME]


def list_checkpoints(directory):
    """`[(step, path)]` of the complete checkpoints in a folder, oldest first."""
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        return []
    matches = ((CHECKPOINT_PATTERN.match(path.name), path) for path in directory.iterdir())
    return sorted((int(match.group(1)), path) for match, path in matches if match)


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
    seeds = seeds_path(directory, step)
    if seeds.is_file():  # checkpoints written before seeds were kept resume without them
        with np.load(seeds) as saved:
            states = saved["states"]
        variables = seed_states(model)
        if len(states) == len(variables):  # in the model's order (their names count up per process)
            for variable, state in zip(variables, states):
                variable.assign(state)
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

    def on_train_begin(self, logs=None):
        # torch's generator as the newest checkpoint left it, set before the first batch: `fit`'s setup draws from
        # it (its data loader's seed) after the restore, where an uninterrupted run passes the checkpoint without.
        self._torch_states = None
        checkpoints = list_checkpoints(self.directory)
        seeds = seeds_path(self.directory, checkpoints[-1][0]) if checkpoints else None
        if keras.config.backend() == "torch" and seeds is not None and seeds.is_file():
            with np.load(seeds) as saved:
                self._torch_states = {name: saved[name] for name in ("torch", "torch_cuda") if name in saved.files}

    def on_train_batch_begin(self, batch, logs=None):
        if getattr(self, "_torch_states", None):
            import torch

            if "torch" in self._torch_states:
                torch.set_rng_state(torch.from_numpy(self._torch_states["torch"]))
            if "torch_cuda" in self._torch_states and torch.cuda.is_available():
                torch.cuda.set_rng_state_all([torch.from_numpy(state) for state in self._torch_states["torch_cuda"]])
            self._torch_states = None

    def on_epoch_end(self, epoch, logs=None):
        if not self.enabled:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        step = (epoch + 1) * self.steps_per_epoch
        path = checkpoint_path(self.directory, step)
        seeds = seeds_path(self.directory, step)
        variables = seed_states(self.model)
        arrays = {"states": np.array([keras.ops.convert_to_numpy(variable.value) for variable in variables])}
        if keras.config.backend() == "torch":  # an unseeded Dropout on PyTorch draws from torch's own generator
            import torch

            arrays["torch"] = torch.get_rng_state().numpy()
            if torch.cuda.is_available():  # dropout on a GPU draws from each device's generator
                arrays["torch_cuda"] = np.stack([state.numpy() for state in torch.cuda.get_rng_state_all()])
        with open(seeds.with_name(f".{seeds.name}.tmp"), "wb") as file:
            np.savez(file, **arrays)
        os.replace(file.name, seeds)
        temporary = path.with_name(f".{path.name}.tmp.weights.h5")
        self.model.save_weights(str(temporary), overwrite=True)
        os.replace(temporary, path)
        for old_step, old in list_checkpoints(self.directory)[: -self.keep]:
            old.unlink()
            seeds_path(self.directory, old_step).unlink(missing_ok=True)
