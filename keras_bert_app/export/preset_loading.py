"""`load_for_serving`: the model a run or preset folder holds, for `export_for_serving`."""

from keras_bert_app import errors

HEADS = ("auto", "features", "masked_lm")


def load_for_serving(preset, head="auto"):
    """The model and the preset's "task" entry (`{}` when it has none) from a folder.

    A "task" entry (written by `finetune`) names the task model, rebuilt with
    its head by its task class (`keras_bert_app.tasks`). Without one the
    folder is an encoder preset: `head="masked_lm"` (or "auto" with the
    `pretrainer.weights.h5` of a `pretrain` run) gives a `BertPretrainer`,
    "features" a `BertEncoder`.

    Args:
        preset: `convert.resolve.ResolvedPreset` (or a folder, resolved
            here): a run's `preset/` folder or any of our presets. The model
            is built from it, not from its path: the folder is read once.
        head: "auto", "features" or "masked_lm" (encoder presets only).

    Returns:
        `(model, task entry)`.
    """
    from keras_bert_app import presets
    from keras_bert_app.convert import resolve
    from keras_bert_app.models.bert_pretrainer import HEAD_WEIGHTS_FILE
    from keras_bert_app.tasks.registry import task_from_entry

    errors.check_choice("head", head, HEADS)
    resolved = resolve.resolve_preset(preset)
    folder, task = resolved.folder, resolved.task
    if resolved.encoder_weights_path is None:
        raise errors.MissingFileError(
            "model", f"export: {folder} has no weights here (no {presets.ENCODER_WEIGHTS_FILE}): the SavedModel "
            "would serve freshly initialised weights. Export a run, a converted checkpoint or a folder with weights.",
        )
    class_name = task.get("class_name")
    if class_name is not None and head != "auto":
        raise errors.ArgumentError(
            "head", f"export: {folder} holds a fine-tuned {class_name}; --head applies to encoder presets only."
        )
    if class_name is not None:
        model_class = task_from_entry(task).model_class()
        if model_class.__name__ != class_name:
            raise errors.ArgumentError("model", f"export: {folder} holds a {class_name}, which no task trains.")
        return model_class.from_preset(resolved), task
    head_weights = resolved.file(HEAD_WEIGHTS_FILE)
    if head == "auto":
        head = "masked_lm" if head_weights is not None else "features"
    if head == "masked_lm":
        from keras_bert_app.models.bert_pretrainer import BertPretrainer

        if head_weights is None:
            raise errors.MissingFileError(
                "model", f"export --head masked_lm: {folder} has no {HEAD_WEIGHTS_FILE} (the masked-LM head a "
                "pretrain run writes): its fill-in answers would come from fresh weights.",
            )

        return BertPretrainer.from_preset(resolved), task
    from keras_bert_app.models.bert_encoder import BertEncoder

    return BertEncoder.from_preset(resolved), task
