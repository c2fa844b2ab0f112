"""Recognise a foreign checkpoint folder, read its config and fill a model from it.

Formats, one reader module each: "huggingface" (`config.json` with
`model_type` + `model.safetensors`), "keras_hub" (a serialized keras-hub
model + `model.weights.h5`) and "google" (an original TF release). Our own
preset folders (a `config.json` with an "encoder" entry) are not foreign.
Nothing here imports TensorFlow at module level (but detecting an ELECTRA
release reads its TF checkpoint's variable names), nor builds a model.
"""

import json
import pathlib

from keras_bert_app import errors, presets
from keras_bert_app.convert import google, huggingface, keras_hub, tokenizer_json, weight_map

FORMATS = {"huggingface": huggingface, "keras_hub": keras_hub, "google": google}
# Spellings accepted on the command line.
FORMAT_ALIASES = {"hf": "huggingface", "keras-hub": "keras_hub", "tf": "google"}


def detect_format(path):
    """The format of a checkpoint folder ("huggingface", "keras_hub", "google"), or None.

    None means our own preset folder or an unrecognised one.
    """
    folder = pathlib.Path(path).expanduser()
    if not folder.is_dir():
        return None
    config_path = folder / presets.CONFIG_FILE
    if config_path.is_file():
        try:
            config = json.loads(config_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            config = None
        if isinstance(config, dict) and "encoder" in config:
            return None
    if keras_hub.is_preset(folder):
        return "keras_hub"
    if huggingface.is_checkpoint(folder):
        return "huggingface"
    return "google" if google.is_checkpoint(folder) else None


def read_config(path, source_format=None):
    """Our preset config dict for a foreign checkpoint folder.

    Checks the vocabulary file against the embedding size when it is there.
    """
    path = pathlib.Path(path).expanduser()
    folder = path.parent if path.is_file() else path  # an explicit weights file
    source_format = format_name(folder, source_format)
    config = FORMATS[source_format].read_config(folder)
    vocabulary = vocabulary_file(folder, config, source_format)
    if vocabulary is not None and not config["tokenizer"].get("sentencepiece_model"):  # ALBERT's: its reader checks
        weight_map.check_vocabulary(vocabulary, config["encoder"]["vocabulary_size"])
    return config


def vocabulary_file(folder, config, source_format):
    """The file with the checkpoint's vocabulary, or None: the one its config names (`vocab.txt`, ALBERT's
    SentencePiece model), else an HF folder's `tokenizer.json` (transformers 5 saves neither), of which
    `tokenizer_json` makes that file."""
    folder = pathlib.Path(folder)
    tokenizer = config["tokenizer"]
    name = tokenizer.get("sentencepiece_model") or tokenizer["vocabulary"]
    if (folder / name).is_file():
        return folder / name
    derivable = (tokenizer_json.VOCABULARY_FILE, tokenizer_json.SENTENCEPIECE_FILE)
    if source_format == "huggingface" and name in derivable and (folder / tokenizer_json.TOKENIZER_FILE).is_file():
        return folder / tokenizer_json.TOKENIZER_FILE
    return None


def load_weights(model, path, source_format=None):
    """Fill a `BertEncoder`, `BertPretrainer` or `ElectraDiscriminator` from a foreign checkpoint.

    Returns:
        bool. True when the pretraining heads were loaded too.
    """
    path = pathlib.Path(path).expanduser()
    return FORMATS[format_name(path.parent if path.is_file() else path, source_format)].load_weights(model, path)


def load_foreign_preset(path):
    """`(config, load)` for a foreign folder, or None for our own presets.

    `config` is in our preset format (`encoder`, `tokenizer` with a
    vocabulary path relative to the folder); `load(model)` fills a
    `BertEncoder` or `BertPretrainer` built from `config["encoder"]` and
    returns True when the pretraining heads were loaded too.
    """
    source_format = detect_format(path)
    if source_format is None:
        return None
    return read_config(path, source_format), lambda model: load_weights(model, path, source_format)


def format_name(folder, source_format=None):
    """The canonical format name: `source_format` (aliases allowed) or the detected one."""
    if source_format is None:
        detected = detect_format(folder)
        if detected is None:
            raise errors.ArgumentError(
                "source",
                f"{folder}: not a recognised checkpoint folder; expected a Hugging Face "
                "folder (config.json + model.safetensors), a keras-hub preset (config.json "
                "+ model.weights.h5), an original BERT release (bert_config.json + "
                "bert_model.ckpt.index), an original ELECTRA release (vocab.txt + a TF checkpoint) or an "
                "original ALBERT release (albert_config.json + a TF checkpoint + its SentencePiece *.model)."
            )
        return detected
    name = FORMAT_ALIASES.get(source_format, source_format)
    if name not in FORMATS:
        raise errors.ArgumentError(
            "source_format", f"Unknown checkpoint format {source_format!r}: expected one of {sorted(FORMATS)}."
        )
    return name
