"""Any preset, ours or foreign, as our config plus a way to load its weights.

`resolve_preset` is the one place where a preset name or folder (built-in,
ours, HF, keras-hub or an original Google release) becomes our preset
config: every `from_preset` goes through it. It reads formats and fills the
model it is given; it never builds one (layer 1).

Resolve once, at the entry, and pass the `ResolvedPreset` down: every
`from_preset` (models, tokenizers, preprocessors) and `resolve_preset` itself
take it as it is, so its folder, config, format, weights and task entry are
read once (and it is a path-like of its folder for code that wants a path).
"""

import dataclasses
import hashlib
import os
import pathlib

from keras_bert_app import errors, presets
from keras_bert_app.convert import detect, tokenizer_json


class PresetError(errors.ArgumentError, presets.PresetError):
    """A preset that cannot be used: an `errors.ArgumentError` naming "preset" and a `presets.PresetError`."""

    def __init__(self, message, argument="preset"):
        super().__init__(argument, message)


@dataclasses.dataclass(frozen=True)
class ResolvedPreset:
    """A preset, read.

    Attributes:
        folder: pathlib.Path. The local folder (after a hub fetch, the cache folder).
        config: dict. Our preset config: "encoder", "tokenizer", and for our
            own folders whatever else `config.json` holds ("task", "weights", ...).
        source_format: str or None. None for our own preset folders;
            "huggingface", "keras_hub" or "google" for a foreign checkpoint.
    """

    folder: pathlib.Path
    config: dict
    source_format: str = None

    def __fspath__(self):
        return str(self.folder)

    def __str__(self):
        return str(self.folder)

    @property
    def task(self):
        """The "task" entry a `finetune` run wrote into the config (`{}` for an encoder preset)."""
        return self.config.get("task") or {}

    def file(self, name):
        """The folder's file `name` (e.g. `pretrainer.weights.h5`), or None when it has none."""
        path = self.folder / name
        return path if path.is_file() else None

    @property
    def vocabulary_path(self):
        """The vocabulary file (`vocab.txt` or the foreign checkpoint's).

        An HF folder saved by transformers 5 holds its WordPiece vocabulary in
        `tokenizer.json` only: then a `vocab.txt` of it, written once into the
        cache (`derived_file`), so that every reader of vocab.txt works.
        """
        name = self.config.get("tokenizer", {}).get("vocabulary", presets.VOCABULARY_FILE)
        path = self._tokenizer_file(name, presets.VOCABULARY_FILE)
        if path is None:
            raise PresetError(f"Preset folder {str(self.folder)!r} has no vocabulary {name!r}.")
        return path

    @property
    def sentencepiece_model_path(self):
        """The SentencePiece model of an ALBERT preset (`spiece.model`).

        An HF folder saved by transformers 5 holds it as `tokenizer.json`
        only: then a `spiece.model` of it, written once into the cache
        (`derived_file`), as for `vocabulary_path`.
        """
        name = self.config.get("tokenizer", {}).get("sentencepiece_model", tokenizer_json.SENTENCEPIECE_FILE)
        path = self._tokenizer_file(name, tokenizer_json.SENTENCEPIECE_FILE)
        if path is None:
            sources = ", ".join(self.config.get("weights", {}).values()) or "none known"
            raise PresetError(
                f"Preset {str(self.folder)!r} has no SentencePiece model {name!r}. It comes with the "
                f"checkpoint [{sources}]: download that folder and convert it with `keras-bert-app convert "
                "--from huggingface SRC --output PRESET_DIR`, then pass PRESET_DIR."
            )
        return path

    def _tokenizer_file(self, name, derived_name):
        """The folder's file `name`, else `derived_name` made of a foreign folder's tokenizer.json, else None."""
        path = self.folder / name
        if path.is_file():
            return path
        found = detect.vocabulary_file(self.folder, self.config, self.source_format) if self.source_format else None
        if found is not None and found.name == tokenizer_json.TOKENIZER_FILE:
            return derived_file(found, derived_name)
        return None

    @property
    def encoder_weights_path(self):
        """Our `model.weights.h5`, or None (none there, or a foreign folder)."""
        return None if self.source_format else presets.weights_path(self.folder)

    @property
    def has_weights(self):
        """True when weights can be loaded from this folder (ours or a foreign checkpoint's)."""
        return self.source_format is not None or self.encoder_weights_path is not None

    def load_weights(self, model):
        """Fill `model` from this preset, reading every weight once.

        Args:
            model: a `BertEncoder`, or a model with an `encoder` attribute.
                From our folders the encoder gets `model.weights.h5`; from a
                foreign checkpoint the model is filled as the converters do
                (a `BertPretrainer` gets its pretraining heads too when the
                checkpoint has them).

        Returns:
            bool. True when pretraining heads were loaded (foreign checkpoints only).

        Raises:
            PresetError: our folder has no `model.weights.h5`; the message
                says where real weights come from.
        """
        if self.source_format is not None:
            return detect.load_weights(model, self.folder, self.source_format)
        path = self.encoder_weights_path
        if path is None:
            raise PresetError(_missing_weights_message(self.folder, self.config))
        getattr(model, "encoder", model).load_weights(str(path))
        return False


def resolve_preset(preset, fetch_weights=False):
    """Read a preset name or folder into our config (no TensorFlow, no model).

    Args:
        preset: str or path. A built-in name (`presets.names()`), one of our
            preset folders, an HF checkpoint folder, a keras-hub preset or an
            original Google release; or a `ResolvedPreset`, returned as it is
            (read again only to fetch the weights it lacks).
        fetch_weights: bool. For a built-in preset whose folder has no
            weights but names hub sources: download them once (`convert.hub`)
            and resolve the cached checkpoint instead.

    Returns:
        `ResolvedPreset`.

    Raises:
        PresetError: an unknown name, a folder that is no preset, a malformed
            config, or (with `fetch_weights`) weights that cannot be fetched.
    """
    if isinstance(preset, ResolvedPreset):
        if fetch_weights and not preset.has_weights and preset.config.get("weights"):
            return resolve_preset(preset.folder, fetch_weights=True)
        return preset
    if not isinstance(preset, (str, pathlib.PurePath)):
        raise errors.ArgumentTypeError(
            "preset", f"preset must be a preset name or folder (str or path); got {type(preset).__name__} {preset!r}."
        )
    try:
        folder = presets.preset_dir(preset)
        source_format = detect.detect_format(folder)
        if source_format is not None:
            return ResolvedPreset(folder, detect.read_config(folder, source_format), source_format)
        if fetch_weights and presets.weights_path(folder) is None and presets.weight_sources(folder):
            from keras_bert_app.convert import hub

            return resolve_preset(hub.fetch_preset(folder))  # download once; PresetError offline
        return ResolvedPreset(folder, presets.read_config(folder))
    except PresetError:
        raise
    except presets.PresetError as error:
        raise PresetError(str(error)) from None


def read_config(preset):
    """Our preset config of any preset name or folder (see `resolve_preset`)."""
    return resolve_preset(preset).config


def derived_file(tokenizer_json_path, name):
    """Our tokenizer file `name` (`vocab.txt` or `spiece.model`) made of an HF `tokenizer.json`.

    Written once into `$KERAS_BERT_APP_CACHE/vocabularies/` under a hash of
    the file's bytes (the checkpoint's folder may be read-only), atomically.
    """
    from keras_bert_app.convert import hub

    tokenizer_json_path = pathlib.Path(tokenizer_json_path)
    digest = hashlib.sha256(tokenizer_json_path.read_bytes()).hexdigest()[:20]
    path = pathlib.Path(hub.cache_root()) / "vocabularies" / digest / name
    if not path.is_file():
        content = tokenizer_json.file_bytes(tokenizer_json_path, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        temporary.write_bytes(content)
        os.replace(temporary, path)
    return path


def vocabulary_path(preset):
    """The vocabulary file of any preset name or folder."""
    return resolve_preset(preset).vocabulary_path


def _missing_weights_message(folder, config):
    sources = config.get("weights", {})
    where = ", ".join(f"{hub}: {handle}" for hub, handle in sources.items()) or "none known"
    return (
        f"Preset {str(folder)!r} has no weights on this machine (no "
        f"{presets.ENCODER_WEIGHTS_FILE} in {folder}). Real weights come from [{where}]: "
        "download that checkpoint and convert it with `keras-bert-app convert --from "
        "huggingface|keras-hub|google SRC --output PRESET_DIR`, then pass PRESET_DIR; "
        "or use load_weights=False for freshly initialised weights."
    )
