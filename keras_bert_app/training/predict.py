"""`kba.predict` and `kba.evaluate`: run a fine-tuned preset on a file.

```python
import keras_bert_app as kba

kba.predict("runs/topics/preset", "new.csv", "predictions.jsonl")
# SQuAD: a folder of the official files
kba.predict("runs/squad/preset", "questions.json", "answers/")
# {"accuracy": ..., "f1": ..., "examples": ...}
kba.evaluate("runs/topics/preset", "dev.csv")
```

The input is read the way the model was trained: the "task" entry of the
preset's config.json names the task and its settings. `predict` ignores
labels and writes JSON lines (each input `line`, the `prediction` and the
`logits`; NER: `line`, `words` and `tags`); a SQuAD preset writes the
official `predictions.json`, `nbest_predictions.json` (and v2.0
`null_odds.json`) into the output folder.
"""

import os
import pathlib
from typing import Callable, Optional, Union

from keras_bert_app import errors
from keras_bert_app.convert import resolve
from keras_bert_app.tasks.base import check_preset
from keras_bert_app.tasks.registry import get_task, task_from_preset


def predict(
    preset: Union[str, os.PathLike],
    input: Union[str, os.PathLike],
    output: Union[str, os.PathLike],
    batch_size: int = 32,
    *,
    task: Optional[str] = None,
    bucketing: bool = True,
    log: Optional[Callable[[str], None]] = None,
    **task_options: object,
) -> pathlib.Path:
    """Predict a file with a fine-tuned preset; write the predictions.

    Args:
        preset: str or path. The `preset/` folder of a `finetune` run (or
            the run folder; or an HF task checkpoint folder, converted once:
            `convert.local_preset`).
        input: str or path. The file to predict, in the task's format
            (labels, if any, are ignored).
        output: str or path. The JSON lines file to write; for SQuAD the
            folder for `predictions.json`, `nbest_predictions.json` (and
            `null_odds.json`).
        batch_size: int.
        task: str or None. The registry name the preset's task must be
            (e.g. "squad"); None takes any.
        bucketing: bool. Pad each batch to its longest example rounded up
            to a bucket length (`data.bucketing`; to that longest example
            itself where the model compiles nothing per shape), examples
            grouped by length and the predictions put back in the input's order; False pads
            every batch to the preset's sequence length.
        log: callable taking a str, for progress lines (None: quiet).
        **task_options: stored task options to change for this run, e.g.
            SQuAD's `null_score_diff_threshold` (default: the tuned one).

    Returns:
        pathlib.Path of `output`.

    Raises:
        keras_bert_app.errors.ArgumentError: a preset without a fine-tuned
            task (or not of `task`), a bad option; `MissingFileError` for a
            missing input.
        ValueError: input that cannot be read.
    """
    log = log or (lambda message: None)
    check_preset("preset", preset)
    input_path = errors.check_file("input", input)
    output = errors.check_path("output", output)
    errors.check_int("batch_size", batch_size, minimum=1)
    errors.check_type("bucketing", bucketing, bool)
    fine_tuned, split, model = _task_input_and_model(preset, input_path, task, task_options, bucketing, log,
                                                     labeled=False, nothing="no examples to predict")
    logits = fine_tuned.logits(model, split, batch_size)
    predictions = fine_tuned.decode(split, logits)
    paths = fine_tuned.write_predictions(output, split, predictions, logits=logits)
    log(f"Wrote {len(split)} predictions: " + ", ".join(str(path) for path in paths) + ".")
    return output


def evaluate(
    preset: Union[str, os.PathLike],
    input: Union[str, os.PathLike],
    batch_size: int = 32,
    *,
    bucketing: bool = True,
    log: Optional[Callable[[str], None]] = None,
) -> dict:
    """The official metrics of a fine-tuned preset on a labelled file.

    GLUE's metrics per task, accuracy (and F1, or correlations for
    regression) for `classify`, accuracy for SWAG, entity F1 for NER, exact
    match and F1 for SQuAD (at the preset's no-answer threshold).

    Args:
        preset: str or path. The `preset/` folder of a `finetune` run (or
            the run folder; or an HF task checkpoint folder, converted once:
            `convert.local_preset`).
        input: str or path. A labelled file in the task's format.
        batch_size: int.
        bucketing: bool. As for `predict`: length-grouped batches, each
            padded to a bucket length; False pads to the sequence length.
        log: callable taking a str, for progress lines (None: quiet).

    Returns:
        dict of the metrics, with `examples` (SQuAD: and `features`).

    Raises:
        keras_bert_app.errors.ArgumentError: a preset without a fine-tuned
            task; `MissingFileError` for a missing input.
        ValueError: input that cannot be read.
    """
    log = log or (lambda message: None)
    check_preset("preset", preset)
    input_path = errors.check_file("input", input)
    errors.check_int("batch_size", batch_size, minimum=1)
    errors.check_type("bucketing", bucketing, bool)
    fine_tuned, split, model = _task_input_and_model(preset, input_path, None, {}, bucketing, log,
                                                     labeled=True, nothing="no examples to evaluate on")
    predictions = fine_tuned.decode(split, fine_tuned.logits(model, split, batch_size))
    return {**fine_tuned.metrics(split, predictions), **fine_tuned.statistics(split)}


def _task_input_and_model(preset, input_path, task, task_options, bucketing, log, labeled, nothing):
    """The preset's fine-tuned task, the input read and featurized its way, and its model compiled as `finetune`
    compiles it (the logits of its dev predictions, near-ties included)."""
    from keras_bert_app.convert.local_preset import preset_folder

    # A run folder's preset/; an HF task checkpoint converted; read once, passed down as it is.
    preset = resolve.resolve_preset(preset_folder(preset, log, task=True))
    fine_tuned = _fine_tuned_task(preset, task, task_options)
    fine_tuned.prepare(preset)
    fine_tuned.bucketing = bucketing
    examples = fine_tuned.read(input_path, labeled=labeled)
    if not len(examples):
        raise errors.DataError(f"{input_path}: {nothing}.")
    split = fine_tuned.featurize("input", examples)
    log(fine_tuned.summary(split))
    model = fine_tuned.build_model(preset)
    model.compile()
    return fine_tuned, split, model


def _fine_tuned_task(preset, task, task_options):
    check_preset("preset", preset)
    fine_tuned = task_from_preset(preset, **task_options)
    if task is not None and not isinstance(fine_tuned, get_task(task)):
        raise errors.ArgumentError(
            "preset",
            f"Preset {str(preset)!r} holds a fine-tuned {fine_tuned.NAME} task, not {task}: "
            f"pass the preset/ folder of a `finetune {task}` run.",
        )
    return fine_tuned
