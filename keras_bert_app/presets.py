"""Resolve a preset: a built-in name or a preset folder on disk.

This module imports nothing from the package (it is the bottom layer);
foreign checkpoint folders are recognised above it, in `convert.resolve`.

A preset folder holds:

- `config.json`: `{"name", "description", "encoder": {BertEncoder config},
  "tokenizer": {"vocabulary": "vocab.txt", "lowercase": bool},
  "weights": {"huggingface": "hf://...", "keras_hub": "kaggle://..."}}`
  (`weights` says where real weights for a built-in preset come from);
- `vocab.txt`: the WordPiece vocabulary, one token a line;
- `model.weights.h5` (optional): the encoder weights, written by
  `BertEncoder.save_to_preset`.
"""

import json
import pathlib

CONFIG_FILE = "config.json"
VOCABULARY_FILE = "vocab.txt"
ENCODER_WEIGHTS_FILE = "model.weights.h5"
REQUIRED_ENCODER_KEYS = (
    "vocabulary_size",
    "num_layers",
    "num_heads",
    "hidden_dim",
    "intermediate_dim",
)


class PresetError(ValueError):
    """A preset name or folder that cannot be used.

    `convert.resolve` re-raises it as `resolve.PresetError`, which is also a
    `keras_bert_app.errors.ArgumentError` naming the argument "preset".
    """

    argument = "preset"


def _builtin_root():
    """The folder that holds the built-in presets: an installed wheel's `keras_bert_app/preset_files/`
    (pyproject.toml's package-dir), else a checkout's `presets/`.

    (Not `importlib.resources.files`: on Python 3.10 and 3.11, the namespace package `preset_files` gives a
    `MultiplexedPath`, whose `str` is no path.)
    """
    installed = pathlib.Path(__file__).resolve().parent / "preset_files"
    return installed if installed.is_dir() else installed.parent.parent / "presets"


def names():
    """The names of the built-in presets, sorted."""
    root = _builtin_root()
    return sorted(
        path.name for path in root.iterdir() if (path / CONFIG_FILE).is_file()
    )


def preset_dir(name_or_path):
    """The folder of a preset, from a built-in name or a path on disk."""
    name_or_path = str(name_or_path)
    path = pathlib.Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    builtin = _builtin_root() / name_or_path
    if "/" not in name_or_path and (builtin / CONFIG_FILE).is_file():
        return builtin
    if name_or_path.startswith(("hf://", "kaggle://")):
        raise PresetError(
            f"Preset {name_or_path!r} is a hub handle; this package does not "
            "download weights. Download the checkpoint yourself and pass its "
            "local folder (or convert it with `keras-bert-app convert`)."
        )
    raise PresetError(
        f"Unknown preset {name_or_path!r}: expected one of {names()} or an "
        "existing preset folder."
    )


def read_config(name_or_path):
    """The parsed `config.json` of one of our presets, checked for the encoder keys.

    A foreign checkpoint folder (Hugging Face, keras-hub, an original Google
    release) is read by `keras_bert_app.convert.resolve.read_config`, which
    every `from_preset` goes through.
    """
    folder = preset_dir(name_or_path)
    config_path = folder / CONFIG_FILE
    if not config_path.is_file():
        raise PresetError(
            f"Preset folder {str(folder)!r} has no {CONFIG_FILE}: expected a "
            f"preset folder with {CONFIG_FILE} and {VOCABULARY_FILE}."
        )
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise PresetError(f"{config_path}: malformed JSON ({error}).") from None
    if isinstance(config, dict) and "encoder" not in config and ("model_type" in config or "architectures" in config):
        raise PresetError(
            f"{config_path} is a Hugging Face config ({config.get('model_type') or config.get('architectures')}), but "
            f"{folder} holds no weights transformers writes (model.safetensors, pytorch_model.bin), so it is read "
            "as none of the formats we convert."
        )
    if not isinstance(config, dict) or not isinstance(config.get("encoder"), dict):
        raise PresetError(
            f"{config_path}: expected an object with an 'encoder' object, got "
            f"keys {sorted(config) if isinstance(config, dict) else type(config).__name__}."
        )
    missing = [key for key in REQUIRED_ENCODER_KEYS if key not in config["encoder"]]
    if missing:
        raise PresetError(f"{config_path}: 'encoder' is missing {missing}.")
    return config


def vocabulary_path(name_or_path):
    """The path of the preset's vocabulary file."""
    folder = preset_dir(name_or_path)
    config = read_config(folder)
    name = config.get("tokenizer", {}).get("vocabulary", VOCABULARY_FILE)
    path = folder / name
    if not path.is_file():
        raise PresetError(f"Preset folder {str(folder)!r} has no vocabulary {name!r}.")
    return path


def weights_path(name_or_path):
    """The encoder weights file of a preset, or None when it has none."""
    path = preset_dir(name_or_path) / ENCODER_WEIGHTS_FILE
    return path if path.is_file() else None


def weight_sources(name_or_path):
    """Where real weights for a preset can be had (`{"huggingface": ..., ...}`)."""
    return dict(read_config(name_or_path).get("weights", {}))


def write_config_entry(preset_dir_path, key, value):
    """Set one entry of a preset folder's `config.json`, keeping the others."""
    folder = pathlib.Path(preset_dir_path).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    config_path = folder / CONFIG_FILE
    config = {}
    if config_path.is_file():
        config = json.loads(config_path.read_text(encoding="utf-8"))
    config[key] = value
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return folder
