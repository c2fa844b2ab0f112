"""Real weights for the built-in presets, fetched from a hub once.

A built-in preset's `config.json` says where its weights live (`"weights":
{"huggingface": "hf://...", "keras_hub": "kaggle://..."}`). `fetch_preset`
downloads the first source that works, checks its architecture against the
preset and caches the checkpoint in its own format; `from_preset` then reads
that folder as any foreign folder. This is the only module that touches the
network.
"""

import os
import pathlib

import numpy as np

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
    """A local folder with real weights for a built-in preset.

    The checkpoint is kept under `cache_dir/presets/<name>` (an HF folder or
    a keras-hub preset, which `convert.resolve` reads; older versions left
    our own preset format there, which is read too); later calls return
    that folder without touching the network.

    Raises:
        presets.PresetError: no source could be downloaded (e.g. offline),
            with the handles tried and how to pass a local folder instead.
    """
    from keras_bert_app.convert import detect

    cache_dir = pathlib.Path(cache_dir or cache_root())
    name = presets.preset_dir(preset).name
    target = cache_dir / "presets" / name
    if (target / presets.ENCODER_WEIGHTS_FILE).is_file() or detect.detect_format(target) is not None:
        return target
    expected = presets.read_config(preset)["encoder"]
    sources = presets.weight_sources(preset)
    failures = []
    for handle in sources.values():
        try:
            downloaded = download(handle, cache_dir)
        except Exception as error:  # offline, missing package, hub errors: try the next source
            failures.append(f"{handle}: {type(error).__name__}: {error}")
            continue
        source_format = "huggingface" if downloaded.is_file() else None  # an explicit .bin
        _check_architecture(detect.read_config(downloaded, source_format), expected, handle)
        _keep(downloaded, target)
        return target
    tried = "; ".join(failures) or "no weight sources are listed for this preset"
    raise presets.PresetError(
        f"Could not download weights for preset {name!r} ({tried}). Without internet, "
        "download the checkpoint elsewhere and pass its local folder to from_preset "
        "(a Hugging Face folder, a keras-hub preset or an original BERT release all "
        "work), or convert it with `keras-bert-app convert --from huggingface SRC "
        "--output PRESET_DIR`; or use load_weights=False."
    )


def _keep(downloaded, target):
    """Copy a downloaded checkpoint into `target` (atomically: a kill leaves no half folder).

    A `pytorch_model.bin` becomes `model.safetensors` beside the repository's
    config and vocabulary, so loading it later needs neither torch nor pickle.
    """
    import shutil

    from keras_bert_app.convert import huggingface

    temporary = target.with_name(target.name + ".tmp")
    shutil.rmtree(temporary, ignore_errors=True)
    if downloaded.is_file():
        from safetensors.numpy import save_file

        temporary.mkdir(parents=True)
        tensors, _ = huggingface.read_tensors(downloaded)
        tensors = {key: np.ascontiguousarray(value) for key, value in tensors.items()}
        save_file(tensors, str(temporary / huggingface.SAFETENSORS_FILE), metadata={"format": "pt"})
        for name in (huggingface.CONFIG_FILE, huggingface.VOCABULARY_FILE, huggingface.TOKENIZER_CONFIG_FILE):
            if (downloaded.parent / name).is_file():
                shutil.copyfile(downloaded.parent / name, temporary / name)
    else:
        shutil.copytree(downloaded, temporary)
    shutil.rmtree(target, ignore_errors=True)
    temporary.rename(target)


def _check_architecture(config, expected, handle):
    keys = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim")
    got = {key: config["encoder"][key] for key in keys}
    wanted = {key: expected[key] for key in keys}
    # The embedding width: E when factorized (ELECTRA-Small), else H (absent or given as H).
    got["embedding_dim"] = config["encoder"].get("embedding_dim") or got["hidden_dim"]
    wanted["embedding_dim"] = expected.get("embedding_dim") or wanted["hidden_dim"]
    if got != wanted:
        raise presets.PresetError(
            f"{handle}: checkpoint architecture {got} differs from the preset's {wanted}."
        )
