"""Downstream tasks: one `Task` class per task, chosen by name from `registry.TASKS`.

A task owns its readers, featurization, model class, metrics, predictions
and serving head; `kba.finetune`, `kba.predict`, `kba.evaluate` and
`kba.export_for_serving` only call its methods. Adding a task is one module
here and one entry in `registry.TASKS`. Nothing here imports TensorFlow or
Keras at module level, so `--help` can list the tasks' options.
"""
