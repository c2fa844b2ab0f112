"""`pretrain --objective mlm_sop` and `--objective mlm`: wrong data is refused; tiny runs learn and their presets
fine-tune (`large`: about 2.5 minutes on 2 busy cores, most of it the fine-tuning runs' start-up).

The corpus is made up so that a one-layer model learns within a hundred steps: two-sentence documents, a short
sentence starting with "begin" then a long one starting with "end", words counting up (what the masked LM learns).
Which segment is the short one shows the order even before attention has learned where to look (with the
near-uniform attention of a fresh model, [CLS] sees the same average of token + position embeddings in either
order, so order from the words alone takes a tiny model far more steps: 200 steps on "begin"/"end" alone stayed
at 50%).
"""

import csv
import json

import numpy as np
import pytest

from keras_bert_app import cli, errors

WORDS = [f"w{i}" for i in range(40)]
STEPS = ["--batch-size", "16", "--learning-rate", "1e-2", "--warmup-steps", "5", "--checkpoint-every", "25",
         "--jit-compile", "false", "--verbose", "0", "--seed", "1",
         "--peak-tflops", "1"]  # no device detection: keras.distribution.list_devices() fails on PyTorch


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    from tests.tasks.tiny_presets import SPECIALS, write_tiny_preset

    return write_tiny_preset(tmp_path_factory.mktemp("objectives") / "preset", SPECIALS + ["begin", "end"] + WORDS,
                             max_sequence_length=32)


@pytest.fixture(scope="module")
def inputs(preset):
    """The tiny preset, the made-up corpus, and its sop and nsp records."""
    from keras_bert_app.data.create_pretraining_data import create_pretraining_data
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    root = preset.parent
    rng = np.random.default_rng(0)

    def sentence(cue, num_words):
        start = int(rng.integers(len(WORDS)))
        return " ".join([cue] + [WORDS[(start + i) % len(WORDS)] for i in range(num_words)])

    corpus = root / "corpus.txt"
    documents = [f"{sentence('begin', int(rng.integers(1, 3)))}\n{sentence('end', int(rng.integers(6, 10)))}"
                 for _ in range(200)]
    corpus.write_text("\n\n".join(documents) + "\n")
    tokenizer = BertTokenizer.from_preset(preset)  # one tokenizer: its first call takes seconds
    for pairing in ("sop", "nsp"):
        create_pretraining_data(str(corpus), str(root / pairing), tokenizer, pairing=pairing, max_seq_length=24,
                                max_predictions_per_seq=4, dupe_factor=4, progress=False)
    return preset, corpus, root


def _write_records(folder, pairing):
    """A few records of `pairing` (random tokens), written as `create_pretraining_data` writes them, and its summary."""
    from keras_bert_app.data.pretraining_records import SUMMARY_FILE, serialize_features, write_records_atomically

    rng = np.random.default_rng(0)
    features = {
        "input_ids": rng.integers(5, 20, (8, 16)), "input_mask": np.ones((8, 16), int),
        "segment_ids": np.zeros((8, 16), int), "masked_lm_positions": np.tile([1, 2, 3], (8, 1)),
        "masked_lm_ids": rng.integers(5, 20, (8, 3)), "masked_lm_weights": np.ones((8, 3), np.float32),
    }
    if pairing != "full_sentences":
        features["next_sentence_labels"] = rng.integers(0, 2, 8)
    folder.mkdir()
    write_records_atomically(str(folder / "pretraining-00000-of-00001.tfrecord"), serialize_features(features))
    (folder / SUMMARY_FILE).write_text(json.dumps({"pairing": pairing}))
    return str(folder / "*.tfrecord")


def _metrics(run):
    rows = csv.DictReader((run / "metrics.csv").open())
    return [{key: float(value) for key, value in row.items() if value not in ("", "NA")} for row in rows]


def _finetunes(preset, tmp_path):
    rows = ["text,label"] + [f"{'begin w1 w2' if i % 2 else 'end w3 w4'} w{i},{'a' if i % 2 else 'b'}" for i in range(8)]
    (tmp_path / "train.csv").write_text("\n".join(rows) + "\n")
    code = cli.main([
        "finetune", "classify", "--train", str(tmp_path / "train.csv"), "--dev", str(tmp_path / "train.csv"),
        "--text-column", "text", "--label-column", "label", "--preset", str(preset), "--output",
        str(tmp_path / "finetuned"), "--epochs", "1", "--batch-size", "4", "--sequence-length", "16", "--jit-compile", "false",
    ])
    return code == 0 and bool(json.loads((tmp_path / "finetuned" / "metrics.json").read_text())["dev"])


@pytest.mark.large
def test_mlm_sop_on_sop_records_learns_the_order_and_its_preset_finetunes(inputs, tmp_path, capsys):
    from keras_bert_app.models.bert_pretrainer import BertPretrainer

    preset, _, root = inputs
    run = tmp_path / "sop_run"
    assert cli.main(["pretrain", "--objective", "mlm_sop", "--preset", str(preset), "--data",
                     str(root / "sop" / "*.tfrecord"), "--output", str(run), "--steps", "100", *STEPS]) == 0
    rows = _metrics(run)
    with capsys.disabled():
        print("\nmlm_sop:", [(round(r["loss"], 3), round(r["nsp_accuracy"], 3)) for r in rows])
    assert rows[-1]["loss"] < rows[0]["loss"] and rows[-1]["mlm_loss"] < rows[0]["mlm_loss"]
    assert rows[-1]["nsp_accuracy"] > 0.75  # the SOP accuracy (the sentence head's output is named nsp)
    config = json.loads((run / "run_config.json").read_text())
    assert config["objective"] == "mlm_sop" and config["pairing"] == "sop"
    assert BertPretrainer.from_preset(run / "preset").next_sentence_head is not None
    assert _finetunes(run / "preset", tmp_path)


@pytest.mark.large
def test_mlm_on_a_corpus_packs_full_sentences_learns_and_its_preset_finetunes(inputs, tmp_path, capsys):
    from keras_bert_app.models.bert_pretrainer import BertPretrainer

    preset, corpus, _ = inputs
    run = tmp_path / "mlm_run"
    assert cli.main(["pretrain", "--objective", "mlm", "--preset", str(preset), "--corpus", str(corpus),
                     "--output", str(run), "--steps", "100", "--max-seq-length", "32", "--max-predictions", "5",
                     *STEPS]) == 0
    rows = _metrics(run)
    with capsys.disabled():
        print("\nmlm:", [(round(r["loss"], 3), round(r["mlm_accuracy"], 3)) for r in rows])
    assert rows[-1]["loss"] < rows[0]["loss"] - 0.1 and "nsp_loss" not in rows[0]
    assert rows[-1]["mlm_accuracy"] > rows[0]["mlm_accuracy"]
    assert json.loads((run / "run_config.json").read_text())["pairing"] == "full_sentences"  # mlm's default
    assert BertPretrainer.from_preset(run / "preset").next_sentence_head is None
    assert _finetunes(run / "preset", tmp_path)


def test_data_of_another_pairing_is_one_clear_error(preset, tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("begin w1 w2\nend w3 w4\n\nbegin w5\nend w6 w7\n")
    records = {pairing: _write_records(tmp_path / pairing, pairing) for pairing in ("nsp", "sop", "full_sentences")}

    def error_of(*arguments):
        code = cli.main(["pretrain", "--preset", str(preset), "--output", str(tmp_path / "run"), "--steps", "25",
                         *arguments, *STEPS])
        error = capsys.readouterr().err.strip()
        assert code == 2 and len(error.splitlines()) == 1, error
        return error

    error = error_of("--objective", "mlm_sop", "--data", records["nsp"])
    assert "pairing 'nsp'" in error and "objective 'mlm_sop'" in error and "--pairing sop" in error
    error = error_of("--data", records["sop"])  # mlm_nsp, the default
    assert "pairing 'sop'" in error and "objective 'mlm_nsp'" in error
    assert "pairing 'full_sentences'" in error_of("--objective", "mlm_sop", "--data", records["full_sentences"])
    error = error_of("--objective", "mlm_sop", "--corpus", str(corpus), "--pairing", "full_sentences")
    assert "pairing 'full_sentences' does not fit objective 'mlm_sop'" in error
    assert "applies to corpus" in error_of("--data", records["sop"], "--pairing", "sop")
    assert "objective 'mlm'" in error_of("--objective", "mlm_sop", "--no-nsp", "--corpus", str(corpus))
    assert not (tmp_path / "run").exists()


def test_records_without_a_summary_are_taken_as_their_labels_say(tmp_path):
    from keras_bert_app.data.pretraining_records import records_pairing

    with_labels = _write_records(tmp_path / "google", "nsp")
    (tmp_path / "google" / "pretraining_data.json").unlink()
    assert records_pairing([with_labels.replace("*", "pretraining-00000-of-00001")])[0] == "nsp"
    assert records_pairing([str(tmp_path / "x.tfrecord")], pair_labels=False)[0] == "full_sentences"


def test_the_objective_table_names_the_choices_and_the_pairings_it_reads():
    from keras_bert_app.data.pretraining_instances import PAIRINGS
    from keras_bert_app.training.objectives import ALL_PAIRINGS, OBJECTIVES, get_objective

    # The records' pairings, and ELECTRA's plain segments (a corpus only).
    assert {"mlm_nsp", "mlm_sop", "mlm", "electra"} <= set(OBJECTIVES) and ALL_PAIRINGS == (*PAIRINGS, "segments")
    assert get_objective("mlm_sop").pairings == ("sop",) and get_objective("mlm_nsp").pairings == ("nsp",)
    assert set(get_objective("mlm").pairings) == set(ALL_PAIRINGS) and get_objective("mlm").pairings[0] == "full_sentences"
    assert get_objective("electra").pairings[0] == "segments" and get_objective("electra").corruption == (0.85, 0.0)
    with pytest.raises(errors.ArgumentError, match="objective"):
        get_objective("sop")
