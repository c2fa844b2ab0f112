"""XLA by default on TensorFlow and JAX (CPU included): same numbers as without it."""

import keras
import numpy as np
import pytest

from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_pretrainer import BertPretrainer
from keras_bert_app.training.optimizer import create_optimizer
from keras_bert_app.models.xla import JIT_COMPILE_VARIABLE, has_accelerator, jit_compile_for_lengths
from keras_bert_app.training.xla import resolve_jit_compile

pytestmark = pytest.mark.all_backends

XLA = keras.config.backend() in ("tensorflow", "jax")


@pytest.fixture(autouse=True)
def xla_by_default(monkeypatch):
    """The defaults themselves (tools/run_tests.py turns "auto" off for the rest of the TensorFlow run)."""
    monkeypatch.delenv(JIT_COMPILE_VARIABLE, raising=False)


def _encoder():
    return BertEncoder(
        vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=16, dropout=0.0,
    )


def _batch():
    rng = np.random.default_rng(0)
    x = {
        "token_ids": rng.integers(1, 50, (4, 12)).astype("int32"),
        "segment_ids": (np.arange(12) >= 6).astype("int32")[None].repeat(4, 0),
        "padding_mask": (np.arange(12) < np.array([[12], [9], [12], [7]])).astype("int32"),
        "mask_positions": rng.integers(0, 7, (4, 3)).astype("int32"),
    }
    y = {"mlm": rng.integers(0, 50, (4, 3)).astype("int32"), "nsp": np.array([0, 1, 1, 0], "int32")}
    return x, y, {"mlm": np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 1, 0]], "float32")}


def test_auto_means_xla_on_tensorflow_and_jax_and_none_on_torch():
    assert resolve_jit_compile("auto") is XLA
    assert resolve_jit_compile(False) is False
    if XLA:
        assert resolve_jit_compile(True) is True
    else:
        with pytest.raises(ValueError, match="TensorFlow or JAX"):
            resolve_jit_compile(True)
    classifier = BertClassifier(_encoder(), num_classes=3)
    classifier.compile()
    assert classifier.jit_compile is XLA  # Keras' own "auto" is False for TensorFlow on CPU


def test_runs_with_several_lengths_skip_xla_on_a_tensorflow_cpu_unless_asked():
    """Bucketing: one compile per length; on a CPU TensorFlow runs faster without XLA (models/xla.py)."""
    assert jit_compile_for_lengths(False) == "auto"  # one length: the usual default
    assert jit_compile_for_lengths(True, True) is True and jit_compile_for_lengths(True, False) is False
    if keras.config.backend() == "tensorflow" and not has_accelerator():
        assert jit_compile_for_lengths(True) is False
    else:
        assert jit_compile_for_lengths(True) == "auto"  # JAX compiles anyway; torch has no XLA


@pytest.mark.parametrize("value", ["0", "false", "Off"])
def test_the_environment_turns_auto_off_and_leaves_true_alone(monkeypatch, value):
    monkeypatch.setenv(JIT_COMPILE_VARIABLE, value)
    assert resolve_jit_compile("auto") is False
    classifier = BertClassifier(_encoder(), num_classes=3)
    classifier.compile()
    assert classifier.jit_compile is False
    if XLA:
        assert resolve_jit_compile(True) is True
    monkeypatch.setenv(JIT_COMPILE_VARIABLE, "1")
    assert resolve_jit_compile("auto") is XLA
    monkeypatch.setenv(JIT_COMPILE_VARIABLE, "maybe")
    with pytest.raises(ValueError, match=f"{JIT_COMPILE_VARIABLE}='maybe': expected 0 or 1"):
        resolve_jit_compile("auto")


def test_auto_is_left_to_keras_under_a_multi_replica_tensorflow_strategy():
    """XLA on CPU cannot compile MirroredStrategy's collectives (tests/training/test_distribution.py runs the real thing)."""

    class Strategy:
        def __init__(self, replicas):
            self.num_replicas_in_sync = replicas

    class Model:
        def __init__(self, replicas):
            self.distribute_strategy = Strategy(replicas)

    if keras.config.backend() == "tensorflow":
        assert resolve_jit_compile("auto", Model(2)) == "auto"
        assert resolve_jit_compile("auto", Model(1)) is True
        assert resolve_jit_compile(False, Model(2)) is False
    else:  # keras.distribution on JAX compiles as usual; torch has no XLA
        assert resolve_jit_compile("auto", Model(2)) is XLA


@pytest.mark.skipif(
    keras.config.backend() != "tensorflow",
    reason="only TensorFlow changes: Keras' 'auto' already compiles JAX with XLA, and torch has none",
)
def test_training_steps_with_and_without_xla_agree():
    x, y, weights = _batch()
    keras.utils.set_random_seed(1)
    reference = BertPretrainer(_encoder())
    reference(x)
    initial = [np.array(keras.ops.convert_to_numpy(v)) for v in reference.weights]
    results = {}
    for jit in (False, True):
        model = BertPretrainer(_encoder())
        model(x)
        for variable, value in zip(model.weights, initial):
            variable.assign(value)
        model.compile(optimizer=create_optimizer(1e-2, total_steps=10, warmup_steps=0), jit_compile=jit)
        assert model.jit_compile is jit
        losses = [model.train_on_batch(x, y, weights, return_dict=True)["loss"] for _ in range(3)]
        results[jit] = losses, [keras.ops.convert_to_numpy(v) for v in model.weights]
    np.testing.assert_allclose(results[True][0], results[False][0], rtol=1e-5, atol=1e-5)
    assert results[True][0][0] > results[True][0][-1]  # it trained
    for with_xla, without in zip(results[True][1], results[False][1]):
        np.testing.assert_allclose(with_xla, without, rtol=1e-4, atol=1e-5)
