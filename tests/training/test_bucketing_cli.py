"""Length buckets on the command line: `finetune classify`, `predict` and `evaluate` with and
without `--no-bucketing` give the same predictions (1e-5), in input order; bad input (an empty
text, one long example, a sequence length off the buckets, less than a batch) gets one clear line
each. (`extract-features` with buckets is checked against fixed-length encoder outputs in
test_extract_features.py.)"""

import json
import shlex

import numpy as np
import pytest

from keras_bert_app import cli
from tests.tasks.tiny_presets import write_tiny_preset

SHORT = ["The striker scored", "Shares fell", "The team won the cup", "Profits rose this year", "A late goal",
         "The bank raised rates"]
LONG = "The market closed lower after a long day of trading " * 8  # ~80 pieces: truncated at 64


def _csv(rows):
    return "text,label\n" + "".join(f"{text},{label}\n" for text, label in rows)


def _records(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _run(argv, capsys):
    code = cli.main(shlex.split(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def test_classify_with_and_without_bucketing_and_bad_input(tmp_path, shared_data, capsys, monkeypatch):
    write_tiny_preset(tmp_path / "P", shared_data / "vocab" / "bert_uncased_vocab.txt", max_sequence_length=128)
    rows = [(text, "sport" if i % 2 == 0 else "business") for i, text in enumerate(SHORT)]
    (tmp_path / "train.csv").write_text(_csv(rows + [(LONG, "business")]), encoding="utf-8")
    # Input order mixes lengths: a bucketed run sorts them, predictions must come back in this order.
    (tmp_path / "dev.csv").write_text(_csv([rows[0], (LONG, "business"), rows[1], ("", "sport"), rows[2]]),
                                      encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    out = _run(
        "finetune classify --train train.csv --dev dev.csv --text-column text --label-column label --preset P "
        "--output run --epochs 1 --batch-size 8 --sequence-length 40", capsys,
    )
    # One line for each: the long example (cut, counted), the empty text (counted, still predicted), the
    # padding (op by op on a TensorFlow CPU: to the longest example; a sequence length off the buckets where they
    # apply is in test_exact_lengths.py), less than a batch.
    assert "train: 7 examples from train.csv; 1 examples longer than 40 tokens were truncated" in out
    assert "1 examples have no tokens (empty text" in out
    assert "Padding each batch to its longest example, up to 40 tokens (the model runs op by op" in out
    assert "train: 7 examples, fewer than one batch of 8: each epoch is one step on all of them." in out
    for flags, name in (("", "bucketed"), ("--no-bucketing", "fixed")):
        _run(f"predict --preset run/preset --input dev.csv --output {name}.jsonl --batch-size 2 {flags}", capsys)
    bucketed, fixed = _records(tmp_path / "bucketed.jsonl"), _records(tmp_path / "fixed.jsonl")
    assert [record["line"] for record in bucketed] == [record["line"] for record in fixed] == [2, 3, 4, 5, 6]
    np.testing.assert_allclose([r["logits"] for r in bucketed], [r["logits"] for r in fixed], atol=1e-5)
    assert [r["prediction"] for r in bucketed] == [r["prediction"] for r in fixed]
    dev = _records(tmp_path / "run" / "dev_predictions.jsonl")  # bucketed, batches of 8
    assert [r["prediction"] for r in dev] == [r["prediction"] for r in bucketed]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["task"]["sequence_length"] == 40
    scores = json.loads(_run("evaluate --preset run/preset --input dev.csv --no-bucketing", capsys).split("\n", 1)[1])
    assert scores == pytest.approx(metrics["dev"])


def _length_ranges(dataset):
    """Per training batch of an epoch: {label: (shortest, longest) real tokens of that label's examples}."""
    ranges = []
    for inputs, labels, *_ in dataset:
        tokens, labels = np.asarray(inputs["padding_mask"]).sum(axis=-1), np.asarray(labels)
        ranges.append({int(label): (int(tokens[labels == label].min()), int(tokens[labels == label].max()))
                       for label in np.unique(labels)})
    return ranges


def test_group_by_length_makes_training_batches_of_similar_lengths(tmp_path, shared_data, capsys, monkeypatch):
    import keras

    write_tiny_preset(tmp_path / "P", shared_data / "vocab" / "bert_uncased_vocab.txt", max_sequence_length=64)
    words = "the market closed lower after a long day of trading and the team won the cup again".split()
    # The length gives the label away: sorted by length alone, a batch would hold one class.
    texts = [" ".join(words[: 1 + (i * 7) % len(words)]) for i in range(128)]
    rows = [(text, "long" if len(text.split()) > 8 else "short") for text in texts]
    (tmp_path / "train.csv").write_text(_csv(rows), encoding="utf-8")
    (tmp_path / "dev.csv").write_text(_csv(rows[:8]), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    seen = {}
    fit = keras.Model.fit

    def spy(model, *args, **kwargs):
        seen["ranges"] = _length_ranges(kwargs["x"])
        return fit(model, *args, **kwargs)

    monkeypatch.setattr(keras.Model, "fit", spy)
    command = ("finetune classify --train train.csv --dev dev.csv --text-column text --label-column label "
               "--preset P --epochs 1 --batch-size 8 --sequence-length 32 --output {} {}")
    runs = {}
    for name, flags in (("default", ""), ("grouped", "--group-by-length"), ("random", "--no-group-by-length")):
        out = _run(command.format(name, flags), capsys)
        runs[name] = seen["ranges"]
        assert ("training batches grouped by length within each class (--no-group-by-length: random)" in out) == (
            name != "random"), out
        assert json.loads((tmp_path / name / "metrics.json").read_text())["dev"]["accuracy"] >= 0
    assert "training batches of random examples (--no-group-by-length)" in out
    assert runs["default"] == runs["grouped"]  # on by default: the same seeded batches
    assert len(runs["grouped"]) == len(runs["random"]) == 16  # every example once: 128 / 8 batches either way
    # 128 examples, batch 8: groups of 4 batches (a quarter of the data, as HF), each sorted per class and cut:
    # every batch holds both classes (64 each: 4 and 4), each spanning a few of its lengths; random batches
    # each span most of them.
    assert all(len(batch) == 2 for batch in runs["grouped"]), runs["grouped"]
    grouped_span = sum(high - low for batch in runs["grouped"] for low, high in batch.values())
    random_span = sum(high - low for batch in runs["random"] for low, high in batch.values())
    assert grouped_span < random_span / 2, (runs["grouped"], runs["random"])
    code = cli.main(shlex.split(command.format("bad", "--group-by-length --no-bucketing")))
    assert code == 2 and "group_by_length needs bucketing" in capsys.readouterr().err
    assert _run(command.format("fixed", "--no-bucketing"), capsys).count("no bucketing") == 1  # no grouping to refuse
