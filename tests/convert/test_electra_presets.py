"""The built-in ELECTRA presets: official discriminator configs, hub handles, first-use fetch (faked), parameter counts."""

import json

import numpy as np
import pytest

import keras_bert_app as kba
from keras_bert_app import presets
from keras_bert_app.convert import hub
from keras_bert_app.models.electra_discriminator import ElectraDiscriminator
from tests.convert import electra_checkpoints as checkpoints
from tests.convert.checkpoints import write_vocabulary

# (layers, hidden, heads, embedding width, HF handle, keras-hub preset): google-research/electra's
# `get_bert_config` (heads = hidden / 64, feed-forward 4 x hidden; Small's embeddings 128 wide).
OFFICIAL = {
    "electra_small": (12, 256, 4, 128, "google/electra-small-discriminator", "electra_small_discriminator_uncased_en"),
    "electra_base": (12, 768, 12, 768, "google/electra-base-discriminator", "electra_base_discriminator_uncased_en"),
    "electra_large": (24, 1024, 16, 1024, "google/electra-large-discriminator", "electra_large_discriminator_uncased_en"),
}
# Our encoder (pooler included, as keras-hub's ElectraBackbone counts) and the discriminator with its head.
PARAMETERS = {
    "electra_small": (13_548_800, 13_614_849),
    "electra_base": (109_482_240, 110_073_601),
    "electra_large": (335_141_888, 336_192_513),
}


@pytest.mark.parametrize("name", sorted(OFFICIAL))
def test_official_discriminator_configs_and_hub_handles(name):
    layers, hidden, heads, width, huggingface, keras_hub = OFFICIAL[name]
    config = presets.read_config(name)
    encoder = config["encoder"]
    assert (encoder["num_layers"], encoder["hidden_dim"], encoder["num_heads"]) == (layers, hidden, heads)
    assert encoder["intermediate_dim"] == 4 * hidden and encoder["activation"] == "gelu"
    assert encoder.get("embedding_dim", hidden) == width
    assert config["architecture"] == "electra"
    assert config["weights"] == {"huggingface": f"hf://{huggingface}", "keras_hub": f"kaggle://keras/electra/keras/{keras_hub}"}
    assert presets.vocabulary_path(name).read_bytes() == presets.vocabulary_path("bert_base_uncased").read_bytes()


def test_small_parameter_count():
    encoder = kba.BertEncoder.from_preset("electra_small", load_weights=False)
    assert encoder.count_params() == PARAMETERS["electra_small"][0]
    assert tuple(encoder.embedding_projection.kernel.shape) == (128, 256)
    assert ElectraDiscriminator(encoder).count_params() == PARAMETERS["electra_small"][1]


@pytest.mark.large
@pytest.mark.parametrize("name", ["electra_base", "electra_large"])
def test_parameter_counts(name):
    encoder = kba.BertEncoder.from_preset(name, load_weights=False)
    assert encoder.embedding_projection is None
    assert (encoder.count_params(), ElectraDiscriminator(encoder).count_params()) == PARAMETERS[name]


def _tiny_electra_preset(folder):
    """A built-in-like ELECTRA preset: config + vocab, weights only on a hub."""
    folder.mkdir()
    config = {
        "name": "tiny_electra",
        "architecture": "electra",
        "encoder": {"vocabulary_size": checkpoints.VOCABULARY, "num_layers": 2, "num_heads": 2, "hidden_dim": 32,
                    "intermediate_dim": 64, "max_sequence_length": 64, "embedding_dim": 16},
        "tokenizer": {"vocabulary": "vocab.txt", "lowercase": True},
        "weights": {"huggingface": "hf://example/tiny-electra-discriminator"},
    }
    (folder / "config.json").write_text(json.dumps(config))
    write_vocabulary(folder / "vocab.txt", checkpoints.VOCABULARY)
    return folder


def test_first_use_fetches_the_discriminator_once_and_loads_its_head(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    preset = _tiny_electra_preset(tmp_path / "tiny")
    reference = checkpoints.huggingface_model("ElectraForPreTraining")
    downloaded = checkpoints.save_huggingface(reference, tmp_path / "download")
    calls = []
    monkeypatch.setattr(hub, "download", lambda handle, cache_dir=None: calls.append(handle) or downloaded)
    monkeypatch.setenv("KERAS_BERT_APP_CACHE", str(tmp_path / "cache"))
    batch = checkpoints.inputs()
    real = batch["padding_mask"].astype(bool)
    expected = checkpoints.run_huggingface(reference, batch).logits.numpy()
    for _ in range(2):
        logits = np.asarray(ElectraDiscriminator.from_preset(preset)(batch)["rtd"])
        np.testing.assert_allclose(logits[real], expected[real], atol=1e-4)
    assert calls == ["hf://example/tiny-electra-discriminator"]


def test_checkpoint_with_another_embedding_width_is_refused(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    preset = _tiny_electra_preset(tmp_path / "tiny")
    wide = checkpoints.save_huggingface(checkpoints.huggingface_model("ElectraModel", embedding_size=32), tmp_path / "wide")
    monkeypatch.setattr(hub, "download", lambda handle, cache_dir=None: wide)
    with pytest.raises(presets.PresetError, match="'embedding_dim': 32.*'embedding_dim': 16"):
        hub.fetch_preset(preset, cache_dir=tmp_path / "cache")
