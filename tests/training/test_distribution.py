"""Real distributed `fit` on CPU: each strategy gives the single-device result.

Every distributed run happens in a fresh subprocess (this file run as a
script), so the backend and the device setup (logical CPUs, XLA host devices,
TF_CONFIG) stay isolated; TensorFlow's one-device reference runs in the test's
own process where that is TensorFlow. Each run trains the tiny pretrainer (dropout 0, same seed) for a
few steps on the same global batches and reports its losses and final
weights; the distributed runs must match the single-device run.
"""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import REPO_ROOT

GLOBAL_BATCH = 8
NUM_BATCHES = 3
EPOCHS = 2


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run_workers(mode, backend, tmp_path, num_workers=1, extra_env=None):
    """Start `num_workers` worker processes; return the result of worker 0."""
    env = {
        **os.environ,
        "KERAS_BACKEND": backend,
        "PYTHONPATH": str(REPO_ROOT),
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "CUDA_VISIBLE_DEVICES": "",
        **(extra_env or {}),
    }
    ports = [_free_port() for _ in range(num_workers)]
    processes = []
    for index in range(num_workers):
        worker_env = dict(env)
        if mode == "multi_worker":
            worker_env["TF_CONFIG"] = json.dumps(
                {
                    "cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]},
                    "task": {"type": "worker", "index": index},
                }
            )
        output = tmp_path / f"{mode}_{index}.json"
        processes.append(
            (
                subprocess.Popen(
                    [sys.executable, __file__, mode, str(output)],
                    env=worker_env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                ),
                output,
            )
        )
    for process, _ in processes:
        log, _ = process.communicate(timeout=600)
        assert process.returncode == 0, log[-4000:]
    return json.loads(processes[0][1].read_text())


@pytest.fixture(scope="module")
def single_tf(tmp_path_factory):
    """The one-device reference: in this process where it runs TensorFlow (a one-device run sets nothing up)."""
    import keras

    output = tmp_path_factory.mktemp("single_tf") / "single_0.json"
    if keras.config.backend() != "tensorflow":
        return _run_workers("single", "tensorflow", output.parent)
    _worker("single", output)
    return json.loads(output.read_text())


def _assert_same_training(result, reference):
    np.testing.assert_allclose(result["losses"], reference["losses"], rtol=1e-4, atol=1e-5)
    for got, expected in zip(result["weights"], reference["weights"]):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


# Not `large`: CI runs this one, the cheapest real multi-replica run, so a
# change to how models compile (e.g. XLA on CPU) cannot break tf.distribute unseen.
def test_mirrored_over_two_cpus_matches_single_device(single_tf, tmp_path):
    result = _run_workers("mirrored", "tensorflow", tmp_path)
    assert result["num_replicas"] == 2
    _assert_same_training(result, single_tf)


@pytest.mark.large
def test_multi_worker_mirrored_two_local_workers_matches_single_device(single_tf, tmp_path):
    result = _run_workers("multi_worker", "tensorflow", tmp_path, num_workers=2)
    assert result["num_replicas"] == 2
    _assert_same_training(result, single_tf)


@pytest.mark.large
@pytest.mark.parametrize("mode", ["data_parallel", "model_parallel"])
def test_jax_distribution_over_two_host_devices_matches_single_device(mode, tmp_path):
    pytest.importorskip("jax")
    # Two host "devices" are two threads that meet at every all-reduce; XLA aborts the process when one
    # waits 40 s for the other, which a starved 2-core machine (the three backends' large suites at once)
    # once made happen. Ten minutes: a real hang still fails, a slow machine no longer does.
    flags = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2 --xla_cpu_collective_timeout_seconds=600 "
                          "--xla_cpu_collective_call_terminate_timeout_seconds=600"}
    reference = _run_workers("single", "jax", tmp_path, extra_env=flags)
    result = _run_workers(mode, "jax", tmp_path, extra_env=flags)
    if mode == "data_parallel":
        assert result["num_replicas"] == 2
    else:  # a (batch 1, model 2) mesh: the weights are split, the batch is not
        assert result["num_replicas"] == 1 and result["sharded_variables"] > 0
    _assert_same_training(result, reference)


def test_unknown_strategy_and_wrong_backend_are_clear_errors():
    from keras_bert_app.training.distribution import create_distribution

    with pytest.raises(ValueError, match="Unknown strategy 'gpu'"):
        create_distribution("gpu")
    import keras

    wrong = "data_parallel" if keras.backend.backend() != "jax" else "mirrored"
    with pytest.raises(ValueError, match="KERAS_BACKEND"):
        create_distribution(wrong)


def test_batch_size_not_divisible_by_replicas_is_a_clear_error():
    from keras_bert_app.training.distribution import TrainingDistribution

    distribution = TrainingDistribution("mirrored", num_replicas=2)
    assert distribution.per_replica_batch_size(8) == 4
    with pytest.raises(ValueError, match="not divisible by the 2 replicas"):
        distribution.per_replica_batch_size(7)


def test_asking_for_a_tpu_without_one_is_one_clear_error(backend):
    if backend != "tensorflow":
        pytest.skip("tf.distribute strategies need the TensorFlow backend")
    from keras_bert_app.training.distribution import create_distribution

    with pytest.raises(ValueError, match="No TPU found at 'grpc://127.0.0.1:1'"):
        create_distribution("tpu", tpu_address="grpc://127.0.0.1:1")
    with pytest.raises(ValueError, match="No TPU found on this machine"):
        create_distribution("tpu")


# --- worker (this file run as a script) ---


def _synthetic_batches():
    """Tiny pretraining batches; every example has 3 real predictions of 4."""
    rng = np.random.default_rng(7)
    count, length, predictions = GLOBAL_BATCH * NUM_BATCHES, 12, 4
    x = {
        "token_ids": rng.integers(1, 100, (count, length)).astype("int32"),
        "segment_ids": (np.arange(length) >= length // 2).astype("int32")[None].repeat(count, 0),
        "padding_mask": np.ones((count, length), "int32"),
        "mask_positions": np.stack([rng.permutation(length)[:predictions] for _ in range(count)]).astype("int32"),
    }
    y = {
        "mlm": rng.integers(0, 100, (count, predictions)).astype("int32"),
        "nsp": rng.integers(0, 2, (count,)).astype("int32"),
    }
    weights = np.ones((count, predictions), "float32")
    weights[:, -1] = 0.0
    return x, y, {"mlm": weights}


def _worker(mode, output):
    if mode == "mirrored":
        import tensorflow as tf

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    import tensorflow as tf

    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.models.bert_pretrainer import BertPretrainer
    from keras_bert_app.training.distribution import TrainingDistribution, create_distribution

    distribution = TrainingDistribution("single") if mode == "single" else create_distribution(mode)
    keras.utils.set_random_seed(1)
    with distribution.scope():
        encoder = BertEncoder(
            vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16,
            intermediate_dim=32, max_sequence_length=64, dropout=0.0,
        )
        pretrainer = BertPretrainer(encoder)
        # Plain SGD: its update is linear in the gradient, so a different
        # summation order across replicas stays at float rounding (Adam's
        # m / sqrt(v) would amplify it for near-zero gradients).
        pretrainer.compile(optimizer=keras.optimizers.SGD(0.5))
    distribution.per_replica_batch_size(GLOBAL_BATCH)
    dataset = tf.data.Dataset.from_tensor_slices(_synthetic_batches()).batch(GLOBAL_BATCH)
    history = pretrainer.fit(dataset, epochs=EPOCHS, shuffle=False, verbose=0)
    result = {
        "num_replicas": distribution.num_replicas,
        "losses": [history.history[key][-1] for key in ("loss", "mlm_loss", "nsp_loss")]
        + history.history["loss"],
        "weights": [np.asarray(keras.ops.convert_to_numpy(w)).ravel()[:64].tolist() for w in pretrainer.weights],
    }
    if mode == "model_parallel":
        result["sharded_variables"] = sum(
            not variable.value.sharding.is_fully_replicated for variable in pretrainer.weights
        )
    with open(output, "w") as file:
        json.dump(result, file)


if __name__ == "__main__":
    sys.path.insert(0, str(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    _worker(sys.argv[1], sys.argv[2])
