import pytest

from keras_bert_app import cli
from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer
from keras_bert_app.preprocessing.vocabulary import SPECIAL_TOKENS
from keras_bert_app.preprocessing.vocabulary import read_vocabulary
from keras_bert_app.preprocessing.vocabulary_training import train_vocabulary


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, enwiki_lines):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(enwiki_lines[:1500]) + "\n", encoding="utf-8")
    return path


def test_trained_vocabulary_round_trips_the_corpus(tmp_path, corpus):
    output = tmp_path / "vocab.txt"
    vocabulary = train_vocabulary([corpus], 2000, lowercase=True, output=output)
    assert vocabulary[: len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS)
    assert 500 < len(vocabulary) <= 2000
    assert read_vocabulary(output) == vocabulary
    tokenizer = BertTokenizer(output, lowercase=True)
    lines = corpus.read_text(encoding="utf-8").split("\n")
    ids = tokenizer(lines).flat_values.numpy()
    unknown_rate = (ids == tokenizer.unk_token_id).mean()
    assert unknown_rate < 0.005, unknown_rate
    assert "##s" in vocabulary and "the" in vocabulary


def test_cli_build_vocab_cased(tmp_path, corpus, capsys):
    output = tmp_path / "cased.txt"
    status = cli.main([
        "build-vocab", "--corpus", str(corpus), "--vocab-size", "1500",
        "--output", str(output), "--no-lowercase",
    ])
    assert status == 0
    vocabulary = read_vocabulary(output)
    assert "The" in vocabulary and vocabulary[0] == "[PAD]"
    assert "wrote" in capsys.readouterr().err


def test_cli_errors_are_one_line(tmp_path, capsys):
    status = cli.main([
        "build-vocab", "--corpus", str(tmp_path / "missing.txt"), "--vocab-size", "100",
        "--output", str(tmp_path / "v.txt"),
    ])
    assert status == 1
    assert "missing.txt" in capsys.readouterr().err
