"""Corpus reading: the original one-sentence-per-line format, checked with a
stand-in tokenizer whose tokens are the integers written in the text."""

import gzip

import numpy as np
import pytest

from keras_bert_app.data.corpus import expand_input_files
from keras_bert_app.data.corpus import tokenize_corpus


def number_tokenizer(lines):
    """'3 4 5' -> [3, 4, 5]; a line of '-' tokenizes to nothing."""
    import tensorflow as tf

    words = tf.strings.split(lines)
    words = tf.ragged.boolean_mask(words, tf.not_equal(words, "-"))
    return tf.strings.to_number(words, tf.int32)


def documents_of(corpus):
    return [[s.tolist() for s in document] for document in corpus.documents()]


def test_documents_sentences_and_files(tmp_path):
    (tmp_path / "a.txt").write_text("1 2\n3\n\n\n4 5 6\n  \n7\n")
    with gzip.open(tmp_path / "b.txt.gz", "wt") as stream:
        stream.write("\n8\n-\n9 10\n\n")
    (tmp_path / "c.txt").write_text("11\n")
    files = expand_input_files([str(tmp_path / "*.txt"), str(tmp_path / "b.txt.gz")])
    assert files == [str(tmp_path / "a.txt"), str(tmp_path / "c.txt"), str(tmp_path / "b.txt.gz")]
    corpus = tokenize_corpus(files, number_tokenizer)
    # Blank runs make one boundary, a document never spans two files, a line
    # that tokenizes to nothing is skipped.
    assert documents_of(corpus) == [[[1, 2], [3]], [[4, 5, 6]], [[7]], [[11]], [[8], [9, 10]]]
    assert corpus.num_tokens == 11
    assert corpus.token_ids.dtype == np.int32


def test_batches_do_not_change_the_result(tmp_path, monkeypatch):
    lines = []
    for document in range(30):
        lines += [f"{document} {i}" for i in range(document % 4 + 1)] + [""]
    (tmp_path / "c.txt").write_text("\n".join(lines))
    whole = tokenize_corpus([str(tmp_path / "c.txt")], number_tokenizer)
    monkeypatch.setattr("keras_bert_app.data.corpus.LINES_PER_BATCH", 3)
    batched = tokenize_corpus([str(tmp_path / "c.txt")], number_tokenizer)
    assert documents_of(whole) == documents_of(batched)
    assert whole.num_documents == 30


def test_non_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"1 2\n\n3 \xff\xfe 4\n")
    with pytest.raises(ValueError, match=r"bad.txt:3: not valid UTF-8.*column 3"):
        tokenize_corpus([str(path)], number_tokenizer)


def test_corrupt_gzip_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.txt.gz"
    path.write_bytes(b"not gzip at all")
    with pytest.raises(ValueError, match=r"bad.txt.gz:1: cannot read"):
        tokenize_corpus([str(path)], number_tokenizer)


@pytest.mark.parametrize("content", ["", "\n\n  \n\n", "-\n-\n"])
def test_corpus_without_documents(tmp_path, content):
    path = tmp_path / "empty.txt"
    path.write_text(content)
    with pytest.raises(ValueError, match="holds no document"):
        tokenize_corpus([str(path)], number_tokenizer)


def test_empty_file_among_others_is_skipped(tmp_path):
    (tmp_path / "a.txt").write_text("")
    (tmp_path / "b.txt").write_text("1\n\n2\n")
    corpus = tokenize_corpus(expand_input_files(str(tmp_path / "*.txt")), number_tokenizer)
    assert documents_of(corpus) == [[[1]], [[2]]]


def test_missing_inputs(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        expand_input_files(str(tmp_path / "nope.txt"))
    with pytest.raises(FileNotFoundError, match="matches no file"):
        expand_input_files(str(tmp_path / "*.txt"))
    with pytest.raises(ValueError, match="is a directory"):
        expand_input_files(str(tmp_path))


def test_one_megabyte_line(tmp_path):
    path = tmp_path / "long.txt"
    long_line = " ".join(["7"] * 500_000)  # 1 MB
    path.write_text(f"1 2\n{long_line}\n\n3\n")
    corpus = tokenize_corpus([str(path)], number_tokenizer)
    assert corpus.num_documents == 2
    assert corpus.num_tokens == 500_003
