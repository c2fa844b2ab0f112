"""The TensorBoard callback's scalars: the events `tf.summary.scalar` writes, without importing `tensorboard`."""

import json
import subprocess
import sys

import keras
import numpy as np
import pytest


def _events(log_dir):
    """(step, serialized `Summary.Value`) of every value in the event files under `log_dir`."""
    import tensorflow as tf

    return sorted(
        (event.step, value.SerializeToString(deterministic=True))
        for path in sorted(log_dir.rglob("events.out.tfevents.*"))
        for event in tf.compat.v1.train.summary_iterator(str(path))
        for value in event.summary.value
    )


def test_scalars_are_the_events_tf_summary_scalar_writes(tmp_path):
    pytest.importorskip("tensorboard")
    import tensorflow as tf

    from keras_bert_app.training.tensorboard_logs import TensorBoard

    ours = TensorBoard(str(tmp_path / "ours")).summary
    for name, module in (("ours", ours), ("tensorboard", tf.summary)):
        writer = tf.summary.create_file_writer(str(tmp_path / name))
        with writer.as_default():
            module.scalar("epoch_loss", 0.25, step=0)
            module.scalar("epoch_accuracy", np.float64(0.875), step=3, description="dev accuracy")
            with tf.name_scope("val"):
                module.scalar("loss", tf.constant(1.5), step=tf.constant(7, tf.int64))
        writer.close()
    assert len(_events(tmp_path / "ours")) == 3
    assert _events(tmp_path / "ours") == _events(tmp_path / "tensorboard")
    with pytest.raises(ValueError):
        ours.scalar("not_a_scalar", [1.0, 2.0], step=0)


FIT_WITH_LOGS = """
import json, pathlib, sys
import numpy as np, keras
from keras_bert_app.training.tensorboard_logs import TensorBoard
import tensorflow as tf
log_dir = pathlib.Path(sys.argv[1])
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
x, y = np.ones((8, 3), "float32"), np.zeros((8, 1), "float32")
model.fit(x, y, validation_data=(x, y), epochs=2, batch_size=4, verbose=0, callbacks=[TensorBoard(str(log_dir))])
tags = sorted({(path.parent.name, value.tag) for path in log_dir.rglob("events.out.tfevents.*")
               for event in tf.compat.v1.train.summary_iterator(str(path)) for value in event.summary.value})
print(json.dumps({"tags": tags, "imported": sorted(m for m in sys.modules if m.startswith("tensorboard.plugins"))}))
"""


def test_fit_writes_keras_epoch_scalars_without_importing_tensorboard_summaries(tmp_path):
    result = subprocess.run([sys.executable, "-c", FIT_WITH_LOGS, str(tmp_path / "logs")], capture_output=True,
                            text=True, timeout=300, env={**__import__("os").environ,
                                                         "KERAS_BACKEND": keras.config.backend()})
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    tags = {tuple(tag) for tag in report["tags"]}
    assert {("train", "epoch_loss"), ("train", "epoch_learning_rate"), ("validation", "epoch_loss"),
            ("validation", "evaluation_loss_vs_iterations")} <= tags, tags
    assert report["imported"] == []
