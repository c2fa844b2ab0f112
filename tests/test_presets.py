import hashlib
import json

import pytest

from keras_bert_app import presets

EXPECTED = {
    "bert_tiny_uncased": (2, 128, 2, 30522),
    "bert_mini_uncased": (4, 256, 4, 30522),
    "bert_small_uncased": (4, 512, 8, 30522),
    "bert_medium_uncased": (8, 512, 8, 30522),
    "bert_base_uncased": (12, 768, 12, 30522),
    "bert_large_uncased": (24, 1024, 16, 30522),
    "bert_base_cased": (12, 768, 12, 28996),
    "bert_large_cased": (24, 1024, 16, 28996),
    "bert_base_chinese": (12, 768, 12, 21128),
    "electra_small": (12, 256, 4, 30522),  # ELECTRA discriminators (tests/convert/test_electra_presets.py)
    "electra_base": (12, 768, 12, 30522),
    "electra_large": (24, 1024, 16, 30522),
}
# md5 of the standard vocabularies (../shared/data/README.md; keras-nlp's preset list)
VOCAB_MD5 = {
    30522: "64800d5d8528ce344256daf115d4965e",
    28996: "bb6ca9b42e790e5cd986bbb16444d0e0",
    21128: "3b5b76c4aef48ecf8cb3abaafe960f09",
}


# ALBERT v2 presets: SentencePiece vocabularies, no vocab.txt (tests/models/test_albert_presets.py checks them).
ALBERT = ("albert_base", "albert_large", "albert_xlarge")


def test_names():
    assert presets.names() == sorted([*EXPECTED, *ALBERT])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_builtin_preset(name):
    layers, hidden, heads, vocabulary_size = EXPECTED[name]
    config = presets.read_config(name)["encoder"]
    assert (config["num_layers"], config["hidden_dim"], config["num_heads"]) == (layers, hidden, heads)
    assert config["intermediate_dim"] == 4 * hidden
    assert config["vocabulary_size"] == vocabulary_size
    vocabulary = presets.vocabulary_path(name).read_bytes()
    assert hashlib.md5(vocabulary).hexdigest() == VOCAB_MD5[vocabulary_size]
    assert len(vocabulary.decode("utf-8").rstrip("\n").split("\n")) == vocabulary_size
    assert presets.weight_sources(name)["huggingface"].startswith("hf://")


def test_shipped_vocabularies_equal_shared_ones(shared_data):
    for name, file in [
        ("bert_base_uncased", "bert_uncased_vocab.txt"),
        ("bert_base_cased", "bert_cased_vocab.txt"),
        ("bert_base_chinese", "bert_chinese_vocab.txt"),
    ]:
        assert presets.vocabulary_path(name).read_bytes() == (shared_data / "vocab" / file).read_bytes()


def test_hub_handle_is_refused_with_a_clear_message():
    with pytest.raises(presets.PresetError, match="does not download"):
        presets.preset_dir("hf://google-bert/bert-base-uncased")


def test_write_config_entry_keeps_other_entries(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"tokenizer": {"lowercase": True}}))
    presets.write_config_entry(tmp_path, "encoder", {"hidden_dim": 8})
    config = json.loads((tmp_path / "config.json").read_text())
    assert config == {"tokenizer": {"lowercase": True}, "encoder": {"hidden_dim": 8}}


def test_a_hugging_face_folder_without_its_weights_is_named_as_such_in_one_line(tmp_path, capsys):
    # It was read as one of our presets: "expected an object with an 'encoder' object, got keys [...]".
    from keras_bert_app import cli

    config = {"architectures": ["BertForSequenceClassification"], "model_type": "bert", "hidden_size": 8}
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", encoding="utf-8")
    for argv in (["export", "--model", str(tmp_path), "--output", str(tmp_path / "out")],
                 ["summary", "--preset", str(tmp_path)]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert "is a Hugging Face config (bert), but" in err and "holds no weights transformers writes" in err, err
        assert len(err.strip().splitlines()) == 1
