"""`pretrain --objective electra`: a tiny run end to end, kill -9 and resume, bad input, learning on Wikipedia."""

import csv
import json
import os
import pathlib
import signal
import time

import numpy as np
import pytest

from keras_bert_app import errors, presets
from tests.training.test_pretrain import (
    TINY_ENCODER,
    _final_weights,
    _finish,
    _in_process,
    _run_cli,
    _write_records,
)

ELECTRA_COLUMNS = (
    "loss", "generator_mlm_loss", "generator_mlm_accuracy", "discriminator_loss", "discriminator_accuracy",
    "discriminator_precision", "discriminator_recall", "discriminator_auc", "replaced_token_rate",
)
SHARED = pathlib.Path("/work/shared/data")


@pytest.fixture(scope="module")
def electra_inputs(tmp_path_factory):
    """A tiny preset (4 heads, so a 1/4 generator has one), TFRecords and a small corpus in its vocabulary."""
    import keras

    from keras_bert_app.models.bert_encoder import BertEncoder

    root = tmp_path_factory.mktemp("electra_inputs")
    preset = root / "tiny_preset"
    keras.utils.set_random_seed(0)
    BertEncoder(**{**TINY_ENCODER, "num_heads": 4}).save_to_preset(preset)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(TINY_ENCODER["vocabulary_size"] - 5)]
    (preset / "vocab.txt").write_text("\n".join(tokens) + "\n")
    presets.write_config_entry(preset, "tokenizer", {"vocabulary": "vocab.txt", "lowercase": True})
    _write_records(root / "data.tfrecord", 64)
    rng = np.random.default_rng(0)
    documents = [
        "\n".join(" ".join(f"tok{i}" for i in rng.integers(0, 40, 8)) for _ in range(6)) for _ in range(8)
    ]
    (root / "corpus.txt").write_text("\n\n".join(documents) + "\n")
    return preset, root / "data.tfrecord", root / "corpus.txt"


def _electra_command(preset, data, output, steps=8, extra=()):
    return [
        "pretrain", "--objective", "electra", "--preset", str(preset), "--data", str(data), "--output", str(output),
        "--batch-size", "8", "--steps", str(steps), "--warmup-steps", "2", "--learning-rate", "1e-3",
        "--checkpoint-every", "2", "--jit-compile", "false", "--verbose", "2", *extra,
    ]


@pytest.fixture(scope="module")
def electra_run(electra_inputs, tmp_path_factory):
    preset, data, _ = electra_inputs
    run_dir = tmp_path_factory.mktemp("electra_uninterrupted") / "run"
    # In this process (no second TensorFlow start-up): the kill -9 tests resume a killed process's run to it.
    code, log = _in_process(_electra_command(preset, data, run_dir))
    assert code == 0, log[-3000:]
    return run_dir, log


def test_an_electra_run_logs_both_models_and_writes_both_presets(electra_run):
    import keras_bert_app as kba
    from keras_bert_app.models.electra_pretrainer import ElectraPretrainer

    run_dir, log = electra_run
    assert "ELECTRA: generator 1 layers x 2 wide, 1 head(s)" in log
    assert "tokens/s" in log
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    assert len(rows) == 4  # 8 steps, a checkpoint every 2
    for column in ELECTRA_COLUMNS:
        assert column in rows[0], column
        assert np.isfinite(float(rows[-1][column]))
    assert any((run_dir / "logs").rglob("*tfevents*"))
    run_config = json.loads((run_dir / "run_config.json").read_text())
    assert (run_config["objective"], run_config["generator_size"], run_config["learning_rate"]) == ("electra", None, 1e-3)
    # The discriminator is an encoder preset; the generator a masked LM of its own; both together resume ELECTRA.
    encoder = kba.BertEncoder.from_preset(run_dir / "preset")
    assert encoder.hidden_dim == 8
    generator = kba.BertPretrainer.from_preset(run_dir / "preset" / "generator")
    assert generator.encoder.hidden_dim == 2 and generator.next_sentence_head is None
    assert (run_dir / "preset" / "generator" / "vocab.txt").is_file()
    pretrainer = ElectraPretrainer.from_preset(run_dir / "preset")
    assert pretrainer.generator.embeddings is pretrainer.encoder.embeddings


def test_default_learning_rate_scales_with_the_global_batch(electra_inputs, tmp_path):
    """ELECTRA-Small's 5e-4 is for batch 128: at 8 x 2 accumulation steps the default is 5e-4 * 16 / 128."""
    from keras_bert_app.training.objectives import OBJECTIVES

    preset, data, _ = electra_inputs
    command = _electra_command(preset, data, tmp_path / "run", steps=2)
    del command[command.index("--learning-rate"):command.index("--learning-rate") + 2]
    code, log = _in_process(command + ["--accumulation-steps", "2"])
    assert code == 0, log[-3000:]
    assert json.loads((tmp_path / "run" / "run_config.json").read_text())["learning_rate"] == pytest.approx(6.25e-5)
    assert "global batch 8; peak learning rate 6.25e-05." in log
    electra, bert = OBJECTIVES["electra"], OBJECTIVES["mlm_nsp"]
    assert [electra.default_rate_at(batch) for batch in (32, 128, 256)] == pytest.approx([1.25e-4, 5e-4, 5e-4])
    assert [bert.default_rate_at(batch) for batch in (8, 256)] == [1e-4, 1e-4]  # the paper's BERT rate at any batch


@pytest.mark.large
def test_corpus_with_dynamic_masking_in_python(electra_inputs, tmp_path):
    import keras_bert_app as kba

    preset, _, corpus = electra_inputs
    run_dir = kba.pretrain(
        preset, tmp_path / "run", 2, corpus=str(corpus), objective="electra", generator_size=0.5, rtd_weight=10.0,
        batch_size=4, max_seq_length=16, max_predictions=3, checkpoint_every=2, jit_compile=False, verbose=0,
        log=None,
    )
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    assert float(rows[-1]["replaced_token_rate"]) > 0
    config = presets.read_config(run_dir / "preset")
    assert config["electra_pretrainer"]["config"]["rtd_weight"] == 10.0
    assert config["electra_pretrainer"]["config"]["generator"]["hidden_dim"] == 4


def test_bad_electra_input_gives_one_clear_error(electra_inputs, electra_run, tmp_path):
    import keras_bert_app as kba

    preset, data, _ = electra_inputs
    common = dict(data=str(data), batch_size=8, checkpoint_every=2, jit_compile=False, verbose=0, log=None)
    cases = [
        (dict(generator_size=0.5), errors.ArgumentError, "generator_size", "is an option of objective 'electra'"),
        (dict(objective="electra", generator_size=0.3), errors.ArgumentError, "generator_size", "does not divide"),
        (dict(objective="electra", generator_size=-1.0), errors.ArgumentError, "generator_size", "must be > 0"),
        (dict(objective="electra", rtd_weight="50"), errors.ArgumentTypeError, "rtd_weight", "must be a number"),
        (dict(objective="bert"), errors.ArgumentError, "objective", "objective must be one of"),
    ]
    for overrides, error_type, argument, message in cases:
        with pytest.raises(error_type, match=message) as error:
            kba.pretrain(preset, tmp_path / "run", 2, **{**common, **overrides})
        assert error.value.argument == argument, (overrides, error.value)
    assert not (tmp_path / "run").exists()
    # A finished ELECTRA run's folder is not resumed as another objective.
    with pytest.raises(errors.ArgumentError, match="objective: 'electra' there, 'mlm_nsp' now"):
        kba.pretrain(preset, electra_run[0], 8, **{**common, "warmup_steps": 2, "learning_rate": 1e-3})
    # Records without masked positions.
    empty = tmp_path / "empty.tfrecord"
    _write_empty_prediction_records(empty)
    with pytest.raises(errors.DataError, match="hold no masked positions"):
        kba.pretrain(preset, tmp_path / "run2", 2, **{**common, "data": str(empty), "objective": "electra"})
    # A generator larger than the discriminator: a warning (here followed by the folder's error).
    with pytest.warns(UserWarning, match="larger than the discriminator"), pytest.raises(errors.ArgumentError):
        kba.pretrain(preset, electra_run[0], 8, **{**common, "objective": "electra", "generator_size": 2.0})


def _write_empty_prediction_records(path):
    import tensorflow as tf

    with tf.io.TFRecordWriter(str(path)) as writer:
        int_feature = lambda values: tf.train.Feature(int64_list=tf.train.Int64List(value=values))  # noqa: E731
        features = {
            "input_ids": int_feature([2, 7, 3, 0]), "input_mask": int_feature([1, 1, 1, 0]),
            "segment_ids": int_feature([0] * 4), "masked_lm_positions": int_feature([]),
            "masked_lm_ids": int_feature([]), "next_sentence_labels": int_feature([0]),
            "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=[])),
        }
        writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())


@pytest.mark.all_backends
@pytest.mark.large
def test_kill_9_mid_run_then_rerun_ends_like_an_uninterrupted_run(electra_inputs, electra_run, tmp_path):
    """Weights, optimizer, schedule, data position and the sampler's random state all resume."""
    from keras_bert_app.training.checkpointing import list_checkpoints

    preset, data, _ = electra_inputs
    run_dir = tmp_path / "run"
    process = _run_cli(_electra_command(preset, data, run_dir))
    deadline = time.time() + 900
    while time.time() < deadline and not list_checkpoints(run_dir / "checkpoints"):
        time.sleep(0.2)
    assert list_checkpoints(run_dir / "checkpoints"), "no checkpoint before the deadline"
    os.kill(process.pid, signal.SIGKILL)
    process.communicate()
    killed_at = list_checkpoints(run_dir / "checkpoints")[-1][0]
    assert killed_at < 8

    code, log = _finish(_run_cli(_electra_command(preset, data, run_dir)))
    assert code == 0, log[-3000:]
    assert f"Resumed from step {killed_at} of 8" in log
    expected = _final_weights(electra_run[0])
    got = _final_weights(run_dir)
    assert expected.keys() == got.keys()
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6, err_msg=name)


def most_frequent_target_rate(corpus, preset, max_seq_length, max_predictions, seed=999, max_targets=50_000):
    """Share of the masked-LM targets that are the most frequent one: what always guessing it scores."""
    from keras_bert_app.data.dynamic_pretraining import dynamic_pretraining_dataset
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer
    from keras_bert_app.training.output_bias import count_masked_targets

    tokenizer = BertTokenizer.from_preset(preset)
    batches = dynamic_pretraining_dataset(
        [str(corpus)], tokenizer, 32, max_seq_length=max_seq_length, max_predictions_per_seq=max_predictions, seed=seed
    )
    counts = count_masked_targets(batches, tokenizer.vocabulary_size(), max_targets=max_targets)
    return counts.max() / counts.sum()


# The README's ELECTRA recipe for this CPU on the Wikipedia sample (see the test's docstring).
WIKIPEDIA_RUN = {
    "--steps": "1500", "--batch-size": "32", "--max-seq-length": "64", "--max-predictions": "10",
    "--learning-rate": "1e-4", "--warmup-steps": "100", "--dropout": "0", "--checkpoint-every": "250",
}


def binary_entropy(rate):
    """The replaced-token loss (nats) of answering the replaced-token rate everywhere: knowing nothing."""
    return -(rate * np.log(rate) + (1 - rate) * np.log(1 - rate))


@pytest.mark.large
@pytest.mark.skipif(not (SHARED / "corpus" / "enwiki_sample.txt").is_file(), reason="needs ../shared/data")
def test_electra_learns_on_wikipedia(tmp_path, capsys):
    """`pretrain --objective electra` of a bert_tiny_uncased-sized model from scratch on the Wikipedia sample.

    The README's CPU recipe (`WIKIPEDIA_RUN`: lr 1e-4 at batch 32, the paper's zero output bias). Over the
    last 250 of 1,500 steps: the generator beats always guessing the most frequent target (computed from
    the data); the discriminator's loss is well below that of knowing nothing (the binary entropy of the
    replaced-token rate), it ranks replaced tokens above kept ones (`discriminator_auc`), what it flags at
    probability 0.5 is replaced far more often than the rate, and it finds a good share of the replaced
    tokens (recall: 17% here). The same run at lr 1e-3 or 5e-4 (or 1e-4 with the generator's output bias
    set to the unigram log-frequencies) flags about 1% of them or fewer after its first few hundred steps:
    its generator samples frequent words almost from the start, and the discriminator gets too few of a
    near-uniform generator's easy replacements to start from (README). About 6 minutes on 2 idle cores.
    """
    from keras_bert_app import cli

    corpus = SHARED / "corpus" / "enwiki_sample.txt"
    run_dir = tmp_path / "run"
    command = ["pretrain", "--objective", "electra", "--preset", "bert_tiny_uncased", "--corpus", str(corpus),
               "--output", str(run_dir), "--verbose", "2"]
    for option, value in WIKIPEDIA_RUN.items():
        command += [option, value]
    started = time.monotonic()
    code = cli.main(command)
    assert code == 0, capsys.readouterr().err[-2000:]
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    last = {key: float(value) for key, value in rows[-1].items() if value not in ("", "NA")}
    baseline = most_frequent_target_rate(
        corpus, "bert_tiny_uncased", int(WIKIPEDIA_RUN["--max-seq-length"]), int(WIKIPEDIA_RUN["--max-predictions"])
    )
    with capsys.disabled():
        print(f"\n{time.monotonic() - started:.0f} s; most frequent target rate {baseline:.4f}; per 250 steps:")
        for row in rows:
            print("  " + ", ".join(f"{key} {float(row[key]):.4f}" for key in (
                "generator_mlm_accuracy", "discriminator_loss", "discriminator_recall", "discriminator_precision",
                "discriminator_auc", "replaced_token_rate")))
    rate = last["replaced_token_rate"]
    assert 0.03 < baseline < 0.08  # "the"
    assert last["generator_mlm_accuracy"] > baseline
    assert last["discriminator_loss"] < binary_entropy(rate) - 0.03
    assert last["discriminator_auc"] > 0.65  # random: 0.5
    assert last["discriminator_precision"] > 3 * rate
    assert last["discriminator_recall"] > 0.05


def test_reference_recipe_from_a_corpus_then_finetuned_with_electras_recipe(electra_inputs, tmp_path):
    """`pretrain --objective electra --corpus`: plain segments masked at every step, the reference's warmup share,
    AUC and generator accuracy per segment; `finetune` from its preset: rate 1e-4 and layer-wise decay 0.8,
    each overridable."""
    import keras_bert_app as kba
    from keras_bert_app.models import electra_recipe

    preset, _, corpus = electra_inputs
    lines = []
    run_dir = kba.pretrain(
        preset, tmp_path / "run", 4, corpus=str(corpus), objective="electra", batch_size=4, max_seq_length=16,
        max_predictions=3, checkpoint_every=2, jit_compile=False, verbose=0, log=lines.append,
    )
    log = "\n".join(lines)
    assert "ELECTRA recipe" in log and "data pairing segments, packed once, masked anew at every step" in log
    config = json.loads((run_dir / "run_config.json").read_text())
    assert (config["pairing"], config["warmup_steps"], config["learning_rate"]) == ("segments", 0, pytest.approx(5e-4 * 4 / 128))
    assert [electra_recipe.pretraining_warmup_steps(steps) for steps in (1_000_000, 2_000, 40)] == [10_000, 20, 0]
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    assert len(rows) == 2 and all(0 <= float(row["discriminator_auc"]) <= 1 for row in rows)
    assert all(0 <= float(row["generator_mlm_accuracy"]) <= 1 for row in rows)

    csv_path = tmp_path / "train.csv"
    csv_path.write_text("text,label\n" + "".join(f"tok{i} tok{i + 1} tok{i + 2},{'ab'[i % 2]}\n" for i in range(8)))
    common = dict(train=str(csv_path), dev=str(csv_path), text_column="text", label_column="label", epochs=1,
                  batch_size=8, sequence_length=16, jit_compile=False, verbose=0)
    for given, expected in (({}, "learning rate 0.0001, layer-wise decay 0.8"),
                            ({"learning_rate": 3e-4, "layerwise_lr_decay": 0.9}, "learning rate 0.0003, layer-wise decay 0.9")):
        lines = []
        kba.finetune("classify", run_dir / "preset", tmp_path / f"finetune{len(given)}", log=lines.append, **common, **given)
        assert any("ELECTRA preset: the reference fine-tuning recipe" in line and expected in line for line in lines), lines
        assert any(line.startswith("Fine-tuning") and expected in line for line in lines), lines


def test_electra_recipe_bad_input_one_line_each(electra_inputs, tmp_path):
    preset, _, corpus = electra_inputs
    common = ["pretrain", "--corpus", str(corpus), "--output", str(tmp_path / "run"), "--steps", "2"]
    cases = [
        (["--objective", "electra", "--preset", str(preset), "--output-bias-init", "unigram"],
         "output_bias_init 'unigram' is refused for objective 'electra'"),
        (["--preset", "electra_small"], "is an ELECTRA model, which has no next-sentence head"),
        (["--objective", "electra", "--preset", str(preset), "--pairing", "segments", "--masking", "whole_word"],
         "pairing 'segments' (ELECTRA's) is masked after batching"),
    ]
    for extra, message in cases:
        code, output = _in_process(common + extra)
        lines = [line for line in output.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1 and message in lines[0], output
    assert not (tmp_path / "run").exists()


@pytest.mark.large
@pytest.mark.skipif(not (SHARED / "corpus" / "enwiki_sample.txt").is_file(), reason="needs ../shared/data")
def test_default_recipe_keeps_the_discriminator_auc_above_0_7_after_500_steps(tmp_path):
    """`pretrain --objective electra --corpus enwiki_sample.txt` with the default recipe (rate 5e-4 scaled to batch
    32, the reference's warmup share, plain segments masked at every step, zero output bias): the AUC of every
    100-step segment after the first 500 steps is at least 0.70. About 10 minutes on 2 idle cores."""
    run_dir = tmp_path / "run"
    code, output = _in_process([
        "pretrain", "--objective", "electra", "--preset", "bert_tiny_uncased", "--corpus",
        str(SHARED / "corpus" / "enwiki_sample.txt"), "--output", str(run_dir), "--steps", "1000",
        "--max-seq-length", "64", "--checkpoint-every", "100", "--verbose", "2",
    ])
    assert code == 0, output[-3000:]
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    assert len(rows) == 10
    assert min(float(row["discriminator_auc"]) for row in rows[5:]) >= 0.70
    assert all(0 <= float(row["generator_mlm_accuracy"]) <= 1 for row in rows)
