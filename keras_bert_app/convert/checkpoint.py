"""`convert_checkpoint`: foreign checkpoints to our preset folders, and our presets back out.

In:  a Hugging Face, keras-hub or original Google checkpoint of BERT, ELECTRA or ALBERT -> our preset folder
     (with the heads' weights when the checkpoint has them). An ELECTRA pair (an original release, or an HF
     discriminator with `generator=`) gives the discriminator's preset with the generator's in `generator/`; HF
     task classes give the fine-tuned task preset a `finetune` run writes (`task_checkpoint`).
Out: one of our presets -> an HF folder (with the pretraining heads or task class when the preset has them) or a
     keras-hub preset, in the formats of the preset's family (`family`: ALBERT's to HF only).

This stage builds our models (layer 3); the format readers and writers it uses never do.
"""

import contextlib
import pathlib
import shutil

from keras_bert_app import errors, presets
from keras_bert_app.convert import detect, family, huggingface_heads, resolve, task_checkpoint, tokenizer_json
from keras_bert_app.convert.family import ALBERT, ELECTRA

SOURCE_FORMATS = ("huggingface", "keras_hub", "google")
TARGET_FORMATS = ("huggingface", "keras_hub")
SENTENCEPIECE_FILE = "spiece.model"
GENERATOR_FOLDER = "generator"  # an ELECTRA pair: the generator's preset inside the discriminator's
# The heads' weights files of BertPretrainer, ElectraDiscriminator and ElectraPretrainer (a new
# conversion with --overwrite removes an earlier one's).
HEAD_FILES = ("pretrainer.weights.h5", "discriminator.weights.h5", "electra_pretrainer.weights.h5")



def convert_checkpoint(
    source: str | pathlib.Path,
    output: str | pathlib.Path,
    source_format: str | None = None,
    target_format: str | None = None,
    overwrite: bool = False,
    generator: str | pathlib.Path | None = None,
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
        generator: str or path or None. With an HF ELECTRA discriminator as
            `source`: its generator's folder (`ElectraForMaskedLM`), written
            to `output/generator/` (the pair shares its embedding tables, so
            their sizes must agree). An original ELECTRA release brings its
            generator without it.

    Returns:
        pathlib.Path of the folder written.

    Raises:
        keras_bert_app.errors.ArgumentError: an unknown format, both formats
            given, or a `source` that is no checkpoint or preset.
        keras_bert_app.errors.MissingFileError: `source` does not exist.
        keras_bert_app.errors.OutputExistsError: `output` is not empty and
            `overwrite` is False.
        keras_bert_app.convert.weight_map.ConversionError: weights that do
            not fit the config (a `DataError`), named with their shapes; an
            unknown architecture, or an ELECTRA pair whose embedding sizes
            disagree, named with the file and field.
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
        if generator is not None:
            raise errors.ArgumentError("generator", "generator is for reading a checkpoint (source_format), not writing one.")
        return export_preset(source, output, target_format)
    source = errors.check_path("source", source)
    if not source.exists():
        raise errors.MissingFileError("source", f"source: {source}: no such checkpoint folder or file.")
    if output.exists() and output.resolve() == (source.parent if source.is_file() else source).resolve():
        raise errors.ArgumentError("output", f"output {output} is the checkpoint's own folder; write to another folder.")
    folder, _ = import_checkpoint(source, output, source_format, generator)
    return folder


def import_checkpoint(source, output, source_format=None, generator=None):
    """A foreign checkpoint folder (or HF weights file) as our preset folder.

    Every weight is read once: a BERT checkpoint into a `BertPretrainer`
    (whose heads stay unused when the checkpoint has none; without an NSP
    head for a masked-LM class), an ELECTRA one as `_import_electra` says.

    Returns:
        (output folder, bool: the pretraining heads were converted). On
        failure, the files it wrote are removed (and the folder, if it
        made it).
    """
    source = pathlib.Path(source).expanduser()
    output = pathlib.Path(output).expanduser()
    source_format = detect.format_name(source.parent if source.is_file() else source, source_format)
    config = detect.read_config(source, source_format)
    vocabulary = _vocabulary(source, config, source_format)
    created = not output.exists()
    output.mkdir(parents=True, exist_ok=True)
    _clear(output)
    try:
        heads = _import_into(source, output, source_format, config, vocabulary, generator)
    except BaseException:
        # Nothing half-written: a preset without its vocabulary (or weights) would fail later, far from here.
        _clear(output)
        if created:
            with contextlib.suppress(OSError):
                output.rmdir()  # only when empty
        raise
    return output, heads


def _import_into(source, output, source_format, config, vocabulary, generator):
    """`import_checkpoint`'s writing of the preset files into `output`; returns whether the heads were converted."""
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.models.bert_pretrainer import BertPretrainer

    head = huggingface_heads.task_head(source) if source_format == "huggingface" else None  # a task class
    if head is not None and generator is None:
        heads = task_checkpoint.import_task(source, output, config, head)  # a fine-tuned task preset
    elif config.get("architecture") == ELECTRA:
        heads = _import_electra(source, output, source_format, config, generator)
    else:
        if generator is not None:
            raise errors.ArgumentError(
                "generator", f"generator is for ELECTRA checkpoints; {source} is a {family.family(config)} checkpoint."
            )
        pretrainer = BertPretrainer(BertEncoder(**config["encoder"]),
                                    next_sentence_prediction=config.get("next_sentence_prediction", True))
        heads = detect.load_weights(pretrainer, source, source_format)
        _save(pretrainer, output, heads)
    _write_preset_files(output, vocabulary, config)
    return heads


def _import_electra(source, output, source_format, config, generator):
    """An ELECTRA checkpoint (and its generator) as our preset folder.

    A generator checkpoint (HF `ElectraForMaskedLM`) becomes a masked-LM
    pretrainer preset (`BertPretrainer` without NSP); anything else the
    discriminator (`ElectraDiscriminator`: the encoder and, when the
    checkpoint has it, its replaced-token head in `discriminator.weights.h5`).
    A pair (an original release, or an HF discriminator with `generator`)
    becomes an `ElectraPretrainer` preset as `pretrain --objective electra`
    writes it: the discriminator, `electra_pretrainer.weights.h5` and
    `generator/`, so pretraining can go on from it.

    Returns:
        bool. True when the checkpoint's head was converted.
    """
    from keras_bert_app.convert import electra_pair, google, huggingface
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.models.bert_pretrainer import BertPretrainer
    from keras_bert_app.models.electra_discriminator import ElectraDiscriminator

    if config.get("checkpoint_architecture") == huggingface.GENERATOR_ARCHITECTURE:
        if generator is not None:
            raise errors.ArgumentError(
                "generator", f"{source} is itself a generator (ElectraForMaskedLM); give the discriminator as source."
            )
        model = BertPretrainer(BertEncoder(**config["encoder"]), next_sentence_prediction=False)
        heads = detect.load_weights(model, source, source_format)
        _save(model, output, heads)
        return heads
    discriminator = ElectraDiscriminator(BertEncoder(**config["encoder"]))
    heads = detect.load_weights(discriminator, source, source_format)
    if source_format == "google" and config.get("generator"):
        if generator is not None:
            raise errors.ArgumentError("generator", f"{source} holds its generator already; generator is for HF pairs.")
        generator_source = source
        generator_preset = {**config, "description": config["description"].replace("(discriminator)", "(generator)")}
        masked_lm = BertPretrainer(BertEncoder(**config["generator"]), next_sentence_prediction=False)
        google.load_weights(masked_lm, source, generator=True)
    elif generator is not None:
        generator_source = errors.check_path("generator", generator)
        if not generator_source.exists():
            raise errors.MissingFileError("generator", f"generator: {generator_source}: no such checkpoint folder.")
        generator_preset = detect.read_config(generator_source, "huggingface")
        electra_pair.check_pair(config, generator_preset, generator_source)
        masked_lm = BertPretrainer(BertEncoder(**generator_preset["encoder"]), next_sentence_prediction=False)
        huggingface.load_weights(masked_lm, generator_source)
    else:
        _save(discriminator, output, heads)
        return heads
    electra_pair.save_pair(discriminator, masked_lm, output)
    # (A release's generator shares the folder whose vocabulary the discriminator's conversion found.)
    _write_preset_files(output / GENERATOR_FOLDER, _vocabulary(generator_source, generator_preset, "huggingface"),
                        generator_preset)
    return heads


def _save(model, output, heads):
    """Write the encoder preset, and the heads' weights when they were converted."""
    output.mkdir(parents=True, exist_ok=True)
    if heads:
        model.save_to_preset(output)
    else:
        model.encoder.save_to_preset(output)


def _clear(output):
    """Remove what an earlier conversion into `output` wrote (with --overwrite), and nothing else."""
    from keras_bert_app.models.bert_task import TASK_WEIGHTS_FILE

    for name in (presets.CONFIG_FILE, presets.ENCODER_WEIGHTS_FILE, presets.VOCABULARY_FILE, SENTENCEPIECE_FILE,
                 *HEAD_FILES, TASK_WEIGHTS_FILE):
        (output / name).unlink(missing_ok=True)
    if (output / GENERATOR_FOLDER / presets.CONFIG_FILE).is_file():
        shutil.rmtree(output / GENERATOR_FOLDER)


def _vocabulary(source, config, source_format):
    """The checkpoint's `vocab.txt` or SentencePiece model (ALBERT), or an HF folder's `tokenizer.json` without them."""
    vocabulary = detect.vocabulary_file(source.parent if source.is_file() else source, config, source_format)
    if vocabulary is None:
        name = config["tokenizer"].get("sentencepiece_model") or config["tokenizer"]["vocabulary"]
        hint = " (nor a tokenizer.json)" if source_format == "huggingface" else ""
        raise errors.MissingFileError("source", f"{source}: no vocabulary file {name!r}{hint}.")
    return vocabulary


def _write_preset_files(output, vocabulary, config):
    """`vocab.txt` (or `spiece.model`) and the `config.json` entries besides the encoder (name, description,
    tokenizer, architecture)."""
    for key in ("name", "description"):
        presets.write_config_entry(output, key, config[key])
    key, name = (("sentencepiece_model", SENTENCEPIECE_FILE) if config["tokenizer"].get("sentencepiece_model")
                 else ("vocabulary", presets.VOCABULARY_FILE))
    if vocabulary.name == tokenizer_json.TOKENIZER_FILE:  # an HF folder saved by transformers 5
        (output / name).write_bytes(tokenizer_json.file_bytes(vocabulary, name))
    else:
        shutil.copyfile(vocabulary, output / name)
    presets.write_config_entry(output, "tokenizer", {**config["tokenizer"], key: name})
    if config.get("architecture"):
        presets.write_config_entry(output, "architecture", config["architecture"])


def export_preset(preset, output, target_format):
    """Write one of our presets (name or folder) as an HF folder or a keras-hub preset, in its family's formats.

    The pretraining heads go to HF too when the preset has them
    (`pretrainer.weights.h5`; for ELECTRA, the discriminator's head or the
    generator's masked-LM head), a fine-tuned task as the HF task class;
    keras-hub gets the encoder (a BertBackbone, or an ElectraBackbone for
    ELECTRA; ALBERT has none).

    Returns:
        pathlib.Path of the folder written.
    """
    from keras_bert_app.convert import huggingface, keras_hub
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.models.bert_pretrainer import HEAD_WEIGHTS_FILE, BertPretrainer
    from keras_bert_app.models.electra_discriminator import HEAD_WEIGHTS_FILE as DISCRIMINATOR_FILE
    from keras_bert_app.models.electra_discriminator import ElectraDiscriminator

    target_format = _format_argument("target_format", target_format, TARGET_FORMATS)
    folder = pathlib.Path(preset).expanduser()
    if not (folder / presets.CONFIG_FILE).is_file() and (folder / "preset" / presets.CONFIG_FILE).is_file():
        preset = folder / "preset"  # a `finetune` or `pretrain` run folder: its preset, as `predict` takes it
    resolved = resolve.resolve_preset(preset)
    kind = family.family(resolved.config)
    if resolved.config.get("encoder", {}).get("causal"):
        raise errors.ArgumentError(
            "source", f"{preset} is a causal (left-to-right) encoder: HF's and keras-hub's BERT are "
            "bidirectional and pool [CLS], so it has no equivalent there; use it as our preset."
        )
    if kind == ALBERT and target_format != "huggingface":
        raise errors.ArgumentError(
            "target_format", f"an ALBERT preset is written as 'huggingface' only; got {target_format!r}."
        )
    hf = target_format == "huggingface"
    if hf and "class_name" in resolved.config.get("task", {}):
        return task_checkpoint.export_task(preset, resolved, output)  # a fine-tuned task: the HF task class
    if hf and kind == ELECTRA and (resolved.folder / DISCRIMINATOR_FILE).is_file():
        model = ElectraDiscriminator.from_preset(preset)
    elif hf and kind == ELECTRA and family.ELECTRA_PRETRAINER_ENTRY in resolved.config:
        model = _discriminator_of_run(preset)
    elif hf and (resolved.folder / HEAD_WEIGHTS_FILE).is_file():
        model = BertPretrainer.from_preset(preset)
    else:
        model = BertEncoder.from_preset(preset)
    tokenizer = resolved.config.get("tokenizer", {})
    lowercase = tokenizer.get("lowercase", True)
    if not hf:
        return pathlib.Path(keras_hub.save(model, output, resolved.vocabulary_path, lowercase,
                                           bool(tokenizer.get("special_tokens_in_strings", False)), kind))
    if kind == ALBERT:
        model_path = resolved.folder / tokenizer.get("sentencepiece_model", SENTENCEPIECE_FILE)
        if not model_path.is_file():
            raise errors.MissingFileError("source", f"source: {resolved.folder} has no SentencePiece model "
                                          f"{model_path.name!r}.")
        return pathlib.Path(huggingface.save(model, output, model_path, lowercase, kind,
                                             tokenizer.get("strip_accents", True)))
    return pathlib.Path(huggingface.save(model, output, resolved.vocabulary_path, lowercase, kind))


def _discriminator_of_run(preset):
    """The discriminator (encoder and replaced-token head) of a `pretrain --objective electra` preset."""
    from keras_bert_app.models.electra_discriminator import ElectraDiscriminator
    from keras_bert_app.models.electra_pretrainer import ElectraPretrainer

    pretrainer = ElectraPretrainer.from_preset(preset)
    discriminator = ElectraDiscriminator(pretrainer.encoder)
    discriminator.discriminator_head.set_weights(pretrainer.discriminator_head.get_weights())
    return discriminator


def _format_argument(argument, value, choices):
    """The canonical format name (`keras-hub` -> `keras_hub`, `hf` -> `huggingface`), or None."""
    if value is None:
        return None
    errors.check_type(argument, value, str)
    return errors.check_choice(argument, detect.FORMAT_ALIASES.get(value, value.replace("-", "_")), choices)
