"""`preset_folder`: what `predict`, `evaluate` and `export` are given, as one of our preset folders."""

import hashlib
import importlib.metadata
import os
import pathlib
import shutil

from keras_bert_app import errors, presets
from keras_bert_app.convert import detect


def preset_folder(preset, log=None, task=False):
    """Our preset for `preset` as `predict`, `evaluate` and `export` take it: a run folder or a foreign checkpoint too.

    - A `finetune` or `pretrain` run folder (no config.json of its own, a
      `preset/` inside): that `preset/`.
    - A Hugging Face, keras-hub or original Google checkpoint folder:
      converted once, as `convert` does, into
      `$KERAS_BERT_APP_CACHE/converted/` (converted again when its files change).
    - Anything else (a built-in name, one of our folders) as it is.

    With `task=True` (`predict`, `evaluate`) a foreign checkpoint must be a
    task class: any other is refused before converting (`ArgumentError`).

    Returns:
        str or pathlib.Path.
    """
    from keras_bert_app.convert import huggingface_heads, hub
    from keras_bert_app.convert.checkpoint import import_checkpoint

    folder = pathlib.Path(preset).expanduser()
    if not folder.is_dir():
        return preset
    if not (folder / presets.CONFIG_FILE).is_file() and (folder / "preset" / presets.CONFIG_FILE).is_file():
        return folder / "preset"
    source_format = detect.detect_format(folder)
    if source_format is None:
        return preset
    if task and (source_format != "huggingface" or huggingface_heads.task_head(folder) is None):
        raise errors.ArgumentError(
            "preset", f"{folder}: a {source_format} checkpoint without a BERT, ELECTRA or ALBERT task head that we "
            "read (...ForSequenceClassification, ...ForTokenClassification, ...ForQuestionAnswering, "
            f"...ForMultipleChoice): fine-tune it first (`finetune ... --preset {folder}`) and pass the run folder."
        )
    try:
        version = importlib.metadata.version("keras-bert-app")
    except importlib.metadata.PackageNotFoundError:
        version = None
    files = sorted((str(path.relative_to(folder)), path.stat().st_size, path.stat().st_mtime_ns)
                   for path in folder.rglob("*") if path.is_file())
    identity = (version, str(folder.resolve()), files)  # another release's converter converts again
    key = hashlib.sha256(repr(identity).encode()).hexdigest()[:20]
    converted = hub.cache_root() / "converted" / key
    if not (converted / presets.CONFIG_FILE).is_file():
        if log is not None:
            log(f"{folder}: a {source_format} checkpoint, converted to our preset format once, in {converted}.")
        temporary = converted.with_name(f"{key}.{os.getpid()}.tmp")
        shutil.rmtree(temporary, ignore_errors=True)
        try:
            import_checkpoint(folder, temporary, source_format)
            if not (converted / presets.CONFIG_FILE).is_file():  # a folder left without its config: replaced
                shutil.rmtree(converted, ignore_errors=True)
            try:
                os.replace(temporary, converted)
            except OSError:
                if not (converted / presets.CONFIG_FILE).is_file():  # else another process converted it meanwhile
                    raise
        finally:
            shutil.rmtree(temporary, ignore_errors=True)
    return converted
