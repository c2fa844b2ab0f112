"""keras-hub BertBackbone presets: outputs equal ours, and a bit-exact round trip."""

import json
import shutil

import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.convert import detect, keras_hub
from keras_bert_app.convert.weight_map import ConversionError
from keras_bert_app.models.bert_encoder import BertEncoder
from tests.convert.checkpoints import write_vocabulary

hub = pytest.importorskip("keras_hub")


@pytest.fixture(scope="module")
def backbone_preset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keras_hub_preset")
    vocabulary = write_vocabulary(tmp_path_factory.mktemp("vocabulary") / "vocab.txt", 30)
    backbone = hub.models.BertBackbone(
        vocabulary_size=30, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=64
    )
    backbone.save_to_preset(str(folder))
    hub.models.BertTokenizer(vocabulary=str(vocabulary), lowercase=True).save_to_preset(str(folder))
    return backbone, folder


def _inputs():
    token_ids = np.array([[2, 7, 8, 9, 3, 0], [2, 10, 3, 11, 12, 3]], "int32")
    segment_ids = np.array([[0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1]], "int32")
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": (token_ids > 0).astype("int32")}


def test_converted_encoder_matches_keras_hub(backbone_preset):
    backbone, folder = backbone_preset
    assert detect.detect_format(folder) == "keras_hub"
    config = detect.read_config(folder)
    assert config["encoder"]["activation"] == "gelu_approximate"
    assert config["tokenizer"] == {"vocabulary": "assets/tokenizer/vocabulary.txt", "lowercase": True}
    encoder = BertEncoder(**config["encoder"])
    keras_hub.load_weights(encoder, folder)
    expected = backbone(_inputs())
    got = encoder(_inputs())
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(np.asarray(got[key]), np.asarray(expected[key]), atol=1e-6, err_msg=key)


def test_round_trip_is_bit_exact_and_loads_in_keras_hub(backbone_preset, tmp_path):
    backbone, folder = backbone_preset
    config = detect.read_config(folder)
    encoder = BertEncoder(**config["encoder"])
    keras_hub.load_weights(encoder, folder)
    keras_hub.save(encoder, tmp_path / "out", folder / config["tokenizer"]["vocabulary"], lowercase=True)
    reloaded = hub.models.BertBackbone.from_preset(str(tmp_path / "out"))
    before = {variable.path: variable.numpy() for variable in backbone.weights}
    after = {variable.path: variable.numpy() for variable in reloaded.weights}
    assert sorted(before) == sorted(after)
    for path in before:
        np.testing.assert_array_equal(after[path], before[path], err_msg=path)
    tokenizer = hub.models.BertTokenizer.from_preset(str(tmp_path / "out"))
    assert tokenizer.get_vocabulary() == (folder / "assets/tokenizer/vocabulary.txt").read_text().split()


def test_exact_gelu_encoder_is_written_with_a_warning(tmp_path):
    encoder = BertEncoder(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=64)
    vocabulary = write_vocabulary(tmp_path / "vocab.txt", 30)
    with pytest.warns(UserWarning, match="gelu_approximate"):
        keras_hub.save(encoder, tmp_path / "out", vocabulary, lowercase=True)
    with pytest.raises(ConversionError, match=r"vocabulary has 29 tokens .* 30 rows"):
        keras_hub.save(encoder, tmp_path / "bad", write_vocabulary(tmp_path / "small.txt", 29), lowercase=True)


def test_an_encoder_keras_hub_cannot_compute_is_refused(tmp_path):
    encoder = BertEncoder(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32,
                          max_sequence_length=64, activation="relu")
    with pytest.raises(ConversionError, match=r"activation is 'relu'; keras-hub's BertBackbone always computes the tanh"):
        keras_hub.save(encoder, tmp_path / "out", write_vocabulary(tmp_path / "vocab.txt", 30), lowercase=True)
    assert not (tmp_path / "out").exists()


def test_a_keras_hub_task_preset_gives_its_backbone_a_line_on_its_head_and_its_special_token_rule(tmp_path):
    # A BertTextClassifier preset whose tokenizer reads literal special tokens, converted through the command line
    # and written back: the head is named as not read, and "[SEP]" in a text stays one token both ways.
    words = ["hello", "world", "[", "]", "se", "##p", "ma", "##sk"]
    vocabulary = tmp_path / "vocab.txt"
    vocabulary.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n", encoding="utf-8")
    tokenizer = hub.models.BertTokenizer(vocabulary=str(vocabulary), lowercase=True, special_tokens_in_strings=True)
    backbone = hub.models.BertBackbone(vocabulary_size=13, num_layers=1, num_heads=2, hidden_dim=16,
                                       intermediate_dim=32, max_sequence_length=32)
    preprocessor = hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=16)
    classifier = hub.models.BertTextClassifier(backbone, num_classes=3, preprocessor=preprocessor)
    classifier.save_to_preset(str(tmp_path / "task"))
    text = "hello [SEP] world [MASK]"
    expected = [int(i) for i in tokenizer(text)]
    assert expected == [5, 3, 6, 4]

    with pytest.warns(UserWarning, match=r"the keras-hub task BertTextClassifier's head \(task.json, task.weights.h5\) "
                                         "is not read"):
        assert cli.main(["convert", "--from", "keras-hub", str(tmp_path / "task"), "--output", str(tmp_path / "ours")]) == 0
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    ours = BertTokenizer.from_preset(str(tmp_path / "ours"))
    assert ours.special_tokens_in_strings is True
    assert ours([text]).to_list()[0] == expected
    shutil.copytree(tmp_path / "ours", tmp_path / "run" / "preset")  # a run folder is read for its preset/
    assert cli.main(["convert", "--to", "keras-hub", str(tmp_path / "run"),
                     "--output", str(tmp_path / "back")]) == 0
    back = hub.models.BertTokenizer.from_preset(str(tmp_path / "back"))
    assert [int(i) for i in back(text)] == expected


def test_other_keras_hub_architectures_are_refused(tmp_path):
    config = {"module": "keras_hub.src.models.roberta.roberta_backbone", "class_name": "RobertaBackbone",
              "config": {"vocabulary_size": 30}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert detect.detect_format(tmp_path) == "keras_hub"
    with pytest.raises(ConversionError, match=r"config.json: class_name is 'RobertaBackbone'"):
        detect.read_config(tmp_path)
