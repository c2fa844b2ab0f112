"""Recognise a foreign checkpoint folder and convert it to or from our preset format.

Formats: "huggingface" (`config.json` with `model_type` + `model.safetensors`),
"keras_hub" (`config.json` of a serialized keras-hub model +
`model.weights.h5`) and "google" (`bert_config.json` + `bert_model.ckpt.*`).
Our own preset folders (a `config.json` with an "encoder" entry) are not
foreign. Nothing here imports TensorFlow at module level.
"""

import json
import pathlib
import shutil

from keras_bert_app import presets
from keras_bert_app.convert import google, huggingface, keras_hub, weight_map

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
    if google.is_checkpoint(folder):
        return "google"
    return None


def read_config(path, source_format=None):
    """Our preset config dict for a foreign checkpoint folder.

    Checks the vocabulary file against the embedding size when it is there.
    """
    path = pathlib.Path(path).expanduser()
    folder = path.parent if path.is_file() else path  # an explicit weights file
    module = _module(path, source_format)
    config = module.read_config(folder)
    vocabulary = folder / config["tokenizer"]["vocabulary"]
    if vocabulary.is_file():
        weight_map.check_vocabulary(vocabulary, config["encoder"]["vocabulary_size"])
    return config


def load_weights(model, path, source_format=None):
    """Fill a `BertEncoder` or `BertPretrainer` from a foreign checkpoint.

    Returns:
        bool. True when the pretraining heads were loaded too.
    """
    return _module(pathlib.Path(path).expanduser(), source_format).load_weights(model, path)


def foreign_config(path):
    """Our config for a foreign folder, or None for our own preset folders."""
    if detect_format(path) is None:
        return None
    return read_config(path)


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
    config = read_config(path, source_format)

    def load(model):
        return load_weights(model, path, source_format)

    return config, load


def convert_to_preset(source, output, source_format=None):
    """Convert a foreign checkpoint folder into one of our preset folders.

    Writes `config.json`, `vocab.txt`, `model.weights.h5` and, when the
    checkpoint has pretraining heads, `pretrainer.weights.h5`.

    Returns:
        (output folder, bool: heads were converted).
    """
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.models.bert_pretrainer import BertPretrainer

    source = pathlib.Path(source).expanduser()
    output = pathlib.Path(output).expanduser()
    source_format = _format_name(source, source_format)
    config = read_config(source, source_format)
    folder = source.parent if source.is_file() else source
    vocabulary = folder / config["tokenizer"]["vocabulary"]
    if not vocabulary.is_file():
        raise FileNotFoundError(f"{source}: no vocabulary file {config['tokenizer']['vocabulary']!r}.")
    encoder = BertEncoder(**config["encoder"])
    pretrainer = BertPretrainer(encoder)
    heads = load_weights(pretrainer, source, source_format)
    output.mkdir(parents=True, exist_ok=True)
    if heads:
        pretrainer.save_to_preset(output)
    else:
        encoder.save_to_preset(output)
    shutil.copyfile(vocabulary, output / presets.VOCABULARY_FILE)
    for key in ("name", "description"):
        presets.write_config_entry(output, key, config[key])
    presets.write_config_entry(
        output, "tokenizer", {**config["tokenizer"], "vocabulary": presets.VOCABULARY_FILE}
    )
    return output, heads


def export_preset(preset, output, target_format):
    """Write one of our presets (name or folder) as an HF folder or a keras-hub preset.

    The pretraining heads go to HF too when the preset has
    `pretrainer.weights.h5`; keras-hub gets the encoder (a BertBackbone).
    """
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.models.bert_pretrainer import HEAD_WEIGHTS_FILE, BertPretrainer

    target_format = FORMAT_ALIASES.get(target_format, target_format)
    if target_format not in ("huggingface", "keras_hub"):
        raise ValueError(f"Cannot write format {target_format!r}: expected 'huggingface' or 'keras_hub'.")
    config = presets.read_config(preset)
    model = BertEncoder.from_preset(preset)
    head_weights = presets.preset_dir(preset) / HEAD_WEIGHTS_FILE
    if target_format == "huggingface" and head_weights.is_file():
        model = BertPretrainer(model)
        model.load_head_weights(head_weights)
    lowercase = config.get("tokenizer", {}).get("lowercase", True)
    return FORMATS[target_format].save(model, output, presets.vocabulary_path(preset), lowercase)


def _format_name(folder, source_format):
    if source_format is None:
        detected = detect_format(folder)
        if detected is None:
            raise ValueError(
                f"{folder}: not a recognised checkpoint folder; expected a Hugging Face "
                "folder (config.json + model.safetensors), a keras-hub preset (config.json "
                "+ model.weights.h5) or an original BERT release (bert_config.json + "
                "bert_model.ckpt.index)."
            )
        return detected
    name = FORMAT_ALIASES.get(source_format, source_format)
    if name not in FORMATS:
        raise ValueError(f"Unknown checkpoint format {source_format!r}: expected one of {sorted(FORMATS)}.")
    return name


def _module(folder, source_format):
    return FORMATS[_format_name(folder, source_format)]
