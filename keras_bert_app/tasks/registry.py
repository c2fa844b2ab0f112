"""`TASKS`: the downstream tasks by name, and the task of a fine-tuned preset or model.

Adding a task: a module in `keras_bert_app.tasks` with a `Task` subclass,
and its class in `TASKS` below. `kba.finetune(name, ...)`, the
`keras-bert-app finetune NAME` subcommand, `predict`, `evaluate` and
`export` then find it.
"""

from keras_bert_app import errors
from keras_bert_app.tasks.base import Task
from keras_bert_app.tasks.glue import GlueClassification
from keras_bert_app.tasks.multiple_choice import MultipleChoice
from keras_bert_app.tasks.question_answering import QuestionAnswering
from keras_bert_app.tasks.text_classification import TextClassification
from keras_bert_app.tasks.token_classification import TokenClassification

# name -> Task class. For a model object the first task with its model class serves it.
TASKS = {
    task.NAME: task
    for task in (TextClassification, GlueClassification, MultipleChoice, TokenClassification, QuestionAnswering)
}


def get_task(name):
    """The `Task` class registered as `name` ("classify", "glue", "swag", "ner", "squad").

    Raises:
        keras_bert_app.errors.ArgumentError: (argument "task") for an unknown name.
    """
    errors.check_type("task", name, str)
    if name not in TASKS:
        raise errors.ArgumentError("task", f"task must be one of {sorted(TASKS)}; got {name!r}.")
    return TASKS[name]


def resolve_task(task, options=None):
    """A fresh `Task` instance from a registry name, a `Task` subclass or an instance.

    Args:
        task: str, `Task` subclass or `Task` instance.
        options: dict of task options (only with a name or a class).
    """
    options = options or {}
    if isinstance(task, Task):
        if options:
            name = sorted(options)[0]
            raise errors.ArgumentError(name, f"{name}: pass options to the task's constructor when giving a Task instance.")
        return task.copy()
    if isinstance(task, type) and issubclass(task, Task):
        return task(**options)
    return get_task(task)(**options)


def task_from_entry(entry, **overrides):
    """The `Task` a preset's "task" config entry describes (its `data`, else its model class)."""
    data = entry.get("data") or {}
    reader = data.get("reader")
    matches = [task for task in TASKS.values() if task.READER == reader] if reader else []
    if not matches:
        matches = [task for task in TASKS.values() if task.MODEL_CLASS_NAME == entry.get("class_name")]
    if not matches:
        raise errors.ArgumentError(
            "preset", f"no task reads {reader!r} data or trains a {entry.get('class_name')}; the tasks are {sorted(TASKS)}."
        )
    return matches[0].from_spec(data, label_names=entry.get("label_names"), **overrides)


def task_from_preset(preset, **overrides):
    """The fine-tuned `Task` of a preset folder (from its config's "task" entry).

    `preset` is a folder or a `convert.resolve.ResolvedPreset` (not read again).

    Raises:
        keras_bert_app.errors.ArgumentError: (argument "preset") when the
            preset holds no fine-tuned task.
    """
    from keras_bert_app.convert import resolve

    if not isinstance(preset, resolve.ResolvedPreset):
        errors.check_path("preset", preset)
    entry = resolve.resolve_preset(preset).task
    if not entry or "data" not in entry:
        raise errors.ArgumentError(
            "preset",
            f"Preset {str(preset)!r} has no fine-tuned task (no 'task' entry with 'data' in its "
            "config.json); pass the preset/ folder of a finetune run.",
        )
    return task_from_entry(entry, **overrides)


def task_for_model(model):
    """The `Task` (with default options) whose model class `model` is; None for other models."""
    for task in TASKS.values():
        if task.MODEL_CLASS_NAME == type(model).__name__:
            return task()
    return None
