"""Real weights for the built-in presets, fetched from a hub and converted once.

A built-in preset's `config.json` says where its weights live
(`"weights": {"huggingface": "hf://google-bert/bert-base-uncased",
"keras_hub": "kaggle://keras/bert/keras/bert_base_en_uncased"}`).
`fetch_preset` downloads the first source that works (with
`huggingface_hub.snapshot_download`, or `kagglehub`), converts it into our
preset format in a cache folder and returns that folder. This is the only
module that touches the network.
"""

import os
import pathlib

from keras_bert_app import presets

CACHE_ENVIRONMENT_VARIABLE = "KERAS_BERT_APP_CACHE"
# Files of an HF BERT checkpoint that the converter reads.
HUGGINGFACE_FILES = [
    "config.json",
    "model.safetensors",
    "model.safetensors.index.json",
    "model-*.safetensors",
    "vocab.txt",
    "tokenizer_config.json",
]
PYTORCH_FILE = "pytorch_model.bin"


def cache_root():
    """`$KERAS_BERT_APP_CACHE`, else `~/.cache/keras_bert_app`."""
    root = os.environ.get(CACHE_ENVIRONMENT_VARIABLE) or "~/.cache/keras_bert_app"
    return pathlib.Path(root).expanduser()


def download(handle, cache_dir=None):
    """Download a hub handle (`hf://org/name` or `kaggle://owner/model/framework/variation`).

    Returns:
        pathlib.Path of the local checkpoint folder (or of the
        `pytorch_model.bin` of an HF repository without safetensors).
    """
    cache_dir = pathlib.Path(cache_dir or cache_root())
    if handle.startswith("hf://"):
        from huggingface_hub import snapshot_download

        repository = handle[len("hf://"):]
        hub_cache = str(cache_dir / "huggingface")
        folder = pathlib.Path(
            snapshot_download(repository, cache_dir=hub_cache, allow_patterns=HUGGINGFACE_FILES)
        )
        if any(folder.glob("*.safetensors")):
            return folder
        # Older repositories (e.g. google/bert_uncased_L-2_H-128_A-2) have only
        # pytorch_model.bin: read with torch.load(weights_only=True).
        folder = pathlib.Path(
            snapshot_download(repository, cache_dir=hub_cache, allow_patterns=[PYTORCH_FILE])
        )
        return folder / PYTORCH_FILE
    if handle.startswith("kaggle://"):
        import kagglehub

        return pathlib.Path(kagglehub.model_download(handle[len("kaggle://"):]))
    raise ValueError(f"Unknown hub handle {handle!r}: expected 'hf://...' or 'kaggle://...'.")


def fetch_preset(preset, cache_dir=None):
    """A local preset folder with real weights for a built-in preset.

    Converted weights are cached under `cache_dir/presets/<name>`; later
    calls return that folder without touching the network.

    Raises:
        presets.PresetError: no source could be downloaded (e.g. offline),
            with the handles tried and how to pass a local folder instead.
    """
    from keras_bert_app.convert import detect

    cache_dir = pathlib.Path(cache_dir or cache_root())
    name = presets.preset_dir(preset).name
    target = cache_dir / "presets" / name
    if (target / presets.ENCODER_WEIGHTS_FILE).is_file():
        return target
    expected = presets.read_config(preset)["encoder"]
    sources = presets.weight_sources(preset)
    failures = []
    for handle in sources.values():
        try:
            folder = download(handle, cache_dir)
        except Exception as error:  # offline, missing package, hub errors: try the next source
            failures.append(f"{handle}: {type(error).__name__}: {error}")
            continue
        source_format = "huggingface" if folder.is_file() else None  # an explicit .bin
        _check_architecture(detect.read_config(folder, source_format), expected, handle)
        detect.convert_to_preset(folder, target, source_format)
        return target
    tried = "; ".join(failures) or "no weight sources are listed for this preset"
    raise presets.PresetError(
        f"Could not download weights for preset {name!r} ({tried}). Without internet, "
        "download the checkpoint elsewhere and pass its local folder to from_preset "
        "(a Hugging Face folder, a keras-hub preset or an original BERT release all "
        "work), or convert it with `keras-bert-app convert --from huggingface SRC "
        "--output PRESET_DIR`; or use load_weights=False."
    )


def _check_architecture(config, expected, handle):
    keys = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim")
    got = {key: config["encoder"][key] for key in keys}
    wanted = {key: expected[key] for key in keys}
    if got != wanted:
        raise presets.PresetError(
            f"{handle}: checkpoint architecture {got} differs from the preset's {wanted}."
        )
