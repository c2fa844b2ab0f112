"""`convert_checkpoint`: foreign checkpoints to our preset folders, and our presets back out.

In:  Hugging Face (`BertModel` / `BertForPreTraining`), keras-hub
     (`BertBackbone`) or an original Google release -> our preset folder
     (`config.json`, `vocab.txt`, `model.weights.h5`, and
     `pretrainer.weights.h5` when the checkpoint has pretraining heads).
Out: one of our presets (name or folder) -> an HF folder (with the
     pretraining heads when the preset has them) or a keras-hub preset.

This stage builds our models (layer 3); the format readers and writers it
uses (`detect`, `huggingface`, `keras_hub`, `google`) never do.
"""

import pathlib
import shutil

from keras_bert_app import errors, presets
from keras_bert_app.convert import detect, resolve

SOURCE_FORMATS = ("huggingface", "keras_hub", "google")
TARGET_FORMATS = ("huggingface", "keras_hub")


def convert_checkpoint(
    source: str | pathlib.Path,
    output: str | pathlib.Path,
    source_format: str | None = None,
    target_format: str | None = None,
    overwrite: bool = False,
) -> pathlib.Path:
    """Convert a checkpoint into our preset format, or one of our presets into another format.

    Without `target_format`, `source` is a foreign checkpoint read into our
    preset folder `output`; with it, `source` is one of our presets (a
    built-in name or a folder) written to `output` in that format.

    Args:
        source: str or path. With no `target_format`: a Hugging Face folder
            (or its `.safetensors`/`.bin` file), a keras-hub preset folder or
            an original Google release folder. With `target_format`: our
            preset name or folder.
        output: str or path. The folder to write (created).
        source_format: "huggingface", "keras_hub" (or "keras-hub") or
            "google"; None detects it. Only without `target_format`.
        target_format: "huggingface" or "keras_hub" (or "keras-hub"), or
            None to write our preset format.
        overwrite: bool. Write into a non-empty `output`.

    Returns:
        pathlib.Path of the folder written.

    Raises:
        keras_bert_app.errors.ArgumentError: an unknown format, both formats
            given, or a `source` that is no checkpoint or preset.
        keras_bert_app.errors.MissingFileError: `source` does not exist.
        keras_bert_app.errors.OutputExistsError: `output` is not empty and
            `overwrite` is False.
        keras_bert_app.convert.weight_map.ConversionError: weights that do
            not fit the config (a `DataError`), named with their shapes.
    """
    output = errors.check_path("output", output)
    errors.check_type("overwrite", overwrite, bool)
    source_format = _format_argument("source_format", source_format, SOURCE_FORMATS)
    target_format = _format_argument("target_format", target_format, TARGET_FORMATS)
    if source_format is not None and target_format is not None:
        raise errors.ArgumentError(
            "source_format", "give source_format (a checkpoint into our preset) or target_format (our preset out), not both."
        )
    if output.exists() and (not output.is_dir() or any(output.iterdir())) and not overwrite:
        raise errors.OutputExistsError(f"{output} is not empty; pass --overwrite (overwrite=True) to write into it.")
    if target_format is not None:
        errors.check_type("source", source, (str, pathlib.PurePath), "a preset name or folder (str or path)")
        return export_preset(source, output, target_format)
    source = errors.check_path("source", source)
    if not source.exists():
        raise errors.MissingFileError("source", f"source: {source}: no such checkpoint folder or file.")
    folder, _ = import_checkpoint(source, output, source_format)
    return folder


def import_checkpoint(source, output, source_format=None):
    """A foreign checkpoint folder (or HF weights file) as our preset folder.

    Every weight is read once, into a `BertPretrainer` (whose heads stay
    unused when the checkpoint has none).

    Returns:
        (output folder, bool: the pretraining heads were converted).
    """
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.models.bert_pretrainer import HEAD_WEIGHTS_FILE, BertPretrainer

    source = pathlib.Path(source).expanduser()
    output = pathlib.Path(output).expanduser()
    source_format = detect.format_name(source.parent if source.is_file() else source, source_format)
    config = detect.read_config(source, source_format)
    folder = source.parent if source.is_file() else source
    vocabulary = folder / config["tokenizer"]["vocabulary"]
    if not vocabulary.is_file():
        raise errors.MissingFileError(
            "source", f"{source}: no vocabulary file {config['tokenizer']['vocabulary']!r}."
        )
    pretrainer = BertPretrainer(BertEncoder(**config["encoder"]))
    heads = detect.load_weights(pretrainer, source, source_format)
    output.mkdir(parents=True, exist_ok=True)
    if heads:
        pretrainer.save_to_preset(output)
    else:
        pretrainer.encoder.save_to_preset(output)
        (output / HEAD_WEIGHTS_FILE).unlink(missing_ok=True)  # an earlier conversion's, with --overwrite
    shutil.copyfile(vocabulary, output / presets.VOCABULARY_FILE)
    for key in ("name", "description"):
        presets.write_config_entry(output, key, config[key])
    presets.write_config_entry(output, "tokenizer", {**config["tokenizer"], "vocabulary": presets.VOCABULARY_FILE})
    return output, heads


def export_preset(preset, output, target_format):
    """Write one of our presets (name or folder) as an HF folder or a keras-hub preset.

    The pretraining heads go to HF too when the preset has
    `pretrainer.weights.h5`; keras-hub gets the encoder (a BertBackbone).

    Returns:
        pathlib.Path of the folder written.
    """
    from keras_bert_app.convert import huggingface, keras_hub
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.models.bert_pretrainer import HEAD_WEIGHTS_FILE, BertPretrainer

    writers = {"huggingface": huggingface, "keras_hub": keras_hub}
    target_format = _format_argument("target_format", target_format, TARGET_FORMATS)
    resolved = resolve.resolve_preset(preset)
    if target_format == "huggingface" and (resolved.folder / HEAD_WEIGHTS_FILE).is_file():
        model = BertPretrainer.from_preset(preset)
    else:
        model = BertEncoder.from_preset(preset)
    lowercase = resolved.config.get("tokenizer", {}).get("lowercase", True)
    return pathlib.Path(writers[target_format].save(model, output, resolved.vocabulary_path, lowercase))


def _format_argument(argument, value, choices):
    """The canonical format name (`keras-hub` -> `keras_hub`, `hf` -> `huggingface`), or None."""
    if value is None:
        return None
    errors.check_type(argument, value, str)
    return errors.check_choice(argument, detect.FORMAT_ALIASES.get(value, value.replace("-", "_")), choices)
