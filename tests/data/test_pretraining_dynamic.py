"""Dynamic masking: corpus files to masked-pair batches, fresh every epoch,
fed to `model.fit` on every backend."""

import numpy as np
import pytest

from keras_bert_app.data.dynamic_pretraining import dynamic_pretraining_dataset

SEQ, PRED = 32, 5


@pytest.fixture(scope="module")
def corpus_and_tokenizer(shared_data, tmp_path_factory):
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    text = (shared_data / "corpus" / "enwiki_sample.txt").read_text(encoding="utf-8")
    documents = [d for d in text.split("\n\n") if d.strip()][:6]
    documents = ["\n".join(d.splitlines()[:15]) for d in documents]
    path = tmp_path_factory.mktemp("corpus") / "wiki.txt"
    path.write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(vocabulary=shared_data / "vocab" / "bert_uncased_vocab.txt")
    return str(path), tokenizer


def epoch_arrays(dataset):
    """One pass over the dataset, as arrays named `x.token_ids`, `y.nsp`, ..."""
    merged = {}
    for x, y, weights in dataset:
        for prefix, part in (("x", x), ("y", y), ("w", weights)):
            for name, value in part.items():
                merged.setdefault(f"{prefix}.{name}", []).append(np.asarray(value))
    return {name: np.concatenate(values) for name, values in merged.items()}


def test_fresh_masks_every_epoch_and_reproducible(corpus_and_tokenizer):
    path, tokenizer = corpus_and_tokenizer
    dataset = dynamic_pretraining_dataset(path, tokenizer, batch_size=16, max_seq_length=SEQ, max_predictions_per_seq=PRED, seed=1)
    first, second = epoch_arrays(dataset), epoch_arrays(dataset)
    assert first["x.token_ids"].shape[1] == SEQ and first["x.mask_positions"].shape[1] == PRED
    assert first["x.token_ids"].dtype == np.int32 and first["w.mlm"].dtype == np.float32
    lengths = first["x.padding_mask"].sum(axis=1)
    expected = np.minimum(PRED, np.maximum(1, np.round(lengths * 0.15)))
    np.testing.assert_array_equal(first["w.mlm"].sum(axis=1), expected)
    assert set(np.unique(first["y.nsp"]).tolist()) == {0, 1}
    # A new epoch: new pairs and masks.
    assert not np.array_equal(first["x.mask_positions"][:20], second["x.mask_positions"][:20])
    # The same seed replays the same epochs.
    again = dynamic_pretraining_dataset(path, tokenizer, batch_size=16, max_seq_length=SEQ, max_predictions_per_seq=PRED, seed=1)
    replay = epoch_arrays(again)
    for name in first:
        np.testing.assert_array_equal(first[name], replay[name])


@pytest.mark.all_backends  # the only backend-sensitive part: tf.data batches feed fit on each backend
def test_model_fit_on_this_backend(corpus_and_tokenizer):
    import keras

    path, tokenizer = corpus_and_tokenizer
    dataset = dynamic_pretraining_dataset(path, tokenizer, batch_size=8, max_seq_length=SEQ, max_predictions_per_seq=PRED)
    vocabulary_size = tokenizer.vocabulary_size()
    inputs = {
        "token_ids": keras.Input((SEQ,), dtype="int32", name="token_ids"),
        "segment_ids": keras.Input((SEQ,), dtype="int32", name="segment_ids"),
        "padding_mask": keras.Input((SEQ,), dtype="int32", name="padding_mask"),
        "mask_positions": keras.Input((PRED,), dtype="int32", name="mask_positions"),
    }
    hidden = keras.layers.Embedding(vocabulary_size, 4)(inputs["token_ids"])  # (batch, seq, 4)
    # Every input feeds the outputs (Keras 3.11 refuses a functional model with an input not connected to them).
    hidden = hidden + keras.layers.Embedding(2, 4)(inputs["segment_ids"])
    hidden = hidden * keras.ops.expand_dims(keras.ops.cast(inputs["padding_mask"], "float32"), -1)
    gathered = keras.ops.take_along_axis(hidden, keras.ops.expand_dims(inputs["mask_positions"], -1), axis=1)
    outputs = {
        "mlm": keras.layers.Dense(vocabulary_size, name="mlm")(gathered),  # (batch, pred, vocab)
        "nsp": keras.layers.Dense(2, name="nsp")(keras.ops.mean(hidden, axis=1)),
    }
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer="adam",
        loss={"mlm": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              "nsp": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
    )
    # A plain functional model wants a weight for every output; the NSP
    # weight is 1 (`BertPretrainer` takes the `{"mlm": ...}` weights as is).
    import tensorflow as tf

    dataset = dataset.map(lambda x, y, w: (x, y, {**w, "nsp": tf.ones_like(y["nsp"], tf.float32)}))
    history = model.fit(dataset, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
