"""HF transformers ALBERT checkpoints with their spiece.model: conversion through the command line, parity with
`AlbertModel` / `AlbertForPreTraining` on every backend, tokenization from the preset, the way back, bad input."""

import json
import shutil

import keras
import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_pretrainer import BertPretrainer
from tests.convert.electra_checkpoints import inputs, run_huggingface
from tests.preprocessing.sentencepiece_models import train_model

pytestmark = pytest.mark.all_backends

TOLERANCE = 1e-4
VOCABULARY = 120
# E != H, one group shared by all 4 layers (ALBERT); gelu_new, as the released models.
TINY = dict(vocab_size=VOCABULARY, embedding_size=16, hidden_size=32, num_hidden_layers=4, num_hidden_groups=1,
            num_attention_heads=2, intermediate_size=64, max_position_embeddings=64, hidden_act="gelu_new")


@pytest.fixture(scope="module")
def sentencepiece_path(tmp_path_factory, shared_data):
    lines = (shared_data / "corpus" / "enwiki_sample.txt").read_text(encoding="utf-8").split("\n")[:400]
    return train_model(tmp_path_factory.mktemp("spm") / "spiece.model", lines, vocabulary_size=VOCABULARY)


def _huggingface(architecture, folder, sentencepiece_path, seed=0, **config):
    """An HF ALBERT model with random weights (drawn wide, so every parameter shows), saved with its spiece.model."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(seed)
    model = getattr(transformers, architecture)(transformers.AlbertConfig(**{**TINY, **config})).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.2)
    model.save_pretrained(str(folder))
    shutil.copyfile(sentencepiece_path, folder / "spiece.model")
    return model


def _convert(*argv):
    assert cli.main(["convert", *map(str, argv)]) == 0


def _numpy(value):
    return np.asarray(keras.ops.convert_to_numpy(value))


def test_pretraining_checkpoint_converts_and_matches_transformers(tmp_path, sentencepiece_path, capsys):
    reference = _huggingface("AlbertForPreTraining", tmp_path / "hf", sentencepiece_path)
    _convert("--from", "huggingface", tmp_path / "hf", "--output", tmp_path / "preset")
    assert "with pretraining heads" in capsys.readouterr().out
    config = json.loads((tmp_path / "preset" / "config.json").read_text())
    assert config["architecture"] == "albert"
    assert config["encoder"]["embedding_dim"] == 16 and config["encoder"]["num_groups"] == 1
    assert config["encoder"]["activation"] == "gelu_approximate"
    assert config["tokenizer"]["type"] == "sentencepiece"
    assert (tmp_path / "preset" / "spiece.model").read_bytes() == sentencepiece_path.read_bytes()

    pretrainer = BertPretrainer.from_preset(tmp_path / "preset")
    encoder = pretrainer.encoder
    assert len(encoder.transformer_layers) == 1
    assert encoder.count_params() == sum(p.numel() for p in reference.albert.parameters())
    batch = inputs()
    expected = run_huggingface(reference, batch)
    hidden = run_huggingface(reference.albert, batch)
    real = batch["padding_mask"].astype(bool)
    outputs = encoder(batch)
    np.testing.assert_allclose(_numpy(outputs["sequence_output"])[real], hidden.last_hidden_state.numpy()[real],
                               atol=TOLERANCE)
    np.testing.assert_allclose(_numpy(outputs["pooled_output"]), hidden.pooler_output.numpy(), atol=TOLERANCE)
    for ours, theirs in zip(outputs["encoder_outputs"], hidden.hidden_states[1:], strict=True):
        np.testing.assert_allclose(_numpy(ours)[real], theirs.numpy()[real], atol=TOLERANCE)
    positions = np.array([[1, 2, 3], [4, 5, 1]], "int32")
    logits = pretrainer({**batch, "mask_positions": positions})
    gathered = np.take_along_axis(expected.prediction_logits.numpy(), positions[..., None], axis=1)
    np.testing.assert_allclose(_numpy(logits["mlm"]), gathered, atol=TOLERANCE)
    np.testing.assert_allclose(_numpy(logits["nsp"]), expected.sop_logits.numpy(), atol=TOLERANCE)


def test_groups_shared_by_consecutive_layers_match_transformers(tmp_path, sentencepiece_path):
    """num_hidden_groups=2 of 4 layers: layers 0-1 share group 0, layers 2-3 group 1 (an AlbertModel)."""
    reference = _huggingface("AlbertModel", tmp_path / "hf", sentencepiece_path, seed=1, num_hidden_groups=2)
    _convert("--from", "huggingface", tmp_path / "hf", "--output", tmp_path / "preset")
    encoder = BertEncoder.from_preset(tmp_path / "preset")
    assert encoder.num_groups == 2 and len(encoder.transformer_layers) == 2
    batch = inputs()
    expected = run_huggingface(reference, batch)
    real = batch["padding_mask"].astype(bool)
    np.testing.assert_allclose(_numpy(encoder(batch)["sequence_output"])[real],
                               expected.last_hidden_state.numpy()[real], atol=TOLERANCE)


def test_preset_tokenizes_as_transformers_and_writes_back(tmp_path, sentencepiece_path, shared_data):
    """The converted preset's preprocessor packs pairs as HF's AlbertTokenizer; --to huggingface loads in transformers."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor

    reference = _huggingface("AlbertForPreTraining", tmp_path / "hf", sentencepiece_path)
    _convert("--from", "huggingface", tmp_path / "hf", "--output", tmp_path / "preset")
    lines = (shared_data / "corpus" / "enwiki_sample.txt").read_text(encoding="utf-8").split("\n")[500:520]
    lines = [line for line in lines if line]
    first, second = lines[: len(lines) // 2], lines[len(lines) // 2: 2 * (len(lines) // 2)]
    packed = BertPreprocessor.from_preset(tmp_path / "preset", sequence_length=512)((first, second))
    hf_tokenizer = transformers.AlbertTokenizer.from_pretrained(str(tmp_path / "hf"))
    expected = hf_tokenizer(first, second, padding="max_length", max_length=512,
                           return_token_type_ids=True)  # no truncation (its ties differ)
    assert {len(ids) for ids in expected["input_ids"]} == {512}
    np.testing.assert_array_equal(_numpy(packed["token_ids"]), np.array(expected["input_ids"]))
    np.testing.assert_array_equal(_numpy(packed["segment_ids"]), np.array(expected["token_type_ids"]))

    _convert("--to", "huggingface", tmp_path / "preset", "--output", tmp_path / "back")
    assert (tmp_path / "back" / "spiece.model").read_bytes() == sentencepiece_path.read_bytes()
    reloaded = transformers.AlbertForPreTraining.from_pretrained(str(tmp_path / "back")).eval()
    batch = inputs()
    for name in ("prediction_logits", "sop_logits"):
        np.testing.assert_allclose(getattr(run_huggingface(reloaded, batch), name).numpy(),
                                   getattr(run_huggingface(reference, batch), name).numpy(), atol=1e-5)
    with torch.no_grad():
        state, original = reloaded.state_dict(), reference.state_dict()
        assert all(torch.equal(state[name], original[name]) for name in original)
    ids = transformers.AlbertTokenizer.from_pretrained(str(tmp_path / "back"))(lines)["input_ids"]
    assert ids == hf_tokenizer(lines)["input_ids"]


def test_bad_checkpoints_are_one_clear_line(tmp_path, sentencepiece_path, capsys):
    _huggingface("AlbertModel", tmp_path / "hf", sentencepiece_path)
    (tmp_path / "hf" / "spiece.model").write_text("[PAD]\n[UNK]\n")  # a vocab.txt, not a SentencePiece model
    assert cli.main(["convert", "--from", "huggingface", str(tmp_path / "hf"), "--output", str(tmp_path / "a")]) == 2
    assert "not a SentencePiece model" in capsys.readouterr().err
    (tmp_path / "hf" / "spiece.model").unlink()
    assert cli.main(["convert", "--from", "huggingface", str(tmp_path / "hf"), "--output", str(tmp_path / "b")]) == 2
    assert "spiece.model" in capsys.readouterr().err
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    (tmp_path / "hf" / "config.json").write_text(json.dumps({**config, "num_hidden_groups": 3}))
    assert cli.main(["convert", "--from", "huggingface", str(tmp_path / "hf"), "--output", str(tmp_path / "c")]) == 2
    assert "num_hidden_groups" in capsys.readouterr().err
    (tmp_path / "hf" / "config.json").write_text(json.dumps({**config, "embedding_size": 32}))
    assert cli.main(["convert", "--from", "huggingface", str(tmp_path / "hf"), "--output", str(tmp_path / "d")]) == 2
    assert "embedding_size" in capsys.readouterr().err


def test_masked_lm_checkpoint_converts_and_an_untied_one_is_refused(tmp_path, sentencepiece_path, capsys):
    """`AlbertForMaskedLM` (no sentence-order head, no pooler): a masked-LM-only pretrainer, written back as such.
    `tie_word_embeddings: false` scores against `predictions.decoder.weight`, which our head cannot hold: one line."""
    transformers = pytest.importorskip("transformers")
    reference = _huggingface("AlbertForMaskedLM", tmp_path / "hf", sentencepiece_path, num_hidden_groups=2,
                             type_vocab_size=3, hidden_act="silu")
    with pytest.warns(UserWarning, match="no tensors for our pooler"):
        _convert("--from", "huggingface", tmp_path / "hf", "--output", tmp_path / "preset")
    pretrainer = BertPretrainer.from_preset(tmp_path / "preset")
    assert pretrainer.next_sentence_head is None
    batch = inputs()
    batch["segment_ids"][1, 5:] = 2
    positions = np.array([[1, 2, 3], [4, 5, 1]], "int32")
    expected = np.take_along_axis(run_huggingface(reference, batch).logits.numpy(), positions[..., None], axis=1)
    np.testing.assert_allclose(_numpy(pretrainer({**batch, "mask_positions": positions})["mlm"]), expected,
                               atol=TOLERANCE)
    _convert("--to", "huggingface", tmp_path / "preset", "--output", tmp_path / "back")
    reloaded, info = transformers.AlbertForMaskedLM.from_pretrained(str(tmp_path / "back"), output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info  # no pooler written: the class has none
    np.testing.assert_allclose(run_huggingface(reloaded.eval(), batch).logits.numpy(),
                               run_huggingface(reference, batch).logits.numpy(), atol=1e-5)

    _huggingface("AlbertForPreTraining", tmp_path / "untied", sentencepiece_path, tie_word_embeddings=False)
    capsys.readouterr()
    assert cli.main(["convert", "--from", "huggingface", str(tmp_path / "untied"), "--output", str(tmp_path / "u")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "'predictions.decoder.weight' differs" in error and "tie_word_embeddings" in error
