"""`SentencePieceTokenizer` (ALBERT): ids against transformers' `AlbertTokenizer` and SentencePiece on real text,
normalisation, tf.data and SavedModel, presets, bad model files."""

import io
import json

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_app import errors
from keras_bert_app.convert import resolve
from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_app.preprocessing.preset_tokenizer import tokenizer_from_preset
from keras_bert_app.preprocessing.sentencepiece_tokenizer import SentencePieceTokenizer
from tests.preprocessing.sentencepiece_models import preprocess_text, train_model

# Trained on the first lines of the Wikipedia sample; the ids are checked on the next ones (held-out text).
TRAIN_LINES = 1000
TEST_LINES = 1000
TEXTS = ["The city's ``history''.", "Zürich"]


@pytest.fixture(scope="module")
def model_path(tmp_path_factory, enwiki_lines):
    folder = tmp_path_factory.mktemp("albert_tokenizer")
    return train_model(folder / "spiece.model", enwiki_lines[:TRAIN_LINES], vocabulary_size=1000)


@pytest.fixture(scope="module")
def tokenizer(model_path):
    return SentencePieceTokenizer(model_path)


def _hf_tokenizer(folder, **kwargs):
    transformers = pytest.importorskip("transformers")
    return transformers.AlbertTokenizer.from_pretrained(str(folder), **kwargs)


def test_ids_equal_transformers_albert_tokenizer_on_every_line_of_real_text(model_path, tokenizer, enwiki_lines):
    _check_ids_on(enwiki_lines[TRAIN_LINES:TRAIN_LINES + TEST_LINES], model_path, tokenizer)


@pytest.mark.large
def test_ids_on_the_whole_wikipedia_sample(model_path, tokenizer, enwiki_lines):
    _check_ids_on(enwiki_lines, model_path, tokenizer)


def _check_ids_on(lines, model_path, tokenizer):
    """Ours equal HF's `AlbertTokenizer`'s and SentencePiece's ids on every line."""
    spm = pytest.importorskip("sentencepiece")
    ours = tokenizer(lines).to_list()
    hf = _hf_tokenizer(model_path.parent)(lines, add_special_tokens=False)["input_ids"]
    processor = spm.SentencePieceProcessor(model_file=str(model_path))
    original = [processor.encode(preprocess_text(line)) for line in lines]  # google-research/albert's way
    for reference in (hf, original):
        differing = [index for index, (a, b) in enumerate(zip(ours, reference)) if a != b]
        # Should this ever fail: Unigram's Viterbi can tie ("5000": "5"+"0"+"00" or "5"+"00"+"0"), and the
        # message says whether a line is such a tie (same text, same total score) or a real difference.
        assert not differing, [
            (lines[index], [processor.id_to_piece(i) for i in ours[index]],
             [processor.id_to_piece(i) for i in reference[index]],
             sum(map(processor.get_score, ours[index])), sum(map(processor.get_score, reference[index])))
            for index in differing[:5]
        ]
    assert sum(len(ids) for ids in ours) > 20 * len(lines)
    assert any(tokenizer.unk_token_id in ids for ids in ours)  # unknown characters occur, and agree


def test_offsets_equal_transformers_offset_mapping(model_path, tokenizer, enwiki_lines):
    """Each piece's raw text (byte offsets here, character offsets in HF) on real text and where normalisation acts."""
    tricky = ["The city's ``history'' of Zürich.", "  a\u3000b  ", "x", "```a'''", "Café NAÏVE ½ \u00a8x", "",
              "日本 は", "a\u0301b", "1,000 km\u00b2"]
    lines = tricky + enwiki_lines[TRAIN_LINES:TRAIN_LINES + 300]
    ids, starts, ends = tokenizer.tokenize_with_offsets(lines)
    assert ids.to_list() == tokenizer(lines).to_list()
    expected = _hf_tokenizer(model_path.parent)(lines, add_special_tokens=False, return_offsets_mapping=True)
    for line, row_starts, row_ends, mapping in zip(lines, starts.to_list(), ends.to_list(), expected["offset_mapping"]):
        data = line.encode("utf-8")
        assert [data[s:e].decode("utf-8") for s, e in zip(row_starts, row_ends)] == [line[s:e] for s, e in mapping], line
    single = tokenizer.tokenize_with_offsets(tricky[0])
    assert [x.numpy().tolist() for x in single] == [ids.to_list()[0], starts.to_list()[0], ends.to_list()[0]]


def test_offsets_leave_out_the_characters_sentencepiece_drops_as_hf(model_path, tokenizer):
    """Controls and zero-width characters at a piece's ends are outside its span in HF; they were inside ours."""
    lines = ["zero\u200bwidth", "zw\u200cnon", "lrm\u200emark\u200f", "bell\x07x", "esc\x1b[31m", "del\x7fx",
             "a\u200bb", "\ufeffBOM", "x \u200d y", "a\x1cb\x1dc\x1ed"]
    ids, starts, ends = tokenizer.tokenize_with_offsets(lines)
    assert ids.to_list() == tokenizer(lines).to_list()
    expected = _hf_tokenizer(model_path.parent)(lines, add_special_tokens=False, return_offsets_mapping=True)
    assert ids.to_list() == expected["input_ids"]
    for line, row_starts, row_ends, mapping in zip(lines, starts.to_list(), ends.to_list(), expected["offset_mapping"]):
        data = line.encode("utf-8")
        assert [data[s:e].decode("utf-8") for s, e in zip(row_starts, row_ends)] == [line[s:e] for s, e in mapping], line


def test_nul_and_final_sigma_as_sentencepiece_on_albert_normalised_text(tmp_path, enwiki_lines):
    """A NUL is an unknown character (lower-casing cut the text there); a word-final "Σ" is "ς" in both paths."""
    spm = pytest.importorskip("sentencepiece")
    greek = ["Η ΟΔΟΣ και ο ΚΟΣΜΟΣ σας.", "ο κόσμος, η οδός, ΣΑΣ"] * 20
    path = train_model(tmp_path / "spiece.model", enwiki_lines[:300] + greek, vocabulary_size=400)
    tokenizer = SentencePieceTokenizer(path)
    lines = ["a\x00b", "\x00", "The END\x00 of it", "ΟΔΟΣ ΚΟΣΜΟΣ", "ΣΑΣ.", "ΟΔΟΣ\x00Β"]
    processor = spm.SentencePieceProcessor(model_file=str(path))
    expected = [processor.encode(preprocess_text(line)) for line in lines]  # Python's str.lower: "ς" at a word's end
    assert tokenizer(lines).to_list() == expected
    assert tokenizer.tokenize_with_offsets(lines)[0].to_list() == expected
    assert processor.piece_to_id("ς") != processor.piece_to_id("σ") != processor.unk_id()
    assert processor.unk_id() in expected[0] and processor.unk_id() in expected[1]


def test_albert_normalisation_quotes_accents_case_whitespace(tokenizer):
    same = tokenizer(['"cafe" naive x y', "``Café''  NAÏVE\u00a0X\t\n y  ", "  ``cafe'' naive x y"]).to_list()
    assert same[0] == same[1] == same[2]
    kept = SentencePieceTokenizer(tokenizer._proto, lowercase=False, strip_accents=False)
    assert kept("Café").numpy().tolist() != tokenizer("Café").numpy().tolist()


def test_options_match_transformers_do_lower_case_and_keep_accents(model_path, enwiki_lines):
    lines = [line for line in enwiki_lines[TRAIN_LINES:] if line != line.lower()][:200] + ["Ça naïve Éclair Zürich"]
    ours = SentencePieceTokenizer(model_path, lowercase=False, strip_accents=False)(lines).to_list()
    hf = _hf_tokenizer(model_path.parent, do_lower_case=False, keep_accents=True)
    assert ours == hf(lines, add_special_tokens=False)["input_ids"]


def test_special_tokens_and_vocabulary(tokenizer):
    assert (tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id,
            tokenizer.mask_token_id) == (0, 1, 2, 3, 4)
    assert tokenizer.vocabulary_size() == 1000
    assert tokenizer.id_to_token(2) == "[CLS]" and tokenizer.token_to_id("[MASK]") == 4
    assert 3 not in tokenizer("a [SEP] b").numpy().tolist()  # control pieces are never read from text
    ids = tokenizer(["the history of the city"])
    assert tokenizer.tokenize_as_strings(["the history"]).to_list()[0][0].decode().startswith("\u2581")
    assert tokenizer.detokenize(ids).numpy().tolist() == [b"the history of the city"]


def test_tf_data_and_the_preprocessor(tokenizer):
    preprocessor = BertPreprocessor(tokenizer, sequence_length=32)
    dataset = tf.data.Dataset.from_tensor_slices((TEXTS, TEXTS)).batch(2).map(lambda a, b: preprocessor((a, b)))
    ids = next(iter(dataset))["token_ids"].numpy()
    first = tokenizer(TEXTS[0]).numpy().tolist()
    assert ids[0, : len(first) + 1].tolist() == [2, *first]
    assert ids[0, len(first) + 1] == 3 and ids[0, 2 * len(first) + 2] == 3 and ids[1, -1] == 0  # [SEP], <pad>


@pytest.mark.all_backends
@pytest.mark.large
def test_saved_model(tokenizer, tmp_path):
    preprocessor = BertPreprocessor(tokenizer, sequence_length=32)

    class Serving(tf.Module):
        def __init__(self):
            super().__init__()
            self.preprocessor = preprocessor

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def __call__(self, text):
            return self.preprocessor(text)["token_ids"]

    tf.saved_model.save(Serving(), str(tmp_path / "saved"))
    restored = tf.saved_model.load(str(tmp_path / "saved"))
    np.testing.assert_array_equal(restored(tf.constant(TEXTS)).numpy(), np.asarray(preprocessor(TEXTS)["token_ids"]))


def test_config_round_trip_through_the_preprocessor(tokenizer):
    import keras

    preprocessor = BertPreprocessor(tokenizer, sequence_length=8)
    restored = keras.layers.deserialize(keras.layers.serialize(preprocessor))
    assert isinstance(restored.tokenizer, SentencePieceTokenizer)
    np.testing.assert_array_equal(restored(["a b c"])["token_ids"], preprocessor(["a b c"])["token_ids"])


def test_preset_names_its_tokenizer(tokenizer, tmp_path):
    folder = tokenizer.save_to_preset(tmp_path / "preset")
    presets_config = json.loads((folder / "config.json").read_text())
    presets_config["encoder"] = {"vocabulary_size": 1000, "num_layers": 2, "num_heads": 2, "hidden_dim": 8,
                                 "intermediate_dim": 16}
    (folder / "config.json").write_text(json.dumps(presets_config))
    assert presets_config["tokenizer"]["type"] == "sentencepiece"
    loaded = tokenizer_from_preset(folder)
    assert isinstance(loaded, SentencePieceTokenizer)
    assert loaded("Zürich").numpy().tolist() == tokenizer("Zürich").numpy().tolist()
    assert isinstance(BertPreprocessor.from_preset(folder, sequence_length=8).tokenizer, SentencePieceTokenizer)


def test_builtin_albert_preset_says_where_its_sentencepiece_model_comes_from():
    with pytest.raises(resolve.PresetError, match="hf://albert/albert-base-v2"):
        tokenizer_from_preset("albert_base")


def test_not_a_sentencepiece_model_or_not_albert_s(tmp_path, enwiki_lines):
    bad = tmp_path / "spiece.model"
    bad.write_text("[PAD]\n[UNK]\n[CLS]\nthe\n")  # a vocab.txt
    with pytest.raises(errors.DataError, match="not a SentencePiece model"):
        SentencePieceTokenizer(bad)
    with pytest.raises(errors.MissingFileError):
        SentencePieceTokenizer(tmp_path / "absent.model")
    spm = pytest.importorskip("sentencepiece")
    model = io.BytesIO()  # SentencePiece's defaults: <unk> <s> </s>, no [CLS]/[SEP]/[MASK]/<pad>
    spm.SentencePieceTrainer.train(sentence_iterator=iter(enwiki_lines[:100]), model_writer=model, vocab_size=100,
                                   minloglevel=2, num_threads=1)
    with pytest.raises(errors.DataError, match=r"no piece \['<pad>', '\[CLS\]', '\[SEP\]', '\[MASK\]'\]"):
        SentencePieceTokenizer(model.getvalue())


def test_tokenizer_survives_a_new_random_seed(model_path):
    """TF Text's eager model resource died when `set_random_seed` cleared TF's kernel cache ("does not exist")."""
    import keras

    tokenizer = SentencePieceTokenizer(model_path)  # never called before the seed, as in `finetune --seed`

    def calls():
        ids = tokenizer(TEXTS)
        _, starts, ends = tokenizer.tokenize_with_offsets(TEXTS)
        return ids.to_list(), starts.to_list(), ends.to_list(), tokenizer.detokenize(ids).numpy().tolist()

    keras.utils.set_random_seed(11)
    first = calls()
    keras.utils.set_random_seed(12)
    assert calls() == first
    assert first[3] == [b'the city\'s "history".', b"zurich"]
