"""Layer-wise learning-rate decay: per-layer rates against a NumPy AdamW, with clipping and accumulation; `finetune --layerwise-lr-decay`."""

import json

import keras
import numpy as np
import pytest
from keras import ops

import keras_bert_app as kba
from keras_bert_app import cli, errors
from keras_bert_app.models.layerwise_lr_decay import LayerwiseDecayAdamW, layerwise_multipliers, with_layerwise_lr_decay
from keras_bert_app.models.optimizer import NO_DECAY_NAMES, FusedAdamW, create_optimizer

pytestmark = pytest.mark.all_backends

TINY = dict(vocabulary_size=30, num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16, max_sequence_length=16)


def test_multipliers_follow_the_depth():
    classifier = kba.BertClassifier(kba.BertEncoder(**TINY, embedding_dim=4), num_classes=3)
    factors = layerwise_multipliers(classifier, 0.5)
    encoder = classifier.encoder
    # L = 2: embeddings (and their projection) 0.5^3, layer 0: 0.5^2, layer 1: 0.5^1, pooler and head: full rate.
    for variable in encoder.embeddings.weights + encoder.embedding_projection.weights:
        assert factors[id(variable)] == 0.125, variable.path
    for index, expected in ((0, 0.25), (1, 0.5)):
        for variable in encoder.transformer_layers[index].weights:
            assert factors[id(variable)] == expected, variable.path
    encoder_ids = {id(v) for v in encoder.weights}
    heads = [v for v in classifier.trainable_variables if id(v) not in encoder_ids] + encoder.pooler.weights
    assert heads and all(id(v) not in factors for v in heads)
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
    optimizer = LayerwiseDecayAdamW(
        multipliers={id(v): f for v, f in zip(variables, factors)}, learning_rate=0.1, weight_decay=0.1,
        epsilon=1e-6, global_clipnorm=1.0, gradient_accumulation_steps=accumulation if accumulation > 1 else None,
    )
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_NAMES))
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
    # Our AdamW (`create_optimizer`'s): on TensorFlow the same fused kernel, so equal to float rounding.
    reference = FusedAdamW(learning_rate=0.05, weight_decay=0.01, global_clipnorm=1.0)
    ours = LayerwiseDecayAdamW(multipliers={id(decayed): 1.0}, learning_rate=0.05, weight_decay=0.01, global_clipnorm=1.0)
    for gradient in gradients:
        reference.apply([ops.convert_to_tensor(gradient)], [plain])
        ours.apply([ops.convert_to_tensor(gradient)], [decayed])
    np.testing.assert_allclose(ops.convert_to_numpy(decayed), ops.convert_to_numpy(plain), rtol=1e-6, atol=1e-7)


def test_compile_keeps_the_schedule_clipping_and_exclusions():
    classifier = kba.BertClassifier(kba.BertEncoder(**TINY), num_classes=2)
    classifier.compile(learning_rate=1e-3, total_steps=10, layerwise_lr_decay=0.8, jit_compile=False)
    optimizer = classifier.optimizer
    assert isinstance(optimizer, LayerwiseDecayAdamW)
    assert isinstance(optimizer._learning_rate, keras.optimizers.schedules.LearningRateSchedule)
    assert optimizer.global_clipnorm == 1.0 and optimizer.weight_decay == 0.01
    optimizer.build(classifier.trainable_variables)
    assert optimizer._factors.count(0.8**3) == len(classifier.encoder.embeddings.trainable_weights)
    assert optimizer._factors.count(1.0) == len(classifier.trainable_variables) - len(layerwise_multipliers(classifier, 0.8))
    # LayerNorm and bias variables are not decayed (as in AdamW), kernels are.
    decayed = {v.path: flag for flag, v in zip(optimizer._decays, optimizer._trainable_variables)}
    assert not any(flag for path, flag in decayed.items() if path.endswith(("gamma", "beta", "bias")))
    assert decayed["transformer_layer_0/intermediate/kernel"]
    with pytest.raises(errors.ArgumentError, match="works with AdamW"):
        with_layerwise_lr_decay(keras.optimizers.SGD(), classifier, 0.8)
    lamb = create_optimizer(1e-3, 10, 1, name="lamb")
    with pytest.raises(errors.ArgumentError, match="got Lamb"):
        with_layerwise_lr_decay(lamb, classifier, 0.8)


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
        "--layerwise-lr-decay", "0.8", "--no-jit-compile",
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
