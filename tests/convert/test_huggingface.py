"""HF transformers checkpoints: name map, round trips, parity with transformers, bad input."""

import json

import numpy as np
import pytest

from keras_bert_app.convert import detect, huggingface
from keras_bert_app.convert.weight_map import ConversionError
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_pretrainer import BertPretrainer
from tests.convert.checkpoints import TINY, huggingface_tensors, write_huggingface, write_vocabulary


def _read(path):
    from safetensors.numpy import load_file

    return load_file(str(path))


def _encoder(folder):
    return BertEncoder(**huggingface.read_config(folder)["encoder"])


def _inputs():
    token_ids = np.array([[2, 7, 8, 9, 3, 0], [2, 10, 3, 11, 12, 3]], "int32")
    segment_ids = np.array([[0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1]], "int32")
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": (token_ids > 0).astype("int32")}


def test_config_maps_activation_epsilon_and_segments(tmp_path):
    for hidden_act, activation in (("gelu", "gelu"), ("gelu_new", "gelu_approximate"), ("gelu_pytorch_tanh", "gelu_approximate")):
        folder = write_huggingface(tmp_path / hidden_act, hidden_act=hidden_act, layer_norm_eps=1e-7, type_vocab_size=3)
        encoder_config = huggingface.read_config(folder)["encoder"]
        assert encoder_config["activation"] == activation
        assert encoder_config["layer_norm_epsilon"] == 1e-7
        assert encoder_config["num_segments"] == 3


def test_bert_model_layout_round_trip_is_bit_exact(tmp_path):
    source = write_huggingface(tmp_path / "source")
    encoder = _encoder(source)
    assert huggingface.load_weights(encoder, source) is False
    huggingface.save(encoder, tmp_path / "out", source / "vocab.txt", lowercase=True)
    before, after = _read(source / "model.safetensors"), _read(tmp_path / "out" / "model.safetensors")
    assert sorted(before) == sorted(after)
    for name in before:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)
    assert (tmp_path / "out" / "vocab.txt").read_text() == (source / "vocab.txt").read_text()


def test_pretraining_layout_round_trip_is_bit_exact(tmp_path):
    tensors = huggingface_tensors(TINY, prefix="bert.", heads=True)
    source = write_huggingface(tmp_path / "source", tensors=tensors, architecture="BertForPreTraining")
    pretrainer = BertPretrainer(_encoder(source))
    assert huggingface.load_weights(pretrainer, source) is True
    huggingface.save(pretrainer, tmp_path / "out", source / "vocab.txt", lowercase=True)
    after = _read(tmp_path / "out" / "model.safetensors")
    assert sorted(after) == sorted(tensors)
    for name in tensors:
        np.testing.assert_array_equal(after[name], tensors[name], err_msg=name)
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["architectures"] == ["BertForPreTraining"]


def test_encoder_loads_from_pretraining_layout_and_gamma_beta_names(tmp_path):
    tensors = huggingface_tensors(TINY, prefix="bert.", heads=True)
    renamed = {name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): value
               for name, value in tensors.items()}
    source = write_huggingface(tmp_path / "source", tensors=renamed)
    encoder = _encoder(source)
    huggingface.load_weights(encoder, source)
    np.testing.assert_array_equal(
        encoder.embeddings.layer_norm.gamma.numpy(), tensors["bert.embeddings.LayerNorm.weight"]
    )
    np.testing.assert_array_equal(
        encoder.token_embedding.embeddings.numpy(), tensors["bert.embeddings.word_embeddings.weight"]
    )


def test_matches_transformers_and_written_folder_loads_in_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    config = transformers.BertConfig(
        vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=64, hidden_act="gelu_new", layer_norm_eps=1e-6,
    )
    torch.manual_seed(0)
    reference = transformers.BertForPreTraining(config).eval()
    reference.save_pretrained(tmp_path / "hf")
    write_vocabulary(tmp_path / "hf" / "vocab.txt", 30)
    pretrainer = BertPretrainer(_encoder(tmp_path / "hf"))
    assert huggingface.load_weights(pretrainer, tmp_path / "hf")

    inputs = _inputs()
    positions = np.array([[1, 2], [4, 5]], "int32")
    outputs = pretrainer({**inputs, "mask_positions": positions})
    sequence = pretrainer.encoder(inputs)["sequence_output"]
    with torch.no_grad():
        expected = reference(
            input_ids=torch.tensor(inputs["token_ids"]).long(),
            token_type_ids=torch.tensor(inputs["segment_ids"]).long(),
            attention_mask=torch.tensor(inputs["padding_mask"]).long(),
            output_hidden_states=True,
        )
    mlm = np.take_along_axis(expected.prediction_logits.numpy(), positions[..., None], axis=1)
    np.testing.assert_allclose(np.asarray(sequence), expected.hidden_states[-1].numpy(), atol=1e-5)
    np.testing.assert_allclose(np.asarray(outputs["mlm"]), mlm, atol=1e-4)
    np.testing.assert_allclose(np.asarray(outputs["nsp"]), expected.seq_relationship_logits.numpy(), atol=1e-5)

    huggingface.save(pretrainer, tmp_path / "out", tmp_path / "hf" / "vocab.txt", lowercase=True)
    reloaded = transformers.BertForPreTraining.from_pretrained(str(tmp_path / "out")).eval()
    assert reloaded.config.hidden_act == "gelu_new" and reloaded.config.layer_norm_eps == 1e-6
    for name, value in reference.state_dict().items():
        np.testing.assert_array_equal(reloaded.state_dict()[name].numpy(), value.numpy(), err_msg=name)


def test_other_architectures_are_refused(tmp_path):
    roberta = write_huggingface(tmp_path / "roberta", model_type="roberta")
    with pytest.raises(ConversionError, match=r"config.json.*'roberta'"):
        huggingface.read_config(roberta)
    distilbert = tmp_path / "distilbert"
    distilbert.mkdir()
    (distilbert / "config.json").write_text(json.dumps({"model_type": "distilbert", "dim": 16, "n_layers": 2}))
    from safetensors.numpy import save_file

    save_file({"distilbert.embeddings.word_embeddings.weight": np.zeros((30, 16), "float32")}, str(distilbert / "model.safetensors"))
    assert detect.detect_format(distilbert) == "huggingface"
    with pytest.raises(ConversionError, match="'distilbert'"):
        detect.read_config(distilbert)


def test_missing_tensor_is_named_with_its_shape(tmp_path):
    tensors = huggingface_tensors(TINY)
    del tensors["encoder.layer.1.attention.self.key.weight"]
    source = write_huggingface(tmp_path / "source", tensors=tensors)
    encoder = _encoder(source)
    before = encoder.token_embedding.embeddings.numpy().copy()
    with pytest.raises(ConversionError, match=r"missing tensor 'encoder.layer.1.attention.self.key.weight'.*\(16, 16\)"):
        huggingface.load_weights(encoder, source)
    np.testing.assert_array_equal(encoder.token_embedding.embeddings.numpy(), before)  # untouched


def test_wrong_shape_is_named_with_expected_and_actual(tmp_path):
    tensors = huggingface_tensors(TINY)
    tensors["encoder.layer.0.intermediate.dense.weight"] = np.zeros((31, 16), "float32")
    source = write_huggingface(tmp_path / "source", tensors=tensors)
    with pytest.raises(ConversionError, match=r"'encoder.layer.0.intermediate.dense.weight' has shape \(31, 16\); expected \(32, 16\)"):
        huggingface.load_weights(_encoder(source), source)


def test_config_that_disagrees_with_weights(tmp_path):
    wider = write_huggingface(tmp_path / "wider", tensors=huggingface_tensors(TINY), hidden_size=32)
    with pytest.raises(ConversionError, match=r"'embeddings.word_embeddings.weight' has shape \(30, 16\); expected \(30, 32\)"):
        huggingface.load_weights(_encoder(wider), wider)
    shallower = write_huggingface(tmp_path / "shallower", tensors=huggingface_tensors(TINY), num_hidden_layers=1)
    with pytest.raises(ConversionError, match=r"not used.*encoder.layer.1"):
        huggingface.load_weights(_encoder(shallower), shallower)


def test_vocabulary_size_must_match_embeddings(tmp_path):
    source = write_huggingface(tmp_path / "source", vocabulary_size=29)
    with pytest.raises(ConversionError, match=r"vocab.txt: vocabulary has 29 tokens .* 30 rows"):
        detect.read_config(source)


def test_pickle_is_read_only_when_asked_for(tmp_path):
    torch = pytest.importorskip("torch")
    tensors = huggingface_tensors(TINY)
    source = write_huggingface(tmp_path / "source", tensors=tensors)
    (source / "model.safetensors").unlink()
    torch.save({name: torch.from_numpy(value) for name, value in tensors.items()}, source / "pytorch_model.bin")
    with pytest.raises(ConversionError, match="pickle"):
        huggingface.load_weights(_encoder(source), source)
    encoder = _encoder(source)
    huggingface.load_weights(encoder, source / "pytorch_model.bin")
    np.testing.assert_array_equal(encoder.pooler.kernel.numpy(), tensors["pooler.dense.weight"].T)
