"""Pretraining data and pretraining from an ALBERT preset (SentencePiece), through the command line.

`create-pretraining-data --preset` and `pretrain --corpus` tokenize with the preset's own tokenizer; whole-word
and n-gram masking group a `▁` piece with the letter pieces after it (ALBERT's `_is_start_piece_sp` reading).
The SentencePiece model is trained on Wikipedia lines; the corpus is later lines of the same sample.
"""

import json

import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.data.masking import continuation_flags

SPACE = "\u2581"


def test_continuation_flags_wordpiece_and_sentencepiece():
    wordpiece = ["[PAD]", "[UNK]", "[CLS]", "the", "##s", "##ing", "\u2581odd"]
    assert continuation_flags(wordpiece).tolist() == [False, False, False, False, True, True, False]
    pieces = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]", f"{SPACE}the", "s", "ing", ",", "000", SPACE, "\u4e2d",
              "\u00e9", "e\u0301", "-"]
    assert continuation_flags(pieces).tolist() == [
        False, False, False, False, False, False, True, True, False, False, False, False, True, True, False,
    ]


@pytest.fixture(scope="module")
def albert(tmp_path_factory, enwiki_lines):
    from tests.training.test_finetune_albert import _albert_preset

    root = tmp_path_factory.mktemp("albert_data")
    tokenizer = _albert_preset(root / "albert", enwiki_lines[:500])
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(enwiki_lines[1000:1400]) + "\n", encoding="utf-8")
    return root / "albert", tokenizer, corpus


def _records(folder):
    import tensorflow as tf

    from keras_bert_app.data.pretraining_records import parse_features

    files = sorted(str(path) for path in folder.glob("*.tfrecord"))
    spec = parse_features(32, 6)
    return [{k: v.numpy() for k, v in tf.io.parse_single_example(raw, spec).items()}
            for raw in tf.data.TFRecordDataset(files)]


def _letter_words(pieces):
    """Spans `[start, end)` of words of several pieces: a `▁` piece, then pieces of letters only (what a test can
    tell from the text alone: the letters of one space-delimited word)."""
    spans, start = [], None
    for index, piece in enumerate(pieces + [SPACE]):
        continues = not piece.startswith(SPACE) and piece.isalpha()
        if not continues:
            if start is not None and index - start > 1:
                spans.append((start, index))
            start = index if piece.startswith(SPACE) and piece[1:].isalpha() else None
    return spans


def _whole_fraction(records, vocabulary):
    touched = whole = 0
    for record in records:
        ids = record["input_ids"].copy()
        weights = record["masked_lm_weights"] > 0
        positions = record["masked_lm_positions"][weights]
        ids[positions] = record["masked_lm_ids"][weights]
        pieces = [vocabulary[i] for i in ids[: int(record["input_mask"].sum())]]
        masked = set(positions.tolist())
        for start, end in _letter_words(pieces):
            hit = sum(position in masked for position in range(start, end))
            touched += hit > 0
            whole += hit == end - start
    return whole / touched, touched


def test_create_pretraining_data_from_an_albert_preset_masks_whole_words(albert, tmp_path, capsys):
    preset, tokenizer, corpus = albert
    fractions = {}
    # The corpus' SentencePiece 4-grams (WordPiece ids would hold none of them).
    lines = [line for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    grams = {tuple(ids[i : i + 4]) for ids in map(lambda line: tokenizer(line).numpy().tolist(), lines)
             for i in range(len(ids) - 3)}
    for masking in ("whole_word", "token"):
        output = tmp_path / masking
        assert cli.main(["create-pretraining-data", "--input", str(corpus), "--output", str(output), "--preset",
                         str(preset), "--masking", masking, "--pairing", "sop", "--max-seq-length", "32",
                         "--max-predictions-per-seq", "6", "--dupe-factor", "2", "--seed", "3",
                         "--workers", "1"]) == 0, capsys.readouterr().err
        records = _records(output)
        found = [any(tuple(ids[i : i + 4]) in grams for i in range(1, len(ids) - 4)) for ids in map(_unmasked, records)]
        assert np.mean(found) > 0.9  # SentencePiece ids, not WordPiece
        fractions[masking] = _whole_fraction(records, tokenizer.get_vocabulary())
    assert fractions["whole_word"][1] > 100 and fractions["whole_word"][0] == 1.0
    assert fractions["token"][0] < 0.8  # token masking splits words: the check can fail


def _unmasked(record):
    """The record's ids with the masked ones put back, up to its length."""
    ids = record["input_ids"].copy()
    weights = record["masked_lm_weights"] > 0
    ids[record["masked_lm_positions"][weights]] = record["masked_lm_ids"][weights]
    return ids[: int(record["input_mask"].sum())].tolist()


def test_create_pretraining_data_options_of_the_tokenizer(albert, tmp_path, capsys):
    preset, _, corpus = albert
    common = ["create-pretraining-data", "--input", str(corpus), "--output", str(tmp_path / "out")]
    assert cli.main([*common, "--preset", str(preset), "--no-lowercase"]) == 2
    assert "--lowercase/--no-lowercase go with --vocab" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:  # argparse: one of them, not both
        cli.main([*common, "--preset", str(preset), "--vocab", str(corpus)])
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_pretrain_on_a_corpus_from_an_albert_preset_writes_an_albert_preset(albert, tmp_path, capsys):
    from keras_bert_app.models.bert_pretrainer import BertPretrainer
    from keras_bert_app.preprocessing.preset_tokenizer import tokenizer_from_preset
    from keras_bert_app.preprocessing.sentencepiece_tokenizer import SentencePieceTokenizer

    preset, tokenizer, corpus = albert
    run = tmp_path / "run"
    assert cli.main(["pretrain", "--objective", "mlm_sop", "--preset", str(preset), "--corpus", str(corpus),
                     "--whole-word-masking", "--output", str(run), "--steps", "6", "--batch-size", "8",
                     "--max-seq-length", "32", "--max-predictions", "6", "--checkpoint-every", "3",
                     "--jit-compile", "false", "--verbose", "0", "--peak-tflops", "1"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "Done: 6 steps." in out
    rows = (run / "metrics.csv").read_text().splitlines()  # a header and two checkpoints' rows
    assert len(rows) == 3 and np.isfinite(float(rows[-1].split(",")[1]))
    loaded = tokenizer_from_preset(run / "preset")
    assert isinstance(loaded, SentencePieceTokenizer) and loaded.get_vocabulary() == tokenizer.get_vocabulary()
    assert (run / "preset" / "spiece.model").read_bytes() == (preset.parent / "spiece.model").read_bytes()
    config = json.loads((run / "preset" / "config.json").read_text())
    assert config["encoder"]["embedding_dim"] == 8 and config["encoder"]["num_groups"] == 1
    assert BertPretrainer.from_preset(run / "preset").next_sentence_head is not None
