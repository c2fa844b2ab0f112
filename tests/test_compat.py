"""`keras_bert_app.compat`: each workaround's upstream bug is still there (else these fail: delete the entry),
ours works around it, and a Keras version an entry does not know gets a warning naming it."""

import json
import os
import socket
import subprocess
import sys
import warnings

import keras
import numpy as np
import pytest

from keras_bert_app import compat, versions
from tests.conftest import REPO_ROOT

TENSORFLOW_ONLY = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="tf.distribute is TensorFlow's")

# A stock Keras model with a boolean input (as our `padding_mask`) and one of ours, `fit` under a 2-replica
# MirroredStrategy on 2 logical CPUs: "stock" fails in Keras' build before `fit` (keras-team/keras#20585).
# "ours_distributed": ours on a dataset the caller distributed (`experimental_distribute_dataset`), whose spec is
# per replica, not a batch's: the model is built from its first batch's local values.
MIRRORED_BUILD = """
import json, sys
import numpy as np, tensorflow as tf
tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
from keras_bert_app.compat import DistributionWorkarounds

class Ours(DistributionWorkarounds, keras.Model):
    pass

def build(model_class):
    tokens = keras.Input((4,), dtype="float32", name="tokens")
    mask = keras.Input((4,), dtype="bool", name="mask")
    outputs = keras.layers.Dense(1)(tokens * keras.ops.cast(mask, "float32"))
    return model_class({"tokens": tokens, "mask": mask}, outputs)

data = tf.data.Dataset.from_tensor_slices(
    ({"tokens": np.ones((8, 4), "float32"), "mask": np.ones((8, 4), bool)}, np.ones((8, 1), "float32"))).batch(4)
results = {}
for name, model_class in (("stock", keras.Model), ("ours", Ours), ("ours_distributed", Ours)):
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = build(model_class)
        model.compile(optimizer="sgd", loss="mse")
    try:
        history = model.fit(strategy.experimental_distribute_dataset(data) if name == "ours_distributed" else data,
                            epochs=1, verbose=0)
        results[name] = "ok" if np.isfinite(history.history["loss"][-1]) else "loss not finite"
    except Exception as error:
        results[name] = f"{type(error).__name__}: {str(error)[:300]}"
print(json.dumps(results))
"""


@TENSORFLOW_ONLY
def test_build_from_element_spec_is_still_needed_and_works():
    result = subprocess.run([sys.executable, "-c", MIRRORED_BUILD], capture_output=True, text=True, timeout=600,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["ours"] == "ok" and outcome["ours_distributed"] == "ok", outcome
    assert outcome["stock"] != "ok", (
        "Keras now builds a model with a boolean input under MirroredStrategy: keras-team/keras#20585 is fixed, "
        "delete compat's 'build_from_element_spec' entry."
    )


# Two local workers fit a stock Keras model (fails in Keras' scalar-log reduce) and one with our mixin.
MULTI_WORKER = """
import json, sys
import numpy as np, tensorflow as tf
import keras
from keras_bert_app.compat import DistributionWorkarounds

class Ours(DistributionWorkarounds, keras.Model):
    pass

strategy = tf.distribute.MultiWorkerMirroredStrategy()
results = {}
for name, model_class in (("stock", keras.Model), ("ours", Ours)):
    with strategy.scope():
        inputs = keras.Input((4,))
        model = model_class(inputs, keras.layers.Dense(1)(inputs))
        model.compile(optimizer="sgd", loss="mse")
    data = tf.data.Dataset.from_tensor_slices((np.ones((16, 4), "float32"), np.ones((16, 1), "float32"))).batch(4)
    try:
        model.fit(data, epochs=1, verbose=0)
        results[name] = "ok"
    except Exception as error:
        results[name] = f"{type(error).__name__}: {str(error)[:300]}"
with open(sys.argv[1], "w") as file:
    json.dump(results, file)
"""


@TENSORFLOW_ONLY
@pytest.mark.large
def test_multi_worker_scalar_logs_is_still_needed_and_works(tmp_path):
    ports = []
    for _ in range(2):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
    processes = []
    for index in range(2):
        config = {"cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]}, "task": {"type": "worker", "index": index}}
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TF_CPP_MIN_LOG_LEVEL": "3", "TF_CONFIG": json.dumps(config)}
        processes.append(subprocess.Popen([sys.executable, "-c", MULTI_WORKER, str(tmp_path / f"{index}.json")],
                                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for process in processes:
        log, _ = process.communicate(timeout=600)
        assert process.returncode == 0, log[-3000:]
    outcome = json.loads((tmp_path / "0.json").read_text())
    assert outcome["ours"] == "ok", outcome
    assert outcome["stock"] != "ok", (
        "Keras now fits under MultiWorkerMirroredStrategy: keras-team/keras#20329 is fixed, delete compat's "
        "'multi_worker_scalar_logs' entry."
    )


def test_an_unknown_keras_version_warns_once_naming_the_entry(monkeypatch):
    monkeypatch.setattr(compat, "_WARNED", set())
    assert compat.check_version("build_from_element_spec")  # the installed Keras is one it knows
    monkeypatch.setattr(keras, "__version__", "9.1.0")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert not compat.check_version("build_from_element_spec")
        assert not compat.check_version("build_from_element_spec")
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "'build_from_element_spec'" in message and "keras-team/keras/issues/20585" in message and "9.1.0" in message


def _fit_dict_outputs(model_class):
    """A model with outputs {"b": ..., "a": ...} from layers named otherwise, compiled with losses and (weighted)
    metrics keyed by the dict's keys: its one epoch's logs, or the error."""
    keras.utils.set_random_seed(0)
    inputs = keras.Input((3,), name="features")
    outputs = {"b": keras.layers.Dense(2, name="dense_b")(inputs), "a": keras.layers.Dense(1, name="dense_a")(inputs)}
    model = model_class(inputs=inputs, outputs=outputs)
    x = np.arange(24, dtype="float32").reshape(8, 3) / 24
    y = {"a": np.zeros((8, 1), "float32"), "b": np.full((8, 2), 10.0, "float32")}
    try:
        model.compile(optimizer="sgd", loss={"a": "mse", "b": "mse"},
                      metrics={"a": [keras.metrics.MeanAbsoluteError(name="error")]},
                      weighted_metrics={"b": [keras.metrics.MeanAbsoluteError(name="error")]})
        logs = model.evaluate(x, y, return_dict=True, verbose=0)
    except ValueError as error:
        return f"ValueError: {str(error)[:300]}"
    predictions = model.predict(x, verbose=0)
    expected = {"a_error": np.abs(predictions["a"]).mean(), "b_error": np.abs(predictions["b"] - 10.0).mean()}
    return logs, expected


def test_dict_output_names_is_needed_at_the_floor_and_changes_nothing_above():
    class Ours(compat.DictOutputNames, keras.Model):
        pass

    ours = _fit_dict_outputs(Ours)
    assert not isinstance(ours, str), ours
    logs, expected = ours
    assert sorted(logs) == ["a_error", "a_loss", "b_error", "b_loss", "loss"], logs
    for name, value in expected.items():  # each metric on its own output
        np.testing.assert_allclose(logs[name], value, rtol=1e-5)
    stock = _fit_dict_outputs(keras.Model)
    if keras.__version__ == versions.FLOORS["keras"]:  # CI's floor job
        assert isinstance(stock, str) and "does not correspond to any model output" in stock, (
            f"Keras {keras.__version__}, the floor, compiles metrics keyed by a dict of outputs: "
            "keras-team/keras#21675 is fixed there, delete compat's 'dict_output_names' entry."
        )
    if not isinstance(stock, str):  # a Keras with the fix: ours logs the same
        assert stock[0].keys() == logs.keys()
        for name in logs:
            np.testing.assert_allclose(stock[0][name], logs[name], rtol=1e-6)
