import json

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_app import presets
from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer
from keras_bert_app.preprocessing.offsets import byte_to_char_offsets
from keras_bert_app.preprocessing.vocabulary import VocabularyError


def tokens(tokenizer, text):
    return [tokenizer.id_to_token(i) for i in tokenizer(text).numpy()]


def test_ids_and_shapes(tiny_tokenizer, tiny_vocabulary):
    ids = tiny_tokenizer(["The quick brown fox jumps.", "unable"])
    assert isinstance(ids, tf.RaggedTensor) and ids.dtype == tf.int32
    expected = [["the", "quick", "brown", "fox", "jump", "##s", "."], ["un", "##able"]]
    assert ids.to_list() == [[tiny_vocabulary.index(t) for t in row] for row in expected]
    scalar = tiny_tokenizer("The fox")
    assert isinstance(scalar, tf.Tensor) and scalar.shape.rank == 1
    assert tiny_tokenizer([["a", "b c"], ["c", ""]]).shape.rank == 3
    assert tiny_tokenizer(tf.constant(["a b"])).to_list() == tiny_tokenizer(["a b"]).to_list()
    assert tiny_tokenizer.tokenize_as_strings(["a bc"]).to_list() == [[b"a", b"b", b"##c"]]


def test_special_token_ids_come_from_the_vocabulary():
    vocabulary = ["x", "[MASK]", "[SEP]", "y", "[CLS]", "[UNK]", "[PAD]"]
    tokenizer = BertTokenizer(vocabulary, dtype="int64")
    assert (tokenizer.mask_token_id, tokenizer.sep_token_id, tokenizer.cls_token_id) == (1, 2, 4)
    assert (tokenizer.unk_token_id, tokenizer.pad_token_id) == (5, 6)
    assert tokenizer.vocabulary_size() == 7 and tokenizer.get_vocabulary() == vocabulary
    assert tokenizer.token_to_id("y") == 3 and tokenizer.id_to_token(3) == "y"
    assert tokenizer("x z").numpy().tolist() == [0, 5] and tokenizer("x").dtype == tf.int64
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tokenizer.token_to_id("nope")
    with pytest.raises(ValueError, match="out of range"):
        tokenizer.id_to_token(7)


def test_bad_vocabulary_file_is_one_clear_error(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\nhello\n", encoding="utf-8")
    with pytest.raises(VocabularyError, match=f"{path}: missing special token.*CLS"):
        BertTokenizer(vocabulary=path)


def test_lowercase_strips_accents_only_when_lowercasing(tiny_vocabulary):
    uncased = BertTokenizer(tiny_vocabulary, lowercase=True)
    cased = BertTokenizer(tiny_vocabulary, lowercase=False)
    assert tokens(uncased, "Naïve CAFÉ") == ["naive", "cafe"]
    assert tokens(cased, "Naïve CAFÉ") == ["[UNK]", "[UNK]"]
    assert tokens(cased, "naive cafe") == ["naive", "cafe"]


def test_cleaning_cjk_and_punctuation(tiny_tokenizer):
    # Controls and NUL vanish inside a word; CJK ideographs and punctuation split.
    assert tokens(tiny_tokenizer, "x\x00y\u200b x\x07y") == ["x", "##y", "x", "##y"]
    assert tokens(tiny_tokenizer, "東京fox!?") == ["東", "京", "fox", "!", "?"]
    assert tokens(tiny_tokenizer, "un-able") == ["un", "-", "[UNK]"]


def test_word_length_cap(tiny_vocabulary):
    tokenizer = BertTokenizer(tiny_vocabulary, max_input_chars_per_word=5)
    assert tokens(tokenizer, "aaaaa") == ["a", "##a", "##a", "##a", "##a"]
    assert tokens(tokenizer, "aaaaaa a") == ["[UNK]", "a"]
    # The cap counts characters, not bytes: five 2-byte characters fit.
    assert tokens(tokenizer, "ÁÁÁÁÁ") == ["a", "##a", "##a", "##a", "##a"]
    assert tokens(tokenizer, "ÁÁÁÁÁÁ") == ["[UNK]"]
    assert BertTokenizer(tiny_vocabulary).max_input_chars_per_word == 200


def test_bad_input_does_not_crash(uncased_tokenizer):
    unk = uncased_tokenizer.unk_token_id
    texts = [
        "",
        " \t\n\r\u3000\u00a0 ",
        "\x00\x01\x07\x1b\x7f\u200b\ufeff",
        "word " * 20000,  # 100,000 characters
        "a" * 10000,  # one 10,000-character word
        "I \u2764\ufe0f pizza \U0001f355 \U0001f917",
        "שלום עולם مرحبا بالعالم",
    ]
    ids = uncased_tokenizer(texts).to_list()
    assert ids[0] == [] and ids[1] == [] and ids[2] == []
    assert ids[3] == [uncased_tokenizer.token_to_id("word")] * 20000
    assert ids[4] == [unk]
    assert unk in ids[5] and uncased_tokenizer.token_to_id("pizza") in ids[5]
    assert len(ids[6]) >= 4
    # Invalid UTF-8 bytes are replaced by U+FFFD, which cleaning drops.
    assert uncased_tokenizer(tf.constant([b"ab\xff\xfecd"])).to_list() == uncased_tokenizer(["abcd"]).to_list()


def test_offsets_point_into_the_original_string(uncased_tokenizer):
    texts = ["Naïve CAFÉ, x\x00y İstanbul 東京 ≠ \U0001f355!", ""]
    ids, starts, ends = uncased_tokenizer.tokenize_with_offsets(texts)
    assert ids.to_list() == uncased_tokenizer(texts).to_list()
    char_starts = byte_to_char_offsets(texts, starts).to_list()
    char_ends = byte_to_char_offsets(texts, ends).to_list()
    pieces = [texts[0][a:b] for a, b in zip(char_starts[0], char_ends[0])]
    assert pieces == ["Naïve", "CAFÉ", ",", "x", "y", "İstanbul", "東", "京", "≠", "\U0001f355", "!"]
    raw = texts[0].encode()
    assert [raw[a:b].decode() for a, b in zip(starts.to_list()[0], ends.to_list()[0])] == pieces
    assert char_starts[1] == [] and ends.dtype == tf.int64
    scalar_ids, scalar_starts, _ = uncased_tokenizer.tokenize_with_offsets("a bc")
    assert scalar_ids.shape.rank == 1 and scalar_starts.numpy().tolist() == [0, 2]


def test_byte_to_char_offsets():
    assert byte_to_char_offsets("aé東b", [0, 1, 3, 6, 7]).numpy().tolist() == [0, 1, 2, 3, 4]
    converted = byte_to_char_offsets(["é", "ab"], tf.ragged.constant([[0, 2], [1]], tf.int64))
    assert converted.to_list() == [[0, 1], [1]]


def test_detokenize(tiny_tokenizer):
    ids = tiny_tokenizer(["The fox jumps!", "unable"])
    assert tiny_tokenizer.detokenize(ids).numpy().tolist() == [b"the fox jumps !", b"unable"]
    assert tiny_tokenizer.detokenize(tiny_tokenizer("a bc")).numpy() == b"a bc"


def test_config_round_trip(tiny_tokenizer):
    import keras

    config = tiny_tokenizer.get_config()
    assert config["lowercase"] is True and config["max_input_chars_per_word"] == 200
    assert config["special_tokens_in_strings"] is False  # the original's rule (tests/preprocessing/test_special_tokens.py)
    restored = BertTokenizer.from_config(config)
    assert restored.get_vocabulary() == tiny_tokenizer.get_vocabulary()
    again = keras.layers.deserialize(keras.layers.serialize(tiny_tokenizer))
    assert again("the fox").numpy().tolist() == tiny_tokenizer("the fox").numpy().tolist()


def test_from_preset_and_save_to_preset(tmp_path, tiny_tokenizer):
    tokenizer = BertTokenizer.from_preset("bert_tiny_uncased")
    assert tokenizer.lowercase is True and tokenizer.vocabulary_size() == 30522
    assert BertTokenizer.from_preset("bert_base_cased").lowercase is False
    folder = tmp_path / "preset"
    folder.mkdir()
    existing = {"name": "x", "encoder": {"vocabulary_size": 36, "num_layers": 1, "num_heads": 1,
                                         "hidden_dim": 2, "intermediate_dim": 4}}
    (folder / "config.json").write_text(json.dumps(existing))
    tiny_tokenizer.save_to_preset(folder)
    config = json.loads((folder / "config.json").read_text())
    assert config["encoder"] == existing["encoder"] and config["name"] == "x"
    assert config["tokenizer"] == {"vocabulary": "vocab.txt", "lowercase": True}
    assert presets.vocabulary_path(folder) == folder / "vocab.txt"
    loaded = BertTokenizer.from_preset(folder)
    assert loaded.get_vocabulary() == tiny_tokenizer.get_vocabulary()


@pytest.mark.all_backends
def test_in_tf_data_and_tf_function(tiny_tokenizer):
    texts = ["the quick fox", "a", "", "naïve café!"]
    expected = tiny_tokenizer(texts).to_list()
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(2).map(tiny_tokenizer)
    assert [row for batch in dataset for row in batch.to_list()] == expected
    unbatched = tf.data.Dataset.from_tensor_slices(texts).map(tiny_tokenizer.tokenize_with_offsets)
    assert [ids.numpy().tolist() for ids, _, _ in unbatched] == expected


def test_in_a_saved_model(tmp_path, tiny_tokenizer):
    class Serving(tf.Module):
        def __init__(self, tokenizer):
            super().__init__()
            self.tokenizer = tokenizer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def __call__(self, text):
            return self.tokenizer(text).to_tensor(-1)

    tf.saved_model.save(Serving(tiny_tokenizer), str(tmp_path / "saved"))
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    output = loaded(tf.constant(["the fox", "a bc!"])).numpy()
    assert output.tolist() == tiny_tokenizer(["the fox", "a bc!"]).to_tensor(-1).numpy().tolist()
    assert np.all(output[0, :2] >= 0)
