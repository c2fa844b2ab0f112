"""Two-phase pretraining (64 then 128 tokens) on the Wikipedia sample: killed in phase 2, resumed in phase 2."""

import pathlib

import numpy as np
import pytest

from keras_bert_app import cli, errors

PHASE1_LENGTH, PHASE2_LENGTH = 64, 128
STEPS, PHASE2_STEPS, EVERY = 8, 4, 2


class Killed(BaseException):
    """Stands for kill -9 right after a checkpoint (checkpoints are atomic: the same state on disk)."""


@pytest.fixture(scope="module")
def records(shared_data, tmp_path_factory):
    """`create-pretraining-data` records of the Wikipedia sample's first articles at 64 and at 128 tokens."""
    root = tmp_path_factory.mktemp("two_phase")
    # Two short articles (160 sentences): about 50 sequences of 64 tokens, 25 of 128; the data repeats.
    lines = (shared_data / "corpus" / "enwiki_sample.txt").read_text(encoding="utf-8").splitlines()[687:846]
    corpus = root / "wiki.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for length, predictions in ((PHASE1_LENGTH, 10), (PHASE2_LENGTH, 20)):
        argv = [
            "create-pretraining-data", "--input", str(corpus), "--output", str(root / f"len{length}"),
            "--vocab", str(shared_data / "vocab" / "bert_uncased_vocab.txt"), "--max-seq-length", str(length),
            "--max-predictions-per-seq", str(predictions), "--dupe-factor", "1", "--workers", "1",
        ]
        assert cli.main(argv) == 0
    return root


def _argv(records, output, *extra, preset="bert_tiny_uncased", short="len64", long="len128", steps=STEPS):
    return [
        "pretrain", "--preset", str(preset), "--data", str(records / short / "*.tfrecord"),
        "--phase2-data", str(records / long / "*.tfrecord"), "--phase2-steps", str(PHASE2_STEPS),
        "--phase2-batch-size", "4", "--output", str(output), "--batch-size", "8", "--steps", str(steps),
        "--warmup-steps", "1", "--learning-rate", "1e-3", "--checkpoint-every", str(EVERY),
        "--jit-compile", "false", "--verbose", "0", *extra,
    ]


@pytest.fixture(scope="module")
def micro(tmp_path_factory):
    """A micro preset (vocabulary 100, width 8) and records of 16 and 32 tokens written here: the fast check."""
    import keras

    from keras_bert_app import presets
    from keras_bert_app.models.bert_encoder import BertEncoder

    root = tmp_path_factory.mktemp("micro")
    keras.utils.set_random_seed(0)
    BertEncoder(vocabulary_size=100, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16,
                max_sequence_length=64, dropout=0.0).save_to_preset(root / "preset")
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(95)]
    (root / "preset" / "vocab.txt").write_text("\n".join(tokens) + "\n")
    presets.write_config_entry(root / "preset", "tokenizer", {"vocabulary": "vocab.txt", "lowercase": True})
    for length in (16, 32):
        _write_records(root / f"len{length}" / "data.tfrecord", length)
    return root


def _write_records(path, length, count=32):
    import tensorflow as tf

    path.parent.mkdir(parents=True)
    rng = np.random.default_rng(length)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(count):
            ids = rng.integers(5, 100, length)
            positions = np.sort(rng.choice(np.arange(1, length), 4, replace=False))
            int_features = {
                "input_ids": ids, "input_mask": np.ones(length), "segment_ids": np.arange(length) >= length // 2,
                "masked_lm_positions": positions, "masked_lm_ids": ids[positions], "next_sentence_labels": [0],
            }
            feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=np.asarray(value, np.int64)))
                       for name, value in int_features.items()}
            feature["masked_lm_weights"] = tf.train.Feature(float_list=tf.train.FloatList(value=[1.0] * 4))
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


def _kill_in_phase_2_then_resume(argv, phase1_length, phase2_length, monkeypatch, capsys):
    """Run `argv` until the first checkpoint of phase 2, "kill" it, rerun it; check the resume and the preset."""
    from keras import ops

    from keras_bert_app.models.bert_pretrainer import BertPretrainer
    from keras_bert_app.training import checkpointing

    positions = {}  # step -> the position embedding table after it
    original = checkpointing.ResumableCheckpoint.on_epoch_end

    def checkpoint_then_maybe_die(self, epoch, logs=None):
        original(self, epoch, logs)
        step = (epoch + 1) * self.steps_per_epoch
        positions[step] = ops.convert_to_numpy(self.model.encoder.embeddings.position_embeddings)
        if step == STEPS - PHASE2_STEPS + EVERY:  # the first checkpoint of phase 2
            raise Killed

    monkeypatch.setattr(checkpointing.ResumableCheckpoint, "on_epoch_end", checkpoint_then_maybe_die)
    run = pathlib.Path(argv[argv.index("--output") + 1])
    with pytest.raises(Killed):
        cli.main(argv)
    first = capsys.readouterr().out
    assert f"Phase 1: steps 1-4 of 8, sequences of {phase1_length} tokens, batch 8." in first
    assert f"Phase 2: steps 5-8 of 8, sequences of {phase2_length} tokens, batch 4." in first
    assert [step for step, _ in checkpointing.list_checkpoints(run / "checkpoints")] == [4, 6]

    assert cli.main(argv) == 0
    log = capsys.readouterr().out
    assert "Resumed from step 6 of 8, in phase 2" in log
    assert f"Phase 2: steps 7-8 of 8, sequences of {phase2_length} tokens, batch 4." in log and "Phase 1" not in log
    assert sorted(positions) == [2, 4, 6, 8]
    pretrainer = BertPretrainer.from_preset(run / "preset")
    final = ops.convert_to_numpy(pretrainer.encoder.embeddings.position_embeddings)
    np.testing.assert_array_equal(final, positions[8])
    # Positions past phase 1's length get no gradient in phase 1 (only weight decay, 1e-5 a step), then train in phase 2.
    short, long = slice(0, phase1_length), slice(phase1_length, phase2_length)
    np.testing.assert_allclose(positions[4][long], positions[2][long], rtol=1e-4)
    assert np.abs(positions[4][short] - positions[2][short]).max() > 1e-4
    assert np.abs(positions[8][long] - positions[4][long]).max() > 1e-4
    np.testing.assert_allclose(positions[8][phase2_length:], positions[2][phase2_length:], rtol=1e-3)
    # A rerun with other phase-2 arguments is refused, one line.
    assert cli.main(argv[:-2] + ["--phase2-batch-size", "2", "--verbose", "0"]) == 2
    error = capsys.readouterr().err.strip()
    assert "phase2_batch_size: 4 there, 2 now" in error and len(error.splitlines()) == 1


@pytest.mark.filterwarnings("ignore:Preset .* has no pretrainer.weights.h5")  # fresh heads: expected
def test_killed_in_phase_2_resumes_in_phase_2_micro(micro, tmp_path, monkeypatch, capsys):
    argv = _argv(micro, tmp_path / "run", preset=micro / "preset", short="len16", long="len32")
    _kill_in_phase_2_then_resume(argv, 16, 32, monkeypatch, capsys)


@pytest.mark.all_backends
@pytest.mark.large  # three fits of bert_tiny_uncased (30,522-token vocabulary) and its records: a minute or more
def test_killed_in_phase_2_resumes_in_phase_2_wikipedia(records, tmp_path, monkeypatch, capsys):
    _kill_in_phase_2_then_resume(_argv(records, tmp_path / "run"), PHASE1_LENGTH, PHASE2_LENGTH, monkeypatch, capsys)


def test_phase_2_bad_input(micro, tmp_path, capsys):
    from keras_bert_app.training.pretrain import pretrain

    records = micro
    both = str(records / "len*" / "*.tfrecord")  # records of 16 and of 32 tokens
    cases = [
        (["--phase2-data", both], "hold sequences of different lengths"),
        (["--phase2-max-seq-length", "512"], "phase2_max_seq_length is 512 but the phase-2 records"),
    ]
    for extra, message in cases:
        argv = _argv(records, tmp_path / "bad", *extra, preset=micro / "preset", short="len16", long="len32")
        assert cli.main(argv) == 2
        error = capsys.readouterr().err.strip()
        assert message in error and len(error.splitlines()) == 1, error
    keywords = dict(data=str(records / "len16" / "*.tfrecord"), verbose=0, log=None)
    with pytest.raises(errors.ArgumentError, match="must be fewer than steps") as caught:
        pretrain(str(micro / "preset"), tmp_path / "x", 8, phase2_data=both, phase2_steps=8, **keywords)
    assert caught.value.argument == "phase2_steps"
    with pytest.raises(errors.ArgumentError, match="give phase2_data") as caught:
        pretrain(str(micro / "preset"), tmp_path / "x", 8, phase2_steps=2, **keywords)
    assert caught.value.argument == "phase2_steps"
    with pytest.raises(errors.ArgumentError, match="must divide the steps of each phase") as caught:
        pretrain(str(micro / "preset"), tmp_path / "x", 8, phase2_data=both, phase2_steps=3, checkpoint_every=2, **keywords)
    assert caught.value.argument == "checkpoint_every"
    assert not (tmp_path / "x").exists()


def test_pretrain_data_reads_every_file_passes_over_empty_ones_and_names_a_bad_one(micro, tmp_path, capsys):
    """Phase 1's --data, like phase 2's: every file is checked, not only the first (a probe's three faults)."""
    import shutil

    import tensorflow as tf

    def run(pattern, output):
        argv = ["pretrain", "--preset", str(micro / "preset"), "--data", str(pattern), "--output", str(output),
                "--batch-size", "8", "--steps", "2", "--checkpoint-every", "2", "--jit-compile", "false", "--verbose", "0"]
        code = cli.main(argv)
        return code, capsys.readouterr().err.strip()

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(micro / "len16" / "data.tfrecord", mixed / "a.tfrecord")
    shutil.copy(micro / "len32" / "data.tfrecord", mixed / "b.tfrecord")
    code, error = run(mixed / "*.tfrecord", tmp_path / "run_mixed")
    assert code == 2 and len(error.splitlines()) == 1, error
    assert "hold sequences of different lengths (16 tokens, 4 predictions: " in error and "b.tfrecord" in error

    # A file without records first in the pattern (create-pretraining-data writes some for more shards than instances).
    shards = tmp_path / "shards"
    shards.mkdir()
    with tf.io.TFRecordWriter(str(shards / "a-empty.tfrecord")):
        pass
    shutil.copy(micro / "len16" / "data.tfrecord", shards / "b.tfrecord")
    assert run(shards / "*.tfrecord", tmp_path / "run_shards") == (0, "")
    assert (tmp_path / "run_shards" / "preset" / "config.json").is_file()
    code, error = run(shards / "a-*.tfrecord", tmp_path / "run_none")
    assert code == 2 and "a-empty.tfrecord" in error and "hold no record" in error

    # A file that breaks off after its first records: named, in one line, after the steps it could run.
    broken = tmp_path / "broken"
    broken.mkdir()
    data = (micro / "len16" / "data.tfrecord").read_bytes()
    (broken / "x.tfrecord").write_bytes(data[: len(data) // 4 + 40])  # 8 of 32 records and part of one; 2 steps read 16
    code, error = run(broken / "*.tfrecord", tmp_path / "run_broken")
    assert code == 2 and len(error.splitlines()) == 1, error
    assert "x.tfrecord breaks off or is corrupt" in error

    code, error = run(micro / "len16", tmp_path / "run_folder")
    assert code == 2 and "is a folder, not a TFRecord file" in error, error
    (tmp_path / "text.tfrecord").write_text("plain text, not records\n")
    code, error = run(tmp_path / "text.tfrecord", tmp_path / "run_text")
    assert code == 2 and "text.tfrecord is not a readable TFRecord file" in error, error
