import numpy as np
import pytest

from keras_bert_app.data.bucketing import grouped_batches
from keras_bert_app.data.swag import count_truncated
from keras_bert_app.data.swag import multiple_choice_examples
from keras_bert_app.data.swag import read_swag

HEADER = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label"


def write(path, rows):
    path.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def preprocessor(shared_data):
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    tokenizer = BertTokenizer(shared_data / "vocab" / "bert_uncased_vocab.txt", lowercase=True)
    return BertPreprocessor(tokenizer, sequence_length=16)


def test_read_and_pack_choices(tmp_path, preprocessor):
    path = write(tmp_path / "val.csv", [
        '0,v1,1,"She opens the door. She","She opens the door.",She,gold,walks in.,flies away.,eats it.,"sings, loudly.",0',
        "1,v2,2,The man runs. He,The man runs.,He,gen,stops.,sleeps.,reads.,swims.,3",
    ])
    examples = read_swag(path)
    assert examples.contexts == ["She opens the door.", "The man runs."]
    assert examples.choices[0] == ["She walks in.", "She flies away.", "She eats it.", "She sings, loudly."]
    assert examples.labels == [0, 3] and examples.num_choices == 4
    inputs, labels = next(iter(grouped_batches(
        multiple_choice_examples(examples, preprocessor), len(examples), 2, preprocessor.sequence_length)))
    assert tuple(inputs["token_ids"].shape) == (2, 4, 16)
    # Choice j of example i is the packed pair (context_i, ending_ij).
    reference = preprocessor((["The man runs."], ["He swims."]))
    np.testing.assert_array_equal(inputs["token_ids"][1, 3], reference["token_ids"][0])
    np.testing.assert_array_equal(inputs["segment_ids"][1, 3], reference["segment_ids"][0])
    np.testing.assert_array_equal(labels, [0, 3])
    assert count_truncated(examples, preprocessor) == 0


def test_wrong_number_of_endings(tmp_path):
    path = write(tmp_path / "short.csv", ["0,v,1,s,ctx,He,gold,a.,b.,c.,0"])
    with pytest.raises(ValueError, match=r"short.csv:2: expected 12 fields"):
        read_swag(path)
    path = write(tmp_path / "empty.csv", ["0,v,1,s,ctx,He,gold,a.,b.,,d.,0"])
    with pytest.raises(ValueError, match=r"empty.csv:2: expected 4 endings; \['ending2'\] empty"):
        read_swag(path)
    with pytest.raises(ValueError, match=r"expected 3 endings"):
        read_swag(write(tmp_path / "ok.csv", ["0,v,1,s,ctx,He,gold,a.,b.,c.,d.,0"]), num_choices=3)
    path = write(tmp_path / "label.csv", ["0,v,1,s,ctx,He,gold,a.,b.,c.,d.,4"])
    with pytest.raises(ValueError, match=r"label.csv:2: label '4' is not a choice index 0..3"):
        read_swag(path)
