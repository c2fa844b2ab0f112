"""Recognising foreign folders, and the `from_preset` entry point for them."""

import numpy as np

from keras_bert_app import presets
from keras_bert_app.convert import detect
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_pretrainer import BertPretrainer
from tests.convert.checkpoints import TINY, huggingface_tensors, write_huggingface


def test_our_presets_are_not_foreign(tmp_path):
    assert detect.detect_format(presets.preset_dir("bert_tiny_uncased")) is None
    assert detect.load_foreign_preset(presets.preset_dir("bert_tiny_uncased")) is None
    assert detect.detect_format(tmp_path) is None


def test_load_foreign_preset_fills_encoder_and_pretrainer(tmp_path):
    tensors = huggingface_tensors(TINY, prefix="bert.", heads=True)
    folder = write_huggingface(tmp_path / "hf", tensors=tensors, architecture="BertForPreTraining")
    (folder / "tokenizer_config.json").write_text('{"do_lower_case": false}')
    config, load = detect.load_foreign_preset(folder)
    assert config["tokenizer"] == {"vocabulary": "vocab.txt", "lowercase": False}
    assert config["encoder"]["num_layers"] == 2 and config["encoder"]["hidden_dim"] == 16
    encoder = BertEncoder(**config["encoder"])
    assert load(encoder) is False
    pretrainer = BertPretrainer(BertEncoder(**config["encoder"]))
    assert load(pretrainer) is True
    np.testing.assert_array_equal(pretrainer.masked_lm_head.output_bias.numpy(), tensors["cls.predictions.bias"])
    np.testing.assert_array_equal(
        encoder.pooler.kernel.numpy(), pretrainer.encoder.pooler.kernel.numpy()
    )


def test_resolve_reads_ours_foreign_and_built_in_presets_alike(tmp_path):
    from keras_bert_app.convert import resolve

    builtin = resolve.resolve_preset("bert_tiny_uncased")
    assert builtin.source_format is None and builtin.config["encoder"]["num_layers"] == 2
    assert builtin.vocabulary_path.name == "vocab.txt" and not builtin.has_weights
    folder = write_huggingface(tmp_path / "hf", tensors=huggingface_tensors(TINY))
    foreign = resolve.resolve_preset(str(folder))
    assert foreign.source_format == "huggingface" and foreign.has_weights and foreign.encoder_weights_path is None
    assert resolve.read_config(folder) == foreign.config and resolve.vocabulary_path(folder) == folder / "vocab.txt"
    ours = BertEncoder(**foreign.config["encoder"]).save_to_preset(tmp_path / "ours")
    assert resolve.resolve_preset(ours).encoder_weights_path == ours / "model.weights.h5"


def test_resolve_errors_are_argument_errors_naming_the_preset(tmp_path):
    import pytest

    from keras_bert_app import errors
    from keras_bert_app.convert import resolve

    for preset, message in ((tmp_path / "nowhere", "Unknown preset"), ("hf://org/name", "does not download")):
        with pytest.raises(errors.ArgumentError, match=message) as error:
            resolve.resolve_preset(preset)
        assert error.value.argument == "preset" and isinstance(error.value, presets.PresetError)
    with pytest.raises(errors.ArgumentTypeError, match="preset must be"):
        resolve.resolve_preset(3)


def test_tokenizer_and_preprocessor_read_a_foreign_folder_through_the_resolver(tmp_path):
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    folder = write_huggingface(tmp_path / "hf", tensors=huggingface_tensors(TINY))
    (folder / "tokenizer_config.json").write_text('{"do_lower_case": false}')
    tokenizer = BertTokenizer.from_preset(folder)
    assert tokenizer.lowercase is False and tokenizer.vocabulary_size() == TINY["vocab_size"]
    preprocessor = BertPreprocessor.from_preset(folder, sequence_length=8)
    assert preprocessor.tokenizer.vocabulary_size() == TINY["vocab_size"]
