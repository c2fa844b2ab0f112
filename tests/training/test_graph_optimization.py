"""Grappler is skipped for the functions a TensorFlow CPU runs op by op (`models.xla.graph_optimization_for`):
`finetune` trains and predicts without it, XLA-compiled models keep it, the setting is restored, numbers agree."""

import contextlib

import keras
import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.xla import graph_optimization_for
from tests.training.test_finetune import tiny_preset  # noqa: F401 (a fixture)

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="Grappler is TensorFlow's")


def _grappler_off():
    import tensorflow as tf

    return bool(tf.config.optimizer.get_experimental_options().get("disable_meta_optimizer", False))


def _classifier(jit_compile):
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(vocabulary_size=60, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
                          max_sequence_length=16, dropout=0.0)
    classifier = BertClassifier(encoder, num_classes=3, dropout=0.0)
    classifier.compile(learning_rate=1e-3, total_steps=10, jit_compile=jit_compile)
    return classifier


def _batch(length):
    rng = np.random.default_rng(length)
    return {
        "token_ids": rng.integers(1, 60, (4, length)).astype("int32"),
        "segment_ids": np.zeros((4, length), "int32"),
        "padding_mask": (np.arange(length) < np.array([[length], [length - 2], [3], [length]])).astype("int32"),
    }


def test_off_inside_for_an_op_by_op_model_restored_after_and_kept_for_xla():
    assert not _grappler_off()
    with graph_optimization_for(_classifier(jit_compile=False)):
        assert _grappler_off()
    assert not _grappler_off()
    with graph_optimization_for(_classifier(jit_compile=True)):
        assert not _grappler_off()
    with pytest.raises(RuntimeError):
        with graph_optimization_for(_classifier(jit_compile=False)):
            raise RuntimeError("a failed fit")
    assert not _grappler_off()


def test_the_same_outputs_and_training_steps_with_and_without_grappler():
    results = []
    for off in (False, True):
        classifier = _classifier(jit_compile=False)
        x = [_batch(length) for length in (12, 7, 16)]
        y = np.array([0, 1, 2, 1])
        context = graph_optimization_for(classifier) if off else contextlib.nullcontext()
        with context:
            assert _grappler_off() is off
            for batch in x:
                classifier.train_on_batch(batch, y)
            results.append([keras.ops.convert_to_numpy(classifier.predict_on_batch(batch)) for batch in x])
    for with_grappler, without in zip(*results):
        np.testing.assert_allclose(without, with_grappler, rtol=1e-5, atol=1e-6)


def test_finetune_trains_and_predicts_without_grappler_and_leaves_it_on(tiny_preset, tmp_path, monkeypatch):
    seen = {}
    for method in ("fit", "predict"):
        original = getattr(keras.Model, method)
        monkeypatch.setattr(keras.Model, method, lambda self, *a, _o=original, _m=method, **k: (
            seen.setdefault(_m, _grappler_off()), _o(self, *a, **k))[1])
    rows = ["text,label"] + [f"{word} good,pos" if i % 2 else f"{word} bad,neg" for i, word in enumerate("abcdefgh")]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    argv = ["finetune", "classify", "--preset", tiny_preset, "--train", tmp_path / "data.csv", "--dev",
            tmp_path / "data.csv", "--text-column", "text", "--label-column", "label", "--output", tmp_path / "run",
            "--epochs", "1", "--batch-size", "4", "--sequence-length", "16", "--learning-rate", "1e-3"]
    assert cli.main([str(a) for a in argv]) == 0
    assert seen == {"fit": True, "predict": True}
    assert not _grappler_off()
