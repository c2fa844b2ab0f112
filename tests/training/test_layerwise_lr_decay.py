"""Layer-wise learning-rate decay: per-layer rates against a NumPy AdamW, with clipping and accumulation; `finetune --layerwise-lr-decay`."""

import json

import keras
import numpy as np
import pytest
from keras import ops

import keras_bert_app as kba
from keras_bert_app import cli, errors
from keras_bert_app.models.layerwise_lr_decay import layerwise_multipliers, with_layerwise_lr_decay
from keras_bert_app.models.optimizer import NO_DECAY_NAMES, BertAdamW, create_optimizer

pytestmark = pytest.mark.all_backends

TINY = dict(vocabulary_size=30, num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16, max_sequence_length=16)


def electra_layer_lrs(learning_rate, layer_decay, n_layers):
    """A NumPy-free port of google-research/electra's `optimization._get_layer_lrs`: {variable-name key: rate}."""
    key_to_depths = {"/embeddings/": 0, "/embeddings_project/": 0, "task_specific/": n_layers + 2}
    for layer in range(n_layers):
        key_to_depths[f"encoder/layer_{layer}/"] = layer + 1
    return {key: learning_rate * layer_decay ** (n_layers + 2 - depth) for key, depth in key_to_depths.items()}


@pytest.mark.parametrize("num_layers", [1, 2, 4])
def test_multipliers_equal_electras_layer_rates(num_layers):
    decay = 0.8
    classifier = kba.BertClassifier(kba.BertEncoder(**{**TINY, "num_layers": num_layers}, embedding_dim=4), num_classes=3)
    factors = layerwise_multipliers(classifier, decay)
    reference = electra_layer_lrs(1.0, decay, num_layers)
    encoder = classifier.encoder
    for variable in encoder.embeddings.trainable_weights:
        assert factors[variable.path] == pytest.approx(reference["/embeddings/"]), variable.path
    for variable in encoder.embedding_projection.trainable_weights:
        assert factors[variable.path] == pytest.approx(reference["/embeddings_project/"]), variable.path
    for index in range(num_layers):
        for variable in encoder.transformer_layers[index].trainable_weights:
            assert factors[variable.path] == pytest.approx(reference[f"encoder/layer_{index}/"]), variable.path
    # The pooler and the head: no key of the reference matches them (full rate), as `task_specific/` gets.
    encoder_paths = {v.path for v in encoder.weights}
    heads = [v for v in classifier.trainable_variables if v.path not in encoder_paths] + encoder.pooler.weights
    assert heads and all(v.path not in factors for v in heads) and reference["task_specific/"] == 1.0
    with pytest.raises(errors.ArgumentError, match="layerwise_lr_decay"):
        layerwise_multipliers(classifier, 1.5)


def _reference_adamw(values, gradient_steps, factors, decays, lr, weight_decay, clipnorm, accumulation,
                     beta_1=0.9, beta_2=0.999, epsilon=1e-6):
    """Keras' AdamW step (decoupled decay, then Adam with epsilon hat), each variable at `lr * factor`."""
    values = [v.astype("float64") for v in values]
    m = [np.zeros_like(v) for v in values]
    s = [np.zeros_like(v) for v in values]
    step = 0
    for start in range(0, len(gradient_steps), accumulation):
        grads = [np.mean([g[i] for g in gradient_steps[start:start + accumulation]], axis=0) for i in range(len(values))]
        norm = np.sqrt(sum(np.sum(g**2) for g in grads))
        grads = [g * min(1.0, clipnorm / norm) for g in grads]
        step += 1
        for i, g in enumerate(grads):
            rate = lr * factors[i]
            if decays[i]:
                values[i] = values[i] - values[i] * weight_decay * rate
            m[i] = beta_1 * m[i] + (1 - beta_1) * g
            s[i] = beta_2 * s[i] + (1 - beta_2) * g**2
            alpha = rate * np.sqrt(1 - beta_2**step) / (1 - beta_1**step)
            values[i] = values[i] - alpha * m[i] / (np.sqrt(s[i]) + epsilon)
    return values


@pytest.mark.parametrize("accumulation", [1, 2])
def test_updates_match_a_per_variable_adamw(accumulation):
    rng = np.random.default_rng(0)
    shapes = {"kernel": (3, 4), "bias": (4,), "gamma": (4,)}
    initial = [rng.normal(size=shape).astype("float32") for shape in shapes.values()]
    variables = [keras.Variable(value, name=name) for name, value in zip(shapes, initial)]
    factors = [0.25, 0.5, 1.0]
    decays = [True, False, False]  # bias and LayerNorm gamma: no weight decay
    optimizer = BertAdamW(
        learning_rate_multipliers={v.path: f for v, f in zip(variables, factors)}, learning_rate=0.1,
        weight_decay=0.1, no_decay_names=NO_DECAY_NAMES, epsilon=1e-6, global_clipnorm=1.0,
        gradient_accumulation_steps=accumulation if accumulation > 1 else None,
    )
    gradient_steps = [[rng.normal(size=shape).astype("float32") for shape in shapes.values()] for _ in range(4)]
    for gradients in gradient_steps:
        optimizer.apply([ops.convert_to_tensor(g) for g in gradients], variables)
    expected = _reference_adamw(initial, gradient_steps, factors, decays, 0.1, 0.1, 1.0, accumulation)
    for variable, value in zip(variables, expected):
        np.testing.assert_allclose(ops.convert_to_numpy(variable), value, rtol=1e-4, atol=1e-6, err_msg=variable.name)


def test_decay_one_is_plain_adamw():
    rng = np.random.default_rng(1)
    initial = rng.normal(size=(5, 3)).astype("float32")
    gradients = [rng.normal(size=(5, 3)).astype("float32") for _ in range(3)]
    plain, decayed = keras.Variable(initial, name="kernel"), keras.Variable(initial, name="kernel")
    # Keras' own AdamW: the same update, and the same decay (a factor of 1 changes nothing).
    reference = keras.optimizers.AdamW(learning_rate=0.05, weight_decay=0.01, global_clipnorm=1.0)
    ours = BertAdamW(learning_rate_multipliers={decayed.path: 1.0}, learning_rate=0.05, weight_decay=0.01,
                     global_clipnorm=1.0)
    for gradient in gradients:
        reference.apply([ops.convert_to_tensor(gradient)], [plain])
        ours.apply([ops.convert_to_tensor(gradient)], [decayed])
    # Float32 rounding apart: on TensorFlow ours runs TensorFlow's Adam kernel, which rounds differently from
    # Keras' ops (nearer a float64 computation than they are, 2e-7 against 1e-6 here).
    np.testing.assert_allclose(ops.convert_to_numpy(decayed), ops.convert_to_numpy(plain), rtol=1e-5, atol=1e-6)


def test_compile_keeps_the_schedule_clipping_and_exclusions():
    classifier = kba.BertClassifier(kba.BertEncoder(**TINY), num_classes=2)
    classifier.compile(learning_rate=1e-3, total_steps=10, layerwise_lr_decay=0.8, jit_compile=False)
    optimizer = classifier.optimizer
    assert isinstance(optimizer, BertAdamW)
    config = optimizer.get_config()
    assert config["learning_rate"]["class_name"] == "WarmupLinearDecay"
    assert optimizer.global_clipnorm == 1.0 and optimizer.decoupled_weight_decay == 0.01
    assert config["learning_rate_multipliers"] == layerwise_multipliers(classifier, 0.8)
    # Zero gradients: only the decoupled decay moves a variable, at the rate of its layer; LayerNorm and biases stay.
    before = {v.path: np.array(ops.convert_to_numpy(v)) for v in classifier.trainable_variables}
    optimizer.apply([ops.zeros(tuple(v.shape)) for v in classifier.trainable_variables], classifier.trainable_variables)
    for variable in classifier.trainable_variables:
        if variable.name in ("gamma", "beta", "bias"):
            np.testing.assert_array_equal(ops.convert_to_numpy(variable), before[variable.path])
    with pytest.raises(errors.ArgumentError, match="works with AdamW"):
        with_layerwise_lr_decay(keras.optimizers.SGD(), classifier, 0.8)
    lamb = create_optimizer(1e-3, 10, 1, name="lamb")
    with pytest.raises(errors.ArgumentError, match="got Lamb"):
        with_layerwise_lr_decay(lamb, classifier, 0.8)


def test_layer_rates_reach_the_weight_decay():
    """ELECTRA decays each variable with its layer's own rate: zero gradients, so only the decay moves a kernel."""
    classifier = kba.BertClassifier(kba.BertEncoder(**TINY), num_classes=2)
    optimizer = with_layerwise_lr_decay(BertAdamW(learning_rate=0.1, weight_decay=0.5), classifier, 0.5)
    before = {v.path: np.array(ops.convert_to_numpy(v)) for v in classifier.trainable_variables}
    optimizer.apply([ops.zeros(tuple(v.shape)) for v in classifier.trainable_variables], classifier.trainable_variables)
    factors = layerwise_multipliers(classifier, 0.5)
    for variable in classifier.trainable_variables:
        if variable.name != "kernel" or not np.any(before[variable.path]):
            continue
        expected = before[variable.path] * (1 - 0.5 * 0.1 * factors.get(variable.path, 1.0))
        np.testing.assert_allclose(ops.convert_to_numpy(variable), expected, rtol=1e-6, err_msg=variable.path)


@pytest.mark.large
def test_finetune_command_line_option(tmp_path, shared_data, capsys):
    """`keras-bert-app finetune classify ... --layerwise-lr-decay 0.8` trains and says so."""
    from tests.tasks.tiny_presets import write_tiny_preset

    preset = write_tiny_preset(tmp_path / "P", shared_data / "vocab" / "bert_uncased_vocab.txt", max_sequence_length=32)
    rows = ["text,label"] + [f"{'good fine great' if i % 2 else 'bad awful poor'} movie {i},{'pos' if i % 2 else 'neg'}"
                             for i in range(8)]
    (tmp_path / "train.csv").write_text("\n".join(rows) + "\n")
    code = cli.main([
        "finetune", "classify", "--train", str(tmp_path / "train.csv"), "--dev", str(tmp_path / "train.csv"),
        "--text-column", "text", "--label-column", "label", "--preset", str(preset), "--output",
        str(tmp_path / "run"), "--epochs", "1", "--batch-size", "4", "--sequence-length", "16",
        "--layerwise-lr-decay", "0.8", "--jit-compile", "false",
    ])
    out = capsys.readouterr().out
    assert code == 0
    assert "layer-wise decay 0.8" in out
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["dev"]
    code = cli.main(["finetune", "classify", "--train", str(tmp_path / "train.csv"), "--dev", str(tmp_path / "train.csv"),
                     "--text-column", "text", "--label-column", "label", "--preset", str(preset), "--output",
                     str(tmp_path / "run2"), "--layerwise-lr-decay", "0"])
    assert code == 2
    assert "layerwise_lr_decay must be > 0" in capsys.readouterr().err
