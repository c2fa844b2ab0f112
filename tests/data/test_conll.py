import numpy as np
import pytest

from keras_bert_app.data.conll import IGNORE_LABEL
from keras_bert_app.data.conll import decode_tags
from keras_bert_app.data.conll import encode_tagged
from keras_bert_app.data.conll import read_conll
from keras_bert_app.data.conll import tag_names

CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP I-ORG
rejects VBZ B-VP O
German JJ B-NP I-MISC
call NN I-NP O
. . O O

Peter NNP B-NP I-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- -X- O

Unbelievably RB B-ADVP O
"""


@pytest.fixture(scope="module")
def tokenizer(shared_data):
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    return BertTokenizer(shared_data / "vocab" / "bert_cased_vocab.txt", lowercase=False)


def test_read_sentences_and_documents(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(CONLL, encoding="utf-8")
    sentences = read_conll(path)
    assert sentences.words == [["EU", "rejects", "German", "call", "."], ["Peter", "Blackburn"], ["Unbelievably"]]
    assert sentences.tags[0] == ["I-ORG", "O", "I-MISC", "O", "O"]
    assert sentences.lines == [3, 9, 14]
    assert tag_names(sentences) == ["O", "I-MISC", "I-ORG", "I-PER"]


def test_labels_on_first_sub_token_match_hf_word_ids(tmp_path, shared_data, tokenizer):
    tokenizers = pytest.importorskip("tokenizers")
    path = tmp_path / "train.txt"
    path.write_text(CONLL, encoding="utf-8")
    sentences = read_conll(path)
    names = tag_names(sentences)
    arrays, truncated = encode_tagged(sentences, tokenizer, 16, names)
    assert truncated == 0
    reference = tokenizers.BertWordPieceTokenizer(
        str(shared_data / "vocab" / "bert_cased_vocab.txt"), lowercase=False, strip_accents=False
    )
    for row, words in enumerate(sentences.words):
        encoding = reference.encode(words, is_pretokenized=True)
        assert arrays["token_ids"][row, : len(encoding.ids)].tolist() == encoding.ids
        expected = np.full(16, IGNORE_LABEL)
        seen = set()
        for position, word in enumerate(encoding.word_ids):
            if word is not None and word not in seen:
                seen.add(word)
                expected[position] = names.index(sentences.tags[row][word])
        np.testing.assert_array_equal(arrays["labels"][row], expected)
        np.testing.assert_array_equal(arrays["sample_weight"][row], expected != IGNORE_LABEL)
    # "Unbelievably" is several pieces: one label, the rest ignored.
    assert (arrays["labels"][2] != IGNORE_LABEL).sum() == 1


def test_truncation_and_decoding(tmp_path, tokenizer):
    path = tmp_path / "long.txt"
    path.write_text("".join(f"w{i} B-PER\n" for i in range(10)), encoding="utf-8")
    sentences = read_conll(path)
    arrays, truncated = encode_tagged(sentences, tokenizer, 8, ["O", "B-PER"])
    assert truncated == 1
    assert arrays["token_ids"][0, -1] == tokenizer.sep_token_id
    logits = np.zeros((1, 8, 2))
    logits[..., 1] = 1.0  # every position says B-PER
    tags = decode_tags(logits, arrays, sentences, ["O", "B-PER"])[0]
    kept = int((arrays["word_index"][0] >= 0).sum())
    assert tags == ["B-PER"] * kept + ["O"] * (10 - kept)  # words cut off get "O"


def test_malformed_lines(tmp_path, tokenizer):
    path = tmp_path / "bad.txt"
    path.write_text("EU B-ORG\nrejects\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.txt:2: expected 'word ... tag' columns"):
        read_conll(path)
    path.write_text("EU NNP X-ORG\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.txt:1: Expected a tag"):
        read_conll(path)
    path.write_text("EU B-ORG\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.txt:1: tag 'B-ORG' is not one of \['O'\]"):
        encode_tagged(read_conll(path), tokenizer, 8, ["O"])
