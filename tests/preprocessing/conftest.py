"""Fixtures for the preprocessing tests: small vocabularies and tokenizers."""

import pytest

TINY_VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "quick", "brown", "fox", "jump", "##s", "##ed", "over", "lazy", "dog",
    "a", "b", "c", ".", ",", "!", "?", "'", "-", "un", "##able", "##a", "##b", "##c",
    "cafe", "naive", "東", "京", "x", "##y", "y",
]


@pytest.fixture(scope="session")
def tiny_vocabulary():
    return list(TINY_VOCABULARY)


@pytest.fixture(scope="session")
def tiny_tokenizer():
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    return BertTokenizer(vocabulary=TINY_VOCABULARY, lowercase=True)


@pytest.fixture(scope="session")
def uncased_tokenizer(shared_data):
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    return BertTokenizer(vocabulary=shared_data / "vocab" / "bert_uncased_vocab.txt", lowercase=True)
