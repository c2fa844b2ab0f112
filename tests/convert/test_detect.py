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
