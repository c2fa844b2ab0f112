"""`jit_compile` with Keras' meaning, one flag on the commands; XLA gives the same numbers as without it."""

import keras
import numpy as np
import pytest

from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_pretrainer import BertPretrainer
from keras_bert_app.training.optimizer import create_optimizer
from keras_bert_app.models.xla import has_accelerator
from keras_bert_app.training.xla import parse_jit_compile, resolve_jit_compile

pytestmark = pytest.mark.all_backends

XLA = keras.config.backend() in ("tensorflow", "jax")


def _encoder(num_layers=2):
    return BertEncoder(
        vocabulary_size=50, num_layers=num_layers, num_heads=2, hidden_dim=16,
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


def test_auto_is_keras_own_choice():
    """"auto" is passed to Keras: XLA on JAX, none on a TensorFlow CPU (no GPU here) nor on PyTorch."""
    assert resolve_jit_compile("auto") == "auto"
    assert resolve_jit_compile(False) is False
    if XLA:
        assert resolve_jit_compile(True) is True
    else:
        with pytest.raises(ValueError, match="TensorFlow or JAX"):
            resolve_jit_compile(True)
    with pytest.raises(ValueError, match="'auto', True or False"):
        resolve_jit_compile("yes")
    classifier = BertClassifier(_encoder(), num_classes=3)
    classifier.compile()
    assert classifier.jit_compile is (keras.config.backend() == "jax" or has_accelerator())


@pytest.mark.parametrize("given, expected", [("auto", "auto"), ("true", True), ("false", False)])
def test_the_commands_flag_gives_kerass_values(given, expected, capsys):
    from keras_bert_app.commands.main import build_parser
    from keras_bert_app.commands.options import jit_compile_value

    import argparse

    from keras_bert_app.commands.options import add_jit_compile_argument

    parser = argparse.ArgumentParser()
    add_jit_compile_argument(parser)
    assert jit_compile_value(parser.parse_args(["--jit-compile", given])) == expected
    assert jit_compile_value(parser.parse_args([])) == "auto"
    for command in (["pretrain"], ["finetune", "classify"]):  # the commands carry it
        with pytest.raises(SystemExit):
            build_parser().parse_args([*command, "--help"])
        assert "--jit-compile {auto,true,false}" in capsys.readouterr().out
    assert parse_jit_compile(given) == expected


@pytest.mark.skipif(
    keras.config.backend() != "tensorflow",
    reason="only TensorFlow changes: Keras' 'auto' already compiles JAX with XLA, and torch has none",
)
def test_training_steps_with_and_without_xla_agree():
    # One layer: XLA compiles each layer's ops alike, so a second layer adds compile time, not a check.
    x, y, weights = _batch()
    keras.utils.set_random_seed(1)
    reference = BertPretrainer(_encoder(num_layers=1))
    reference(x)
    initial = [np.array(keras.ops.convert_to_numpy(v)) for v in reference.weights]
    results = {}
    for jit in (False, True):
        model = BertPretrainer(_encoder(num_layers=1))
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
