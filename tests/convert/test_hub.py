"""Fetching the built-in presets' real weights: offline failure and the cached conversion (no network)."""

import json

import numpy as np
import pytest

from keras_bert_app import presets
from keras_bert_app.convert import hub
from keras_bert_app.models.bert_encoder import BertEncoder
from tests.convert.checkpoints import TINY, huggingface_tensors, write_huggingface, write_vocabulary


def _preset_with_sources(folder):
    """A preset folder like the built-in ones: config + vocab, weights only on a hub."""
    folder.mkdir()
    config = {
        "name": "tiny",
        "encoder": {"vocabulary_size": 30, "num_layers": 2, "num_heads": 2, "hidden_dim": 16,
                    "intermediate_dim": 32, "max_sequence_length": 64},
        "tokenizer": {"vocabulary": "vocab.txt", "lowercase": True},
        "weights": {"huggingface": "hf://example/tiny-bert", "keras_hub": "kaggle://example/bert/keras/tiny"},
    }
    (folder / "config.json").write_text(json.dumps(config))
    write_vocabulary(folder / "vocab.txt", 30)
    return folder


def test_offline_failure_names_the_sources_and_the_way_out(tmp_path, monkeypatch):
    def offline(handle, cache_dir=None):
        raise OSError("network is unreachable")

    monkeypatch.setattr(hub, "download", offline)
    with pytest.raises(presets.PresetError) as error:
        hub.fetch_preset("bert_base_uncased", cache_dir=tmp_path)
    message = str(error.value)
    assert "hf://google-bert/bert-base-uncased" in message and "kaggle://" in message
    assert "network is unreachable" in message and "local folder" in message


def test_first_working_source_is_converted_once_into_the_cache(tmp_path, monkeypatch):
    preset = _preset_with_sources(tmp_path / "tiny")
    tensors = huggingface_tensors(TINY)
    downloaded = write_huggingface(tmp_path / "download", tensors=tensors)
    calls = []

    def fake_download(handle, cache_dir=None):
        calls.append(handle)
        return downloaded

    monkeypatch.setattr(hub, "download", fake_download)
    folder = hub.fetch_preset(preset, cache_dir=tmp_path / "cache")
    assert calls == ["hf://example/tiny-bert"]
    assert folder == tmp_path / "cache" / "presets" / "tiny"
    assert (folder / "model.safetensors").is_file() and (folder / "vocab.txt").is_file()  # kept as an HF folder
    encoder = BertEncoder.from_preset(folder)
    np.testing.assert_array_equal(encoder.token_embedding.embeddings.numpy(), tensors["embeddings.word_embeddings.weight"])
    assert hub.fetch_preset(preset, cache_dir=tmp_path / "cache") == folder
    assert calls == ["hf://example/tiny-bert"]  # cached: no second download


def test_checkpoint_of_another_size_is_refused(tmp_path, monkeypatch):
    preset = _preset_with_sources(tmp_path / "tiny")
    wider = {**TINY, "hidden_size": 32, "intermediate_size": 64}
    monkeypatch.setattr(hub, "download", lambda handle, cache_dir=None: write_huggingface(tmp_path / "wide", config=wider))
    with pytest.raises(presets.PresetError, match="differs from the preset"):
        hub.fetch_preset(preset, cache_dir=tmp_path / "cache")


def test_repository_without_safetensors_falls_back_to_its_pytorch_file(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    huggingface_hub = pytest.importorskip("huggingface_hub")
    preset = _preset_with_sources(tmp_path / "tiny")
    tensors = huggingface_tensors(TINY)
    repository = write_huggingface(tmp_path / "repository", tensors=tensors)
    (repository / "model.safetensors").unlink()
    torch.save({name: torch.from_numpy(value) for name, value in tensors.items()}, repository / "pytorch_model.bin")
    requests = []

    def fake_snapshot_download(repo_id, cache_dir=None, allow_patterns=None):
        requests.append((repo_id, tuple(allow_patterns)))
        return str(repository)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    folder = hub.fetch_preset(preset, cache_dir=tmp_path / "cache")
    assert [repo for repo, _ in requests] == ["example/tiny-bert", "example/tiny-bert"]
    assert requests[1][1] == ("pytorch_model.bin",)
    assert not (folder / "pytorch_model.bin").exists() and (folder / "model.safetensors").is_file()
    encoder = BertEncoder.from_preset(folder)
    np.testing.assert_array_equal(encoder.pooler.bias.numpy(), tensors["pooler.dense.bias"])


def test_a_cache_written_by_earlier_versions_is_used_as_it_is(tmp_path, monkeypatch):
    """Earlier versions kept our own preset format in the cache: no new download for it."""
    preset = _preset_with_sources(tmp_path / "tiny")
    old = BertEncoder(**{**presets.read_config(preset)["encoder"]}).save_to_preset(tmp_path / "cache" / "presets" / "tiny")
    monkeypatch.setattr(hub, "download", lambda handle, cache_dir=None: pytest.fail("downloaded again"))
    assert hub.fetch_preset(preset, cache_dir=tmp_path / "cache") == old


def test_from_preset_of_a_built_in_name_fetches_once_then_reads_the_cache(tmp_path, monkeypatch):
    preset = _preset_with_sources(tmp_path / "tiny")
    tensors = huggingface_tensors(TINY)
    downloaded = write_huggingface(tmp_path / "download", tensors=tensors)
    calls = []
    monkeypatch.setattr(hub, "download", lambda handle, cache_dir=None: calls.append(handle) or downloaded)
    monkeypatch.setenv("KERAS_BERT_APP_CACHE", str(tmp_path / "cache"))
    for _ in range(2):
        encoder = BertEncoder.from_preset(preset)
        np.testing.assert_array_equal(encoder.pooler.bias.numpy(), tensors["pooler.dense.bias"])
    assert calls == ["hf://example/tiny-bert"]
