import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor


def ids(tokenizer, *tokens):
    return [tokenizer.token_to_id(token) for token in tokens]


def test_single_and_pair(tiny_tokenizer):
    preprocessor = BertPreprocessor(tiny_tokenizer, sequence_length=10)
    out = preprocessor(["the fox jumps", "a"])
    tokens = keras.ops.convert_to_numpy(out["token_ids"]).tolist()
    assert tokens[0] == ids(tiny_tokenizer, "[CLS]", "the", "fox", "jump", "##s", "[SEP]") + [0] * 4
    pair = preprocessor((["the fox", "a"], ["lazy dog", ""]))
    token_ids = keras.ops.convert_to_numpy(pair["token_ids"]).tolist()
    segment_ids = keras.ops.convert_to_numpy(pair["segment_ids"]).tolist()
    assert token_ids[0] == ids(tiny_tokenizer, "[CLS]", "the", "fox", "[SEP]", "lazy", "dog", "[SEP]") + [0] * 3
    assert segment_ids[0] == [0, 0, 0, 0, 1, 1, 1, 0, 0, 0]
    # An empty second segment packs as a single segment, as in the original.
    assert token_ids[1] == ids(tiny_tokenizer, "[CLS]", "a", "[SEP]") + [0] * 7
    assert keras.ops.convert_to_numpy(pair["padding_mask"]).sum(axis=1).tolist() == [7, 3]


def test_scalar_and_labels(tiny_tokenizer):
    preprocessor = BertPreprocessor(tiny_tokenizer, sequence_length=6)
    x = preprocessor("the fox")
    assert tuple(x["token_ids"].shape) == (6,)
    x, y = preprocessor(["a"], np.array([1]))
    assert tuple(x["token_ids"].shape) == (1, 6) and y.tolist() == [1]


def test_from_preset_and_config(tiny_tokenizer):
    preprocessor = BertPreprocessor.from_preset("bert_tiny_uncased", sequence_length=16)
    assert preprocessor.tokenizer.lowercase and preprocessor.sequence_length == 16
    small = BertPreprocessor(tiny_tokenizer, sequence_length=7, truncate="waterfall")
    restored = BertPreprocessor.from_config(small.get_config())
    assert restored.sequence_length == 7 and restored.truncate == "waterfall"
    assert restored.tokenizer.get_vocabulary() == tiny_tokenizer.get_vocabulary()


@pytest.mark.all_backends
def test_tf_data_and_eager_on_every_backend(tiny_tokenizer):
    preprocessor = BertPreprocessor(tiny_tokenizer, sequence_length=8)
    first = ["the quick fox", "a b", "naïve café!", ""]
    second = ["lazy dog", "", "c", "x"]
    labels = [0, 1, 0, 1]
    dataset = (
        tf.data.Dataset.from_tensor_slices(((first, second), labels))
        .batch(2)
        .map(preprocessor)
    )
    batches = list(dataset)
    assert len(batches) == 2
    x, y = batches[0]
    assert isinstance(x["token_ids"], tf.Tensor) and x["token_ids"].shape == (2, 8)
    assert y.numpy().tolist() == [0, 1]
    eager = preprocessor((first, second))
    if keras.config.backend() != "tensorflow":
        assert not isinstance(eager["token_ids"], tf.Tensor)
    from_data = np.concatenate([x["token_ids"].numpy() for x, _ in batches])
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(eager["token_ids"]), from_data)
    # The packed batch feeds a backend op.
    mask = keras.ops.cast(eager["padding_mask"], "int32")
    assert keras.ops.convert_to_numpy(keras.ops.sum(mask)).item() == int(from_data.astype(bool).sum())
