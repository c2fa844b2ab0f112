"""`pretrain --objective ltr` through the entry point: a tiny causal model learns a made-up corpus whose next word
is predictable (words counting up), writes `lm_accuracy` to `metrics.csv`, and leaves a causal preset that the
run's `run_config.json` ties to its switches."""

import csv
import json

import numpy as np
import pytest

from keras_bert_app import cli

WORDS = [f"w{i}" for i in range(30)]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    from tests.tasks.tiny_presets import SPECIALS, write_tiny_preset

    root = tmp_path_factory.mktemp("ltr")
    preset = write_tiny_preset(root / "preset", SPECIALS + WORDS, max_sequence_length=32)
    rng = np.random.default_rng(0)
    documents = []
    for _ in range(60):
        start = int(rng.integers(len(WORDS)))
        sentences = [" ".join(WORDS[(start + 8 * s + i) % len(WORDS)] for i in range(8)) for s in range(3)]
        documents.append("\n".join(sentences))
    corpus = root / "corpus.txt"
    corpus.write_text("\n\n".join(documents) + "\n")
    return preset, corpus


def test_ltr_learns_next_tokens_and_writes_a_causal_preset(inputs, tmp_path, capsys):
    preset, corpus = inputs
    run = tmp_path / "run"
    arguments = ["pretrain", "--objective", "ltr", "--preset", str(preset), "--corpus", str(corpus),
                 "--output", str(run), "--steps", "60", "--batch-size", "16", "--max-seq-length", "24",
                 "--learning-rate", "1e-2", "--warmup-steps", "5", "--checkpoint-every", "20",
                 "--output-bias-init", "unigram", "--adam-beta2", "0.98", "--jit-compile", "false",
                 "--verbose", "0", "--seed", "1", "--peak-tflops", "1"]
    assert cli.main(arguments) == 0
    out = capsys.readouterr().out
    assert "next-token targets" in out  # the unigram bias counted the next-token targets
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    assert [float(row["lm_accuracy"]) for row in rows][-1] > 0.6  # chance: 1/30; "w_i -> w_i+1" is most tokens
    assert float(rows[-1]["loss"]) < float(rows[0]["loss"])
    config = json.loads((run / "preset" / "config.json").read_text())
    assert config["encoder"]["causal"] is True
    assert (run / "preset" / "left_to_right_pretrainer.weights.h5").is_file()
    run_config = json.loads((run / "run_config.json").read_text())
    assert (run_config["objective"], run_config["adam_beta2"], run_config["corruption"]) == ("ltr", 0.98, None)

    # The same command again: finished. Another beta2: refused in one line, naming it.
    assert cli.main(arguments) == 0
    assert "already finished" in capsys.readouterr().out
    arguments[arguments.index("0.98")] = "0.999"
    assert cli.main(arguments) == 2
    assert "adam_beta2: 0.98 there, 0.999 now" in capsys.readouterr().err
