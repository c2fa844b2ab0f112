"""Fine-tuning from an ALBERT preset (SentencePiece tokenizer, shared layers, factorized embeddings), by the command line."""

import json

import keras
import pytest

from keras_bert_app import cli
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.preprocessing.sentencepiece_tokenizer import SentencePieceTokenizer
from tests.preprocessing.sentencepiece_models import train_model


def _albert_preset(folder, lines):
    tokenizer = SentencePieceTokenizer(train_model(folder.parent / "spiece.model", lines, vocabulary_size=400))
    tokenizer.save_to_preset(folder)
    keras.utils.set_random_seed(0)
    BertEncoder(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
        max_sequence_length=32, embedding_dim=8, num_groups=1,
    ).save_to_preset(folder)
    return tokenizer


def test_classify_and_predict_from_an_albert_preset(tmp_path, enwiki_lines, capsys):
    tokenizer = _albert_preset(tmp_path / "albert", enwiki_lines[:500])
    texts = [line for line in enwiki_lines[500:600] if line.strip()][:12]
    (tmp_path / "train.csv").write_text("text,label\n" + "".join(
        f'"{text[:80].replace(chr(34), "")}",{"long" if len(text) > 200 else "short"}\n' for text in texts))
    assert cli.main([
        "finetune", "classify", "--train", str(tmp_path / "train.csv"), "--dev", str(tmp_path / "train.csv"),
        "--text-column", "text", "--label-column", "label", "--preset", str(tmp_path / "albert"), "--output", str(tmp_path / "topics"), "--epochs", "1",
        "--batch-size", "4", "--sequence-length", "32", "--jit-compile", "false",
    ]) == 0, capsys.readouterr().err
    run_preset = tmp_path / "topics" / "preset"
    assert (run_preset / "spiece.model").read_bytes() == (tmp_path / "spiece.model").read_bytes()
    assert json.loads((run_preset / "config.json").read_text())["tokenizer"]["type"] == "sentencepiece"
    assert cli.main(["predict", "--preset", str(run_preset), "--input", str(tmp_path / "train.csv"),
                     "--output", str(tmp_path / "predictions.jsonl")]) == 0, capsys.readouterr().err
    predictions = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert len(predictions) == len(texts) and {p["prediction"] for p in predictions} <= {"long", "short"}


@pytest.mark.large
def test_ner_from_an_albert_preset(tmp_path, enwiki_lines, capsys):
    tokenizer = _albert_preset(tmp_path / "albert", enwiki_lines[:500])
    # NER: each word's first piece carries its tag; SentencePiece pieces of a word start with "\u2581".
    words = ["Paris", "is", "in", "France", "and", "Zürich", "is", "not"]
    tags = ["B-LOC", "O", "O", "B-LOC", "O", "B-LOC", "O", "O"]
    (tmp_path / "ner.txt").write_text("\n\n".join(["\n".join(f"{w} {t}" for w, t in zip(words, tags))] * 4) + "\n")
    assert cli.main([
        "finetune", "ner", "--train", str(tmp_path / "ner.txt"), "--dev", str(tmp_path / "ner.txt"),
        "--preset", str(tmp_path / "albert"), "--output", str(tmp_path / "ner"), "--epochs", "1",
        "--batch-size", "4", "--sequence-length", "32", "--jit-compile", "false",
    ]) == 0, capsys.readouterr().err
    assert "f1" in json.dumps(json.loads((tmp_path / "ner" / "metrics.json").read_text())).lower()
    first_pieces = [tokenizer.id_to_token(ids[0]) for ids in tokenizer(words).to_list()]
    assert all(piece.startswith("\u2581") for piece in first_pieces), first_pieces
