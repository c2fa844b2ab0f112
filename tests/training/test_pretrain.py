"""`kba.pretrain` and the `pretrain` command: a tiny run end to end, kill -9 and resume, bad input, the README lines."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from keras_bert_app import errors
from tests.conftest import REPO_ROOT

SEQ_LENGTH = 16
PREDICTIONS = 4
VOCABULARY_SIZE = 100
TINY_ENCODER = dict(
    vocabulary_size=VOCABULARY_SIZE, num_layers=1, num_heads=2, hidden_dim=8,
    intermediate_dim=16, max_sequence_length=32, dropout=0.0,
)


def _write_records(path, count, seed=0, feature_names=None):
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    writer = tf.io.TFRecordWriter(str(path))
    for _ in range(count):
        length = int(rng.integers(8, SEQ_LENGTH + 1))
        ids = np.zeros(SEQ_LENGTH, np.int64)
        ids[:length] = rng.integers(5, VOCABULARY_SIZE, length)
        positions = np.zeros(PREDICTIONS, np.int64)
        positions[:3] = rng.choice(np.arange(1, length), 3, replace=False)
        weights = np.array([1, 1, 1, 0], np.float32)
        features = {
            "input_ids": ids, "input_mask": (np.arange(SEQ_LENGTH) < length).astype(np.int64),
            "segment_ids": (np.arange(SEQ_LENGTH) >= length // 2).astype(np.int64),
            "masked_lm_positions": positions, "masked_lm_ids": ids[positions] * (weights > 0),
            "masked_lm_weights": weights, "next_sentence_labels": [int(rng.integers(0, 2))],
        }
        if feature_names:
            features = {feature_names.get(k, k): v for k, v in features.items()}
        example = tf.train.Example(
            features=tf.train.Features(
                feature={
                    name: tf.train.Feature(float_list=tf.train.FloatList(value=value))
                    if name == "masked_lm_weights"
                    else tf.train.Feature(int64_list=tf.train.Int64List(value=list(map(int, value))))
                    for name, value in features.items()
                }
            )
        )
        writer.write(example.SerializeToString())
    writer.close()


@pytest.fixture(scope="module")
def tiny_run_inputs(tmp_path_factory):
    """A tiny preset folder with weights and a TFRecord file."""
    import keras

    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app import presets

    root = tmp_path_factory.mktemp("pretrain_inputs")
    preset = root / "tiny_preset"
    keras.utils.set_random_seed(0)
    BertEncoder(**TINY_ENCODER).save_to_preset(preset)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(VOCABULARY_SIZE - 5)]
    (preset / "vocab.txt").write_text("\n".join(tokens) + "\n")
    presets.write_config_entry(preset, "tokenizer", {"vocabulary": "vocab.txt", "lowercase": True})
    _write_records(root / "data.tfrecord", 64)
    return preset, root / "data.tfrecord"


def _command(preset, data, output, steps=8, extra=()):
    return [
        "pretrain", "--preset", str(preset), "--data", str(data), "--output", str(output),
        "--batch-size", "8", "--steps", str(steps), "--warmup-steps", "2",
        "--learning-rate", "1e-3", "--checkpoint-every", "2", "--jit-compile", "false",
        "--strategy", "auto", "--verbose", "2", *extra,
    ]


def _run_cli(argv, **popen):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.Popen(
        [sys.executable, "-m", "keras_bert_app.cli", *argv], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen,
    )


def _finish(process, timeout=900):
    log, _ = process.communicate(timeout=timeout)
    return process.returncode, log


def _in_process(argv):
    """`(exit code, stdout + stderr)` of the command line run by `cli.main` in this process (no TF import to pay)."""
    import contextlib
    import io

    from keras_bert_app import cli

    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = cli.main(argv)
    return code, output.getvalue()


def _final_weights(run_dir):
    import h5py

    values = {}

    def collect(name, item):
        if isinstance(item, h5py.Dataset):
            values[name] = item[()]

    with h5py.File(run_dir / "preset" / "model.weights.h5", "r") as file:
        file.visititems(collect)
    return values


# The module's 8-step run trains with dropout, so that one interrupted run checks both what a resumed run reads
# (its batches) and what it draws (its dropout masks).
DROPOUT = ("--dropout", "0.3")


@pytest.fixture(scope="module")
def uninterrupted_run(tiny_run_inputs, tmp_path_factory):
    preset, data = tiny_run_inputs
    run_dir = tmp_path_factory.mktemp("uninterrupted") / "run"
    code, log = _in_process(_command(preset, data, run_dir, extra=DROPOUT))
    assert code == 0, log[-3000:]
    return run_dir, log


def test_a_run_writes_logs_checkpoints_and_a_loadable_preset(uninterrupted_run):
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.models.bert_pretrainer import BertPretrainer

    run_dir, log = uninterrupted_run
    assert "tokens/s" in log and "MFU" in log
    rows = (run_dir / "metrics.csv").read_text().splitlines()
    header = rows[0].split(",")
    for column in ("loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy", "tokens_per_second"):
        assert column in header
    assert len(rows) == 1 + 4  # 8 steps, a checkpoint every 2
    assert any((run_dir / "logs").rglob("*tfevents*"))
    assert json.loads((run_dir / "run_config.json").read_text())["steps"] == 8
    encoder = BertEncoder.from_preset(run_dir / "preset")
    pretrainer = BertPretrainer.from_preset(run_dir / "preset")
    assert encoder.count_params() > 0 and pretrainer.next_sentence_head is not None


@pytest.mark.all_backends
@pytest.mark.large
def test_kill_9_mid_run_then_rerun_ends_like_an_uninterrupted_run(tiny_run_inputs, uninterrupted_run, tmp_path):
    from keras_bert_app.training.checkpointing import list_checkpoints

    preset, data = tiny_run_inputs
    run_dir = tmp_path / "run"
    process = _run_cli(_command(preset, data, run_dir, extra=DROPOUT))
    deadline = time.time() + 900
    while time.time() < deadline and not list_checkpoints(run_dir / "checkpoints"):
        time.sleep(0.2)
    assert list_checkpoints(run_dir / "checkpoints"), "no checkpoint before the deadline"
    os.kill(process.pid, signal.SIGKILL)
    process.communicate()
    killed_at = list_checkpoints(run_dir / "checkpoints")[-1][0]
    assert killed_at < 8

    code, log = _finish(_run_cli(_command(preset, data, run_dir, extra=DROPOUT)))
    assert code == 0, log[-3000:]
    assert f"Resumed from step {killed_at} of 8" in log
    assert list_checkpoints(run_dir / "checkpoints")[-1][0] == 8
    expected = _final_weights(uninterrupted_run[0])
    got = _final_weights(run_dir)
    assert expected.keys() == got.keys()
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6, err_msg=f"{name} (killed at {killed_at})")


@pytest.mark.all_backends
def test_ctrl_c_after_a_checkpoint_then_rerun_ends_like_an_uninterrupted_run(
    tiny_run_inputs, uninterrupted_run, tmp_path, monkeypatch
):
    """The resumed run reads the uninterrupted one's batches from its step on (JAX and PyTorch used not to), and
    dropout's seed state goes into each checkpoint: resumed, the run does not draw its first steps' masks again
    (both runs train with dropout 0.3)."""
    from keras_bert_app.training import checkpointing

    assert sorted(p.name for p in (uninterrupted_run[0] / "checkpoints").iterdir()) == [
        "step-00000006.seeds.npz", "step-00000006.weights.h5", "step-00000008.seeds.npz", "step-00000008.weights.h5"]
    save = checkpointing.ResumableCheckpoint.on_epoch_end

    def save_then_ctrl_c(self, epoch, logs=None):
        save(self, epoch, logs)
        if (epoch + 1) * self.steps_per_epoch == 4:
            raise KeyboardInterrupt

    preset, data = tiny_run_inputs
    run_dir = tmp_path / "run"
    monkeypatch.setattr(checkpointing.ResumableCheckpoint, "on_epoch_end", save_then_ctrl_c)
    code, log = _in_process(_command(preset, data, run_dir, extra=DROPOUT))
    assert code == 130 and "interrupted" in log, log[-2000:]
    monkeypatch.undo()
    code, log = _in_process(_command(preset, data, run_dir, extra=DROPOUT))
    assert code == 0 and "Resumed from step 4 of 8" in log, log[-2000:]
    expected, got = _final_weights(uninterrupted_run[0]), _final_weights(run_dir)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_rerun_of_a_finished_run_says_so(tiny_run_inputs, uninterrupted_run):
    preset, data = tiny_run_inputs
    code, log = _in_process(_command(preset, data, uninterrupted_run[0], extra=DROPOUT))
    assert code == 0 and "already finished" in log


def _error_of(argv):
    from keras_bert_app import cli

    return cli.main(argv)


def test_bad_input_gives_one_clear_error_and_keeps_the_previous_run(tiny_run_inputs, uninterrupted_run, tmp_path, capsys):
    preset, data = tiny_run_inputs
    run_dir = uninterrupted_run[0]
    before = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    cases = {
        "no file matches": _command(preset, tmp_path / "nothing*.tfrecord", tmp_path / "a"),
        "another configuration": _command(preset, data, run_dir, extra=(*DROPOUT, "--learning-rate", "5e-4")),
        "not a pretraining run folder": _command(preset, data, tmp_path / "occupied"),
        "no model.weights.h5": _command(tmp_path / "empty_preset", data, tmp_path / "b"),
        "must divide steps": _command(preset, data, tmp_path / "c", steps=7),
        "heads of preset": _command(run_dir / "preset", data, tmp_path / "d", extra=("--output-bias-init", "unigram")),
    }
    (tmp_path / "occupied").mkdir()
    (tmp_path / "occupied" / "notes.txt").write_text("mine")
    (tmp_path / "empty_preset").mkdir()
    (tmp_path / "empty_preset" / "config.json").write_text((preset / "config.json").read_text())
    for message, argv in cases.items():
        assert _error_of(argv) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == before


def test_records_with_other_features_or_lengths_are_clear_errors(tiny_run_inputs, tmp_path, capsys):
    preset, _ = tiny_run_inputs
    renamed = tmp_path / "renamed.tfrecord"
    _write_records(renamed, 2, feature_names={"input_ids": "token_ids"})
    assert _error_of(_command(preset, renamed, tmp_path / "a")) == 2
    assert "expected pretraining features" in capsys.readouterr().err
    _, data = tiny_run_inputs
    assert _error_of(_command(preset, data, tmp_path / "b", extra=("--max-seq-length", "32"))) == 2
    assert "max_seq_length is 32 but the records" in capsys.readouterr().err


@pytest.fixture(scope="module")
def bias_and_dropout_run(tiny_run_inputs, tmp_path_factory):
    """One 2-step run serving two tests: `--output-bias-init unigram` at a rate of 1e-12 (the bias stays where it
    started) and `--dropout 0` from a copy of the tiny preset whose config says dropout 0.25."""
    import shutil

    from keras_bert_app import presets

    source, data = tiny_run_inputs
    root = tmp_path_factory.mktemp("bias_and_dropout")
    preset = root / "preset_with_dropout"
    shutil.copytree(source, preset)
    presets.write_config_entry(preset, "encoder", {**presets.read_config(preset)["encoder"], "dropout": 0.25})
    argv = _command(preset, data, root / "run", steps=2,
                    extra=("--output-bias-init", "unigram", "--learning-rate", "1e-12", "--dropout", "0"))
    code, log = _in_process(argv)
    assert code == 0, log[-3000:]
    return preset, root / "run", log


def test_unigram_output_bias_init_matches_the_records_target_frequencies(tiny_run_inputs, bias_and_dropout_run):
    """The bias starts at the log frequencies of the masked targets, read here straight from the records."""
    import tensorflow as tf
    from keras import ops

    from keras_bert_app.models.bert_pretrainer import BertPretrainer
    from keras_bert_app.training.output_bias import SMOOTHING

    _, data = tiny_run_inputs
    _, run_dir, log = bias_and_dropout_run
    counts = np.zeros(VOCABULARY_SIZE)
    for raw in tf.data.TFRecordDataset(str(data)):
        feature = tf.train.Example.FromString(raw.numpy()).features.feature
        ids = np.array(feature["masked_lm_ids"].int64_list.value)
        weights = np.array(feature["masked_lm_weights"].float_list.value)
        np.add.at(counts, ids[weights > 0], 1)
    assert f"log frequencies of {int(counts.sum())} masked tokens" in log.replace(",", "")
    expected = np.log((counts + SMOOTHING) / (counts + SMOOTHING).sum())
    bias = ops.convert_to_numpy(BertPretrainer.from_preset(run_dir / "preset").masked_lm_head.output_bias)
    np.testing.assert_allclose(bias, expected - expected.mean(), atol=1e-5)


def test_dropout_option_sets_the_runs_rate_and_the_preset_keeps_its_own(tiny_run_inputs, bias_and_dropout_run, tmp_path):
    """`--dropout 0` pretrains without dropout; the written preset keeps the starting preset's rate."""
    import keras

    from keras_bert_app import errors, presets
    from keras_bert_app.convert import resolve
    from keras_bert_app.training import pretrain
    from keras_bert_app.training.pretrain_settings import checked_settings

    _, data = tiny_run_inputs
    preset, run_dir, _ = bias_and_dropout_run
    assert json.loads((run_dir / "run_config.json").read_text())["dropout"] == 0.0
    assert presets.read_config(run_dir / "preset")["encoder"]["dropout"] == 0.25

    resolved = resolve.resolve_preset(preset)
    for dropout, rate in ((0.0, 0.0), (None, 0.25)):
        settings = checked_settings(**_arguments(preset, data, tmp_path / "x", dropout=dropout))
        pretrainer = pretrain._build_pretrainer(settings, resolved, resuming=False)
        rates = {layer.rate for layer in pretrainer.encoder._flatten_layers() if isinstance(layer, keras.layers.Dropout)}
        assert pretrainer.encoder.dropout == rate and rates == {rate}
    with pytest.raises(errors.ArgumentError, match=r"dropout must be in \[0, 1\); got 1.5") as error:
        pretrain.pretrain(**_arguments(preset, data, tmp_path / "y", dropout=1.5))
    assert error.value.argument == "dropout"


def _arguments(preset, data, output, /, **overrides):
    """Every argument of `kba.pretrain`, its defaults but for the tiny run's."""
    import inspect

    from keras_bert_app.training import pretrain

    defaults = {
        name: parameter.default for name, parameter in inspect.signature(pretrain.pretrain).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }
    tiny = dict(batch_size=8, warmup_steps=2, learning_rate=1e-3, checkpoint_every=2, jit_compile=False, verbose=0, log=None)
    return {**defaults, "preset": str(preset), "data": str(data), "output": output, "steps": 2, **tiny, **overrides}


def test_pretrain_raises_one_typed_error_naming_the_argument(tiny_run_inputs, tmp_path):
    """Wrong types, missing files, bad presets and values: `kba.pretrain` says which argument, before any work."""
    import keras_bert_app as kba

    preset, data = tiny_run_inputs
    (tmp_path / "corpus.txt").write_text("one sentence.\n\nanother document.\n")
    cases = [
        (dict(steps="8"), errors.ArgumentTypeError, "steps", "steps must be int"),
        (dict(batch_size=0), errors.ArgumentError, "batch_size", "batch_size must be >= 1"),
        (dict(preset=3), errors.ArgumentTypeError, "preset", "preset must be"),
        (dict(preset="bert_huge"), errors.ArgumentError, "preset", "Unknown preset 'bert_huge'"),
        (dict(data=str(tmp_path / "nothing*.tfrecord")), errors.MissingFileError, "data", "no file matches"),
        (dict(data=None, corpus=[str(tmp_path / "none*.txt")]), errors.MissingFileError, "corpus", "no file matches"),
        (dict(corpus=str(tmp_path / "corpus.txt")), errors.ArgumentError, "data", "exactly one of data"),
        (dict(optimizer="sgd"), errors.ArgumentError, "optimizer", "optimizer must be one of"),
        (dict(strategy="gpu"), errors.ArgumentError, "strategy", "strategy must be one of"),
        (dict(warmup_steps=3), errors.ArgumentError, "warmup_steps", r"warmup_steps must be in \[0, steps=2\]"),
        (dict(next_sentence_prediction="no"), errors.ArgumentTypeError, "next_sentence_prediction", "must be bool"),
        (dict(output_bias_init="ones"), errors.ArgumentError, "output_bias_init", "output_bias_init must be one of"),
        (dict(max_seq_length=64), errors.ArgumentError, "max_seq_length", "max_seq_length is 64 but the records"),
    ]
    for overrides, error_type, argument, message in cases:
        with pytest.raises(error_type, match=message) as error:
            kba.pretrain(**_arguments(preset, data, tmp_path / "run", **overrides))
        assert error.value.argument == argument, (overrides, error.value)
    assert not (tmp_path / "run").exists()


def test_readme_command_lines(tiny_run_inputs, tmp_path, monkeypatch, capsys):
    """The README's `pretrain` lines through `cli.main`, as written (`...` filled in).

    `fit` is replaced by a check of what it would get (10,000 steps of BERT-Mini
    are out of a test's reach); the rest of the run, the preset written at
    the end included, is real. The TPU line fails at once with one line.
    """
    from keras_bert_app import cli
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.models.bert_pretrainer import BertPretrainer

    fits = []

    def checked_fit(self, dataset, epochs, steps_per_epoch, **kwargs):
        x, y, weights = next(iter(dataset))
        fits.append((epochs, steps_per_epoch, tuple(x["token_ids"].shape), tuple(x["mask_positions"].shape)))

    monkeypatch.setattr(BertPretrainer, "fit", checked_fit)
    # The replaced fit trains no batch: the check that the data lasted the run's steps has nothing to count.
    monkeypatch.setattr("keras_bert_app.training.phases._check_data_lasted", lambda *args: None)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    _write_records(tmp_path / "data" / "part-0.tfrecord", 64)
    (tmp_path / "corpus").mkdir()
    for index in range(2):
        documents = [f"the cat number {d} sat on the mat.\nit was a good day for cats.\n" for d in range(40)]
        (tmp_path / "corpus" / f"part{index}.txt").write_text("\n".join(documents))

    readme = (
        "pretrain --preset bert_mini_uncased --data data/*.tfrecord --output runs/mini "
        "--batch-size 32 --steps 10000 --learning-rate 1e-4 --warmup-steps 100"
    )
    assert cli.main(readme.split()) == 0, capsys.readouterr().err
    assert fits.pop() == (10, 1000, (32, SEQ_LENGTH), (32, PREDICTIONS))
    run_config = json.loads((tmp_path / "runs/mini/run_config.json").read_text())
    assert (run_config["batch_size"], run_config["steps"], run_config["learning_rate"], run_config["warmup_steps"]) == (32, 10000, 1e-4, 100)
    assert BertEncoder.from_preset("runs/mini/preset").num_layers == 4  # bert_mini_uncased, written at the end
    assert "Done: 10000 steps" in capsys.readouterr().out

    assert cli.main("pretrain --preset bert_mini_uncased --corpus corpus/*.txt --output runs/dynamic --steps 10".split()) == 0
    assert fits.pop() == (1, 10, (32, 128), (32, 20))
    assert json.loads((tmp_path / "runs/dynamic/run_config.json").read_text())["corpus"] == ["corpus/*.txt"]

    tpu = (
        "pretrain --strategy tpu --data gs://bucket/data/*.tfrecord --output gs://bucket/run "
        "--preset bert_base_uncased --batch-size 256 --steps 1000000 --learning-rate 1e-4"
    )
    capsys.readouterr()
    assert cli.main(tpu.split()) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and ("No TPU found" in error or "KERAS_BACKEND=tensorflow" in error), error
