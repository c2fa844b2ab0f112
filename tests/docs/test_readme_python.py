"""Every Python block of the README runs, as a user would paste it.

The `fit` script runs as written on every backend. The TPU block runs on
the TensorFlow backend under a one-device `mirrored` strategy with the tiny
preset and random weights (the only changes: the names below), and the
serving block loads what the README's `export` line writes from the `fit`
script's preset, through the real entry point.
"""

import pathlib
import re
import shlex

import keras
import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
TPU_SUBSTITUTIONS = (  # CPU stand-ins of the TPU block's hardware and checkpoint
    ('create_distribution("tpu")', 'create_distribution("mirrored")'),
    ('"bert_base_uncased", num_classes=2)', '"bert_base_uncased", num_classes=2, load_weights=False)'),
    ('"bert_base_uncased"', '"bert_tiny_uncased"'),
    ("jit_compile=True", "jit_compile=False"),  # XLA's compile takes longer than the test's six tiny steps
)


def blocks(language):
    """The README's fenced blocks of `language`, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", README.read_text(encoding="utf-8"), re.S | re.M)


def block(marker):
    (found,) = [text for text in blocks("python") if marker in text]
    return found


FIT, TPU, SERVING = "classifier.fit(train, epochs=3)\nclassifier.save_to_preset", "create_distribution", "saved_model.load"


def test_every_python_block_has_its_test():
    assert sorted(sum(marker in text for marker in (FIT, TPU, SERVING)) for text in blocks("python")) == [1, 1, 1]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A folder where the README's `fit` script ran (as pasted), and the script's variables."""
    import os

    folder = tmp_path_factory.mktemp("readme_fit")
    previous = os.getcwd()
    os.chdir(folder)
    try:
        namespace = {}
        exec(compile(block(FIT), "README fit script", "exec"), namespace)
    finally:
        os.chdir(previous)
    return folder, namespace


@pytest.mark.all_backends
def test_fit_script(fitted):
    import keras_bert_app as kba

    folder, namespace = fitted
    assert namespace["classifier"].optimizer.iterations.numpy() == 2 * 3  # 4 texts in batches of 2, 3 epochs
    reloaded = kba.BertClassifier.from_preset(str(folder / "my_classifier"))
    assert reloaded.count_params() == namespace["classifier"].count_params()
    assert (folder / "my_classifier" / "vocab.txt").is_file()


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="tf.distribute: TensorFlow backend")
def test_tpu_block_on_a_cpu_strategy():
    import tensorflow as tf

    source = block(TPU)
    for old, new in TPU_SUBSTITUTIONS:
        assert old in source, old
        source = source.replace(old, new)
    texts = ["a fine day", "markets fell", "the match was won", "rain again"] * 16
    namespace = {"train_ds": tf.data.Dataset.from_tensor_slices((texts, [0, 1, 0, 1] * 16)), "total_steps": 6}
    exec(compile(source, "README TPU block", "exec"), namespace)
    assert namespace["classifier"].optimizer.iterations.numpy() == 2 * 3  # 64 texts / 32 a batch, 3 epochs


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="the SavedModel is written from TensorFlow")
def test_serving_block(fitted, monkeypatch):
    from keras_bert_app import cli

    monkeypatch.chdir(fitted[0])
    (export_line,) = [line for text in blocks("bash") for line in text.splitlines() if line.startswith("keras-bert-app export")]
    assert cli.main(shlex.split(export_line)[1:]) == 0
    namespace = {}
    exec(compile(block(SERVING), "README serving block", "exec"), namespace)
    outputs = namespace["outputs"]
    assert outputs["probabilities"].shape == (2, 4)
    assert set(outputs["label"].numpy().tolist()) <= {b"sport", b"business", b"music", b"politics"}
