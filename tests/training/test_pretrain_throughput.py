"""Throughput/MFU accounting and atomic checkpoints, without a training run."""

import keras
import numpy as np
import pytest

from keras_bert_app.training.checkpointing import ResumableCheckpoint, list_checkpoints, restore_latest
from keras_bert_app.training.throughput import ThroughputCallback, bert_training_flops, peak_flops


def test_training_flops_match_a_hand_count_for_bert_base():
    layers, hidden, intermediate, vocabulary, length, predictions = 12, 768, 3072, 30522, 128, 20
    # Per token and layer: q, k, v, output projections (4 matmuls of HxH, 2 FLOP per MAC),
    # two feed-forward matmuls HxI, scores QK^T and the weighted sum (2 x S x H each).
    per_layer_token = 4 * 2 * hidden * hidden + 2 * 2 * hidden * intermediate + 2 * 2 * length * hidden
    head = 2 * hidden * hidden + 2 * hidden * vocabulary
    forward = length * layers * per_layer_token + predictions * head
    assert bert_training_flops(layers, hidden, intermediate, vocabulary, length, predictions) == 3 * forward


def test_peak_flops_known_devices_and_cpu():
    assert peak_flops("NVIDIA A100-SXM4-40GB", num_devices=2) == 2 * 312e12
    assert peak_flops("TPU v4") == 275e12
    assert peak_flops("cpu") > 1e9
    assert peak_flops("Some Unknown Accelerator") is None


@pytest.mark.all_backends
def test_the_device_is_detected_on_every_backend():
    # `pretrain` without --peak-tflops detects the device (Keras 3.15 has no list_devices on torch).
    detected = peak_flops()
    assert detected is None or detected > 1e9


def test_throughput_callback_adds_tokens_per_second_and_mfu():
    callback = ThroughputCallback(batch_size=4, sequence_length=8, flops_per_sequence=1e6, peak_flops=1e9, print_fn=None)
    callback.on_epoch_begin(0)
    for batch in range(3):
        callback.on_train_batch_end(batch)
    logs = {}
    callback.on_epoch_end(0, logs)
    assert logs["tokens_per_second"] > 0
    np.testing.assert_allclose(logs["mfu"], logs["tokens_per_second"] / 8 * 1e6 / 1e9)


def _model():
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    model.compile(optimizer="adam", loss="mse")
    return model


def test_checkpoints_hold_weights_and_optimizer_state_and_keep_the_newest(tmp_path):
    model = _model()
    x, y = np.ones((4, 3), "float32"), np.zeros((4, 2), "float32")
    callback = ResumableCheckpoint(tmp_path, steps_per_epoch=2, keep=2)
    model.fit(x, y, batch_size=2, epochs=3, callbacks=[callback], verbose=0)
    assert [step for step, _ in list_checkpoints(tmp_path)] == [4, 6]
    assert not list(tmp_path.glob("*.tmp*"))
    restored = _model()
    restored.build((None, 3))
    assert restore_latest(restored, tmp_path) == 6
    assert int(keras.ops.convert_to_numpy(restored.optimizer.iterations)) == 6
    for got, expected in zip(restored.weights, model.weights):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(got), keras.ops.convert_to_numpy(expected))
