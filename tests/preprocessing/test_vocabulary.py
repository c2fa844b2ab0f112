import pytest

from keras_bert_app.preprocessing.vocabulary import SPECIAL_TOKENS
from keras_bert_app.preprocessing.vocabulary import VocabularyError
from keras_bert_app.preprocessing.vocabulary import read_vocabulary


def write(tmp_path, lines, name="vocab.txt"):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_reads_tokens_in_id_order(tmp_path):
    path = write(tmp_path, list(SPECIAL_TOKENS) + ["hello", "##lo"])
    assert read_vocabulary(path) == list(SPECIAL_TOKENS) + ["hello", "##lo"]
    assert read_vocabulary(str(path)) == read_vocabulary(path)


def test_accepts_windows_line_ends(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes("\r\n".join(SPECIAL_TOKENS + ("a",)).encode() + b"\r\n")
    assert read_vocabulary(path)[-1] == "a"


@pytest.mark.parametrize("missing", SPECIAL_TOKENS)
def test_missing_special_token_names_file_and_token(tmp_path, missing):
    path = write(tmp_path, [t for t in SPECIAL_TOKENS if t != missing] + ["a"])
    with pytest.raises(VocabularyError, match="missing special token") as error:
        read_vocabulary(path)
    assert str(path) in str(error.value) and missing in str(error.value)


def test_duplicate_names_file_and_lines(tmp_path):
    path = write(tmp_path, list(SPECIAL_TOKENS) + ["a", "b", "a"])
    with pytest.raises(VocabularyError, match=r"'a' is duplicated on lines 6 and 8") as error:
        read_vocabulary(path)
    assert str(path) in str(error.value)


def test_empty_line_names_file_and_line(tmp_path):
    path = write(tmp_path, list(SPECIAL_TOKENS) + ["a", "", "b"])
    with pytest.raises(VocabularyError, match="line 7 is empty") as error:
        read_vocabulary(path)
    assert str(path) in str(error.value)


def test_missing_file_and_empty_file(tmp_path):
    with pytest.raises(VocabularyError, match="no such file"):
        read_vocabulary(tmp_path / "nope.txt")
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(VocabularyError, match="empty"):
        read_vocabulary(tmp_path / "empty.txt")


def test_list_is_checked_too():
    with pytest.raises(VocabularyError, match="vocabulary list: missing special token"):
        read_vocabulary(["[PAD]", "[UNK]"])
    with pytest.raises(VocabularyError, match="entry 5 is int"):
        read_vocabulary(list(SPECIAL_TOKENS) + [5])


@pytest.mark.parametrize("extra", [[], ["[unused0]", "[unused1]"]])
def test_only_special_tokens_names_the_file(tmp_path, extra):
    path = write(tmp_path, list(SPECIAL_TOKENS) + extra)
    with pytest.raises(VocabularyError, match="are bracketed special tokens") as error:
        read_vocabulary(path)
    assert str(path) in str(error.value) and f"all {5 + len(extra)} tokens" in str(error.value)
    assert read_vocabulary(write(tmp_path, list(SPECIAL_TOKENS) + extra + ["##a"], "ok.txt"))[-1] == "##a"
