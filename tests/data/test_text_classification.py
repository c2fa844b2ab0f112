import json

import numpy as np
import pytest

from keras_bert_app.data.bucketing import grouped_batches
from keras_bert_app.data.text_classification import classification_examples
from keras_bert_app.data.text_classification import count_truncated
from keras_bert_app.data.text_classification import read_text_classification


@pytest.fixture(scope="module")
def preprocessor(shared_data):
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    tokenizer = BertTokenizer(shared_data / "vocab" / "bert_uncased_vocab.txt", lowercase=True)
    return BertPreprocessor(tokenizer, sequence_length=12)


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_tsv_and_jsonl_read_alike(tmp_path):
    csv_path = write(tmp_path / "a.csv", 'text,label\n"good, very good",pos\nbad,neg\n')
    tsv_path = write(tmp_path / "a.tsv", "text\tlabel\ngood, very good\tpos\nbad\tneg\n")
    rows = [{"text": "good, very good", "label": "pos"}, {"text": "bad", "label": "neg"}]
    jsonl_path = write(tmp_path / "a.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    for path in (csv_path, tsv_path, jsonl_path):
        examples = read_text_classification(path, "text", "label")
        assert examples.texts == ["good, very good", "bad"]
        assert examples.label_names == ["neg", "pos"]
        assert examples.labels == [1, 0]
        assert examples.lines == [2, 3] if path != jsonl_path else [1, 2]


def test_pairs_regression_and_given_labels(tmp_path):
    path = write(tmp_path / "p.csv", "a,b,score\nx,y,1.5\nz,w,4\n")
    examples = read_text_classification(path, "a", "score", text_pair_column="b", regression=True)
    assert examples.text_pairs == ["y", "w"] and examples.labels == [1.5, 4.0]
    assert examples.label_names is None
    path = write(tmp_path / "l.csv", "text,label\nx,b\n")
    assert read_text_classification(path, "text", "label", label_names=["a", "b", "c"]).labels == [1]


def test_bad_input_names_file_and_line(tmp_path):
    path = write(tmp_path / "bad.csv", "text,label\nok,pos\nmissing\n")
    with pytest.raises(ValueError, match=r"bad.csv:3: expected 2 fields"):
        read_text_classification(path, "text", "label")
    path = write(tmp_path / "col.tsv", "sentence\tlabel\nok\tpos\n")
    with pytest.raises(ValueError, match=r"col.tsv:2: no column 'text'"):
        read_text_classification(path, "text", "label")
    path = write(tmp_path / "lab.csv", "text,label\nok,pos\nhm,maybe\n")
    with pytest.raises(ValueError, match=r"lab.csv:3: label 'maybe' is not one of \['neg', 'pos'\]"):
        read_text_classification(path, "text", "label", label_names=["neg", "pos"])
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        read_text_classification(tmp_path / "nope.csv", "text", "label")


def _batches(examples, preprocessor, batch_size=2):
    """The batches a task makes of the examples (`Task.dataset`), every one padded to the sequence length."""
    return grouped_batches(classification_examples(examples, preprocessor), len(examples), batch_size,
                           preprocessor.sequence_length)


def test_dataset_packs_and_counts_truncation(tmp_path, preprocessor):
    # "the" is one WordPiece: 20 of them overflow 12 - 2 slots; "a b c" does not.
    path = write(tmp_path / "t.csv", "text,label\n" + "the " * 20 + ",x\na b c,y\nthe cat,x\n")
    examples = read_text_classification(path, "text", "label")
    assert count_truncated(examples, preprocessor) == 1
    batches = list(_batches(examples, preprocessor))
    inputs, labels = batches[0]
    assert tuple(inputs["token_ids"].shape) == (2, 12)
    the_id = preprocessor.tokenizer.token_to_id("the")
    expected = [preprocessor.tokenizer.cls_token_id] + [the_id] * 10 + [preprocessor.tokenizer.sep_token_id]
    np.testing.assert_array_equal(inputs["token_ids"][0], expected)
    np.testing.assert_array_equal(labels, [0, 1])
    assert sum(len(b[1]) for b in batches) == 3


def test_empty_dev_set(tmp_path, preprocessor):
    path = write(tmp_path / "empty.csv", "text,label\n")
    examples = read_text_classification(path, "text", "label", label_names=["x"])
    with pytest.raises(ValueError, match="empty.csv: no examples"):
        _batches(examples, preprocessor)
