"""`finetune --strategy mirrored` over two logical CPUs: the one-device run's figures, bucket-length batches.

The fine-tunes share one fresh subprocess (this file run as a script): the
logical CPU devices must be set before TensorFlow starts. The one-device runs
(no strategy) run there first. The classifier's head dropout
is set to 0 in the workers (the encoder's is 0 in the micro preset), as
`tf.distribute` draws each replica's dropout masks apart: with it, the runs
could not be compared number for number.
"""

import csv
import json
import os
import random
import subprocess
import sys

import keras
import numpy as np
import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.skipif(
    keras.config.backend() != "tensorflow", reason="tf.distribute strategies are TensorFlow's"
)


def _micro_preset(folder):
    from keras_bert_app import presets
    from keras_bert_app.models.bert_encoder import BertEncoder

    keras.utils.set_random_seed(0)
    BertEncoder(vocabulary_size=100, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16,
                max_sequence_length=64, dropout=0.0).save_to_preset(folder)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(95)]
    (folder / "vocab.txt").write_text("\n".join(tokens) + "\n")
    presets.write_config_entry(folder, "tokenizer", {"vocabulary": "vocab.txt", "lowercase": True})


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A micro preset and texts of 1 to 40 tokens, two labels: 20 or 21 training rows, 9 dev rows."""
    root = tmp_path_factory.mktemp("finetune_distribution")
    _micro_preset(root / "preset")
    rng = random.Random(0)
    rows = [(" ".join(f"tok{rng.randrange(95)}" for _ in range(rng.randrange(1, 40))), rng.choice("ab"))
            for _ in range(30)]
    for name, part in (("train20", rows[:20]), ("train21", rows[:21]), ("dev", rows[21:])):
        with open(root / f"{name}.csv", "w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["text", "label"])
            writer.writerows(part)
    return root


def _argv(data, output, *flags, train="train20"):
    return [
        "finetune", "classify", "--preset", str(data / "preset"), "--output", str(output),
        "--train", str(data / f"{train}.csv"), "--dev", str(data / "dev.csv"), "--text-column", "text",
        "--label-column", "label", "--epochs", "2", "--learning-rate", "1e-3", *flags,
    ]


@pytest.fixture(scope="module")
def two_cpus(data, tmp_path_factory):
    """The fine-tunes, in one fresh subprocess with two logical CPUs (set before TensorFlow starts): on one device
    (20 and 21 rows), `--strategy mirrored` (20 rows), `kba.finetune` in a strategy's scope (21 rows), batch 3
    (refused)."""
    root = tmp_path_factory.mktemp("two_cpus")
    runs = {  # the one-device runs first: no strategy ("auto" takes none on CPUs), so no collectives before
        "one": {"argv": _argv(data, root / "one", "--batch-size", "4"), "in_scope": False},
        "one21": {"argv": _argv(data, root / "one21", "--batch-size", "4", train="train21"), "in_scope": False},
        "two": {"argv": _argv(data, root / "two", "--batch-size", "4", "--strategy", "mirrored"), "in_scope": False},
        "scope": {"argv": _argv(data, root / "scope", "--batch-size", "4", train="train21"), "in_scope": True},
        "odd": {"argv": _argv(data, root / "odd", "--batch-size", "3", "--strategy", "mirrored"), "in_scope": False},
    }
    request = {"runs": runs, "replicas": 2, "result": str(root / "result.json")}
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "PYTHONPATH": str(REPO_ROOT), "TF_CPP_MIN_LOG_LEVEL": "3",
           "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, __file__, json.dumps(request)], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with open(request["result"]) as file:
        result = json.load(file)
    result["folders"] = {name: root / name for name in runs}
    return result


def test_mirrored_over_two_cpus_trains_as_one_device(two_cpus):
    one, two = two_cpus["one"], two_cpus["two"]
    assert one["code"] == 0 and two["code"] == 0, two["log"]
    assert "Distribution: mirrored, 2 replicas, global batch 4 (2 a replica)." in two["log"]
    assert "Distribution:" not in one["log"]
    # Under a strategy every batch is padded to a bucket length (one static shape each), not to its longest example.
    assert "rounded up to 8, 12, 16, 24, 32, 48 or 64 tokens" in two["log"]
    assert "Padding each batch to its longest example, up to 64 tokens" in one["log"]
    # Each global batch split in two, the gradients summed: the same training, epoch by epoch, to float rounding
    # (the same batches in the same order: building the model reads no batch of the reshuffled training set).
    assert len(one["history"]) == len(two["history"]) == 2
    for row_one, row_two in zip(one["history"], two["history"]):
        assert row_one.keys() == row_two.keys()
        for key in row_one:
            np.testing.assert_allclose(float(row_two[key]), float(row_one[key]), atol=1e-5, err_msg=key)
    assert one["predictions"] == two["predictions"]


def test_finetune_in_a_strategy_scope_uses_it_and_logs_the_whole_batch_loss(two_cpus):
    """`kba.finetune` called inside `strategy.scope()`; a last batch of one example (21 rows, batch 4)."""
    one, two = two_cpus["one21"], two_cpus["scope"]
    assert two["code"] == 0, two["log"]
    assert "Distribution: MirroredStrategy, 2 replicas, global batch 4 (2 a replica)." in two["log"]
    # Keras divides each replica's loss by the replicas; the logged dev loss is the whole batch's, as Keras' own
    # evaluation logs it (it was half of it). tf.distribute gives the last batch's one example to one replica,
    # whose loss is still divided by 2: training differs by that one step's gradient, a little.
    assert len(one["history"]) == len(two["history"]) == 2
    for row_one, row_two in zip(one["history"], two["history"]):
        for key in ("loss", "val_loss"):
            np.testing.assert_allclose(float(row_two[key]), float(row_one[key]), atol=2e-4, err_msg=key)


def test_a_batch_the_replicas_cannot_share_evenly_is_refused(two_cpus):
    two = two_cpus["odd"]
    assert two["code"] == 2
    assert "Batch size 3 is not divisible by the 2 replicas of the 'mirrored' strategy: use a multiple of 2." in (
        two["errors"]
    )
    assert not (two_cpus["folders"]["odd"] / "metrics.json").exists()


def test_multi_worker_is_refused_in_one_line(data, tmp_path):
    import keras_bert_app as kba
    from keras_bert_app import errors

    with pytest.raises(errors.ArgumentError, match="Fine-tuning runs on one machine: use 'mirrored'"):
        kba.finetune("classify", data / "preset", tmp_path / "run", train=data / "train20.csv",
                     dev=data / "dev.csv", text_column="text", label_column="label", strategy="multi_worker")
    with pytest.raises(errors.ArgumentError, match="Fine-tuning takes tf.distribute strategies"):
        kba.finetune("classify", data / "preset", tmp_path / "run", train=data / "train20.csv",
                     dev=data / "dev.csv", text_column="text", label_column="label", strategy="data_parallel")
    with pytest.raises(errors.ArgumentError, match="strategy"):
        kba.finetune("classify", data / "preset", tmp_path / "run", train=data / "train20.csv",
                     dev=data / "dev.csv", text_column="text", label_column="label", strategy="mirored")


def test_auto_leaves_a_tf_config_cluster_to_pretraining(monkeypatch):
    """`finetune`'s "auto" is `create_distribution("auto")` less the multi-worker cluster TF_CONFIG names."""
    from keras_bert_app.training.distribution import distribution_in_scope_or

    cluster = {"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}, "task": {"type": "worker", "index": 0}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(cluster))
    for variable in ("TPU_NAME", "COLAB_TPU_ADDR"):
        monkeypatch.delenv(variable, raising=False)
    distribution = distribution_in_scope_or("auto")
    assert (distribution.name, distribution.num_replicas, distribution.strategy) == ("single", 1, None)


def _cli_run(argv, scope=None):
    """`cli.main(argv)` (in `scope`): exit code, log, errors, history rows and dev predictions."""
    import contextlib
    import io

    from keras_bert_app import cli

    out, err = io.StringIO(), io.StringIO()
    with scope or contextlib.nullcontext(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    output = argv[argv.index("--output") + 1]
    result = {"code": code, "log": out.getvalue(), "errors": err.getvalue(), "history": [], "predictions": []}
    if code == 0:
        with open(os.path.join(output, "logs", "history.csv")) as file:
            result["history"] = list(csv.DictReader(file))
        with open(os.path.join(output, "dev_predictions.jsonl")) as file:
            result["predictions"] = [json.loads(line) for line in file]
    return result


def _worker(request):
    """Set the logical CPUs, then run each fine-tune (the head's dropout 0: see the module docstring)."""
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * request["replicas"])
    from keras_bert_app.models.bert_classifier import BertClassifier

    results = {}
    defaults = BertClassifier.__init__.__defaults__  # (dropout, pooling, dtype)
    BertClassifier.__init__.__defaults__ = (0.0, *defaults[1:])  # the head's dropout (see the module docstring)
    for name, run in request["runs"].items():
        scope = None
        if run["in_scope"]:
            scope = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(request["replicas"])]).scope()
        results[name] = _cli_run(run["argv"], scope)
    BertClassifier.__init__.__defaults__ = defaults
    with open(request["result"], "w") as file:
        json.dump(results, file)


if __name__ == "__main__":
    _worker(json.loads(sys.argv[1]))
