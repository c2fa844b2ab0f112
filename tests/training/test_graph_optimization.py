"""Grappler is skipped for the functions a TensorFlow CPU runs op by op (`models.xla.graph_optimization_for`):
`finetune` trains and predicts without it, XLA-compiled models keep it, the setting is restored, numbers agree.
With `KERAS_BERT_APP_OP_STACKS=0` (a `keras-bert-app` process's default) their ops record no Python stack."""

import contextlib

import keras
import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app import errors
from keras_bert_app.models.xla import OP_STACKS_VARIABLE, graph_optimization_for
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
    monkeypatch.setenv(OP_STACKS_VARIABLE, "0")
    seen = {}
    for method in ("fit", "predict"):
        original = getattr(keras.Model, method)
        monkeypatch.setattr(keras.Model, method, lambda self, *a, _o=original, _m=method, **k: (
            seen.setdefault(_m, _grappler_off()), seen.setdefault(f"{_m} stacks", _traced_stack_depth() > 0),
            _o(self, *a, **k))[2])
    rows = ["text,label"] + [f"{word} good,pos" if i % 2 else f"{word} bad,neg" for i, word in enumerate("abcdefgh")]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    argv = ["finetune", "classify", "--preset", tiny_preset, "--train", tmp_path / "data.csv", "--dev",
            tmp_path / "data.csv", "--text-column", "text", "--label-column", "label", "--output", tmp_path / "run",
            "--epochs", "1", "--batch-size", "4", "--sequence-length", "16", "--learning-rate", "1e-3"]
    assert cli.main([str(a) for a in argv]) == 0
    assert seen == {"fit": True, "predict": True, "fit stacks": False, "predict stacks": False}
    assert not _grappler_off()
    assert _traced_stack_depth() > 0


def _traced_stack_depth():
    """Frames recorded for an op of a function traced now (0: none)."""
    import tensorflow as tf

    graph = tf.function(lambda x: x * 2.0).get_concrete_function(tf.TensorSpec([None])).graph
    (op,) = [op for op in graph.get_operations() if op.type == "Mul"]
    return len(op.traceback or ())


@pytest.mark.parametrize("setting", [None, "1", "0"])
def test_op_stacks_are_left_out_only_when_the_environment_says_so_and_errors_still_name_the_node(setting,
                                                                                                  monkeypatch):
    import tensorflow as tf

    if setting is None:
        monkeypatch.delenv(OP_STACKS_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(OP_STACKS_VARIABLE, setting)
    with graph_optimization_for(_classifier(jit_compile=False)):
        recorded = _traced_stack_depth()

        @tf.function
        def out_of_range(ids):
            return tf.gather(tf.ones((5, 3)), ids)

        with pytest.raises(tf.errors.InvalidArgumentError, match=r"(?s)Detected at node GatherV2.*not in \[0, 5\)"):
            out_of_range(tf.constant([7]))
    assert (recorded > 0) is (setting != "0")
    assert _traced_stack_depth() > 0  # restored on leaving
    with graph_optimization_for(_classifier(jit_compile=True)):  # XLA's functions keep them
        assert _traced_stack_depth() > 0


def test_an_op_stacks_setting_other_than_0_or_1_is_one_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv(OP_STACKS_VARIABLE, "sometimes")
    with pytest.raises(errors.ArgumentError, match=f"{OP_STACKS_VARIABLE}='sometimes': expected 0 or 1"):
        with graph_optimization_for(_classifier(jit_compile=False)):
            pass
    assert not _grappler_off()
