"""Where a model compiles nothing per shape (TensorFlow op by op on a CPU, PyTorch), `finetune` pads each batch to its
longest example itself; where it compiles per shape (XLA: JAX, `--jit-compile`), to a bucket length."""

import shlex

import keras
import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.data import bucketing
from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.xla import pads_to_exact_length
from tests.training.test_finetune import tiny_preset  # noqa: F401 (a fixture)

pytestmark = pytest.mark.all_backends

# Lengths 3 to 14 with [CLS] and [SEP]: batches of 4 whose longest is off the bucket lengths.
TEXTS = ["goal", "the team won", "shares fell sharply today", "a late goal won the cup final",
         "profits rose this year", "the bank raised rates again in march", "rain", "the striker scored twice",
         "markets closed lower after a long day of trading"]


def _classifier(jit_compile):
    encoder = BertEncoder(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16,
                          max_sequence_length=16)
    classifier = BertClassifier(encoder, num_classes=2)
    classifier.compile(learning_rate=1e-3, total_steps=10, jit_compile=jit_compile)
    return classifier


def test_exact_lengths_where_nothing_compiles_per_shape():
    backend = keras.config.backend()
    if backend == "torch":
        assert pads_to_exact_length(_classifier(False))
        return
    assert not pads_to_exact_length(_classifier(True))  # XLA compiles each shape
    assert pads_to_exact_length(_classifier(False)) is (backend == "tensorflow")  # JAX compiles even op by op


def test_finetune_pads_to_the_longest_example_or_a_bucket(tiny_preset, tmp_path, monkeypatch, capsys):
    rows = "".join(f"{text},{'sport' if i % 2 else 'business'}\n" for i, text in enumerate(TEXTS))
    (tmp_path / "train.csv").write_text("text,label\n" + rows, encoding="utf-8")
    seen = []
    original = keras.Model.fit

    def fit(self, *args, **kwargs):
        seen.extend(np.asarray(inputs["padding_mask"]) for inputs, *_ in kwargs["x"])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(keras.Model, "fit", fit)
    monkeypatch.chdir(tmp_path)
    code = cli.main(shlex.split(
        f"finetune classify --train train.csv --dev train.csv --text-column text --label-column label "
        f"--preset {tiny_preset} --output run --epochs 1 --batch-size 4 --sequence-length 40"
    ))
    out = capsys.readouterr().out
    assert code == 0
    assert len(seen) == 3 and sum(len(mask) for mask in seen) == len(TEXTS)
    widths = [mask.shape[1] for mask in seen]
    longest = [int(mask.sum(1).max()) for mask in seen]
    if keras.config.backend() == "jax":  # XLA: one compile per shape, so bucket lengths (and 40 on top)
        assert widths == [bucketing.batch_lengths(40)[np.searchsorted(bucketing.batch_lengths(40), n)]
                          for n in longest]
        assert "rounded up to 8, 12, 16, 24, 32 or 40 tokens" in out
        assert "Note: sequence length 40 is not a bucket length" in out
    else:
        assert widths == longest
        assert "Padding each batch to its longest example, up to 40 tokens" in out
