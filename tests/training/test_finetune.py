import json

import pytest

from keras_bert_app import cli


@pytest.fixture(scope="module")
def tiny_preset(tmp_path_factory, shared_data):
    """A preset folder: the real uncased vocabulary and a 1-layer, 16-wide encoder."""
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    folder = tmp_path_factory.mktemp("tiny_preset")
    tokenizer = BertTokenizer(shared_data / "vocab" / "bert_uncased_vocab.txt", lowercase=True)
    tokenizer.save_to_preset(folder)
    encoder = BertEncoder(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=1, num_heads=2,
        hidden_dim=16, intermediate_dim=32, max_sequence_length=32,
    )
    encoder.save_to_preset(folder)
    return folder


COMMON = ["--epochs", "1", "--batch-size", "4", "--sequence-length", "16", "--learning-rate", "1e-3"]

SWAG_HEADER = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label"
SWAG_ROWS = [
    "0,v,1,x,The cook lights the stove.,She,gold,puts a pan on it.,swims across.,reads a map.,flies off.,0",
    "1,v,1,x,A boy kicks the ball.,It,gold,sings.,rolls into the goal.,cooks dinner.,sleeps.,1",
    "2,v,1,x,The dog sees a cat.,The dog,gold,writes a poem.,pays taxes.,barks at it.,melts.,2",
    "3,v,1,x,He opens the book.,He,gold,eats the moon.,drives a train.,paints a wall.,starts to read.,3",
    "4,v,1,x,She picks up the phone.,She,gold,says hello.,jumps a wall.,bakes bread.,plants a tree.,0",
]

CONLL_TRAIN = """-DOCSTART- -X- -X- O

John NNP B-NP B-PER
lives VBZ B-VP O
in IN B-PP O
Paris NNP B-NP B-LOC
. . O O

Mary NNP B-NP B-PER
Smith NNP I-NP I-PER
visited VBD B-VP O
London NNP B-NP B-LOC
"""


def run_cli(argv, capsys):
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.large
def test_swag_trains_evaluates_predicts(tmp_path, tiny_preset, capsys):
    train = tmp_path / "train.csv"
    train.write_text("\n".join([SWAG_HEADER, *SWAG_ROWS]) + "\n", encoding="utf-8")
    run = tmp_path / "run"
    code, out, err = run_cli(
        ["finetune", "swag", "--train", str(train), "--dev", str(train), "--preset", str(tiny_preset),
         "--output", str(run), *COMMON], capsys)
    assert code == 0, err
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["dev"]["examples"] == 5 and 0.0 <= metrics["dev"]["accuracy"] <= 1.0
    assert (run / "logs" / "history.csv").is_file()
    config = json.loads((run / "preset" / "config.json").read_text())
    assert config["task"]["class_name"] == "BertMultipleChoice"
    # The saved preset reproduces the run's dev figures.
    code, out, err = run_cli(["evaluate", "--preset", str(run / "preset"), "--input", str(train)], capsys)
    assert code == 0, err
    assert json.loads(out[out.index("{"):])["accuracy"] == pytest.approx(metrics["dev"]["accuracy"])
    code, _, err = run_cli(["predict", "--preset", str(run / "preset"), "--input", str(train),
                            "--output", str(tmp_path / "p.jsonl")], capsys)
    assert code == 0, err
    records = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [r["line"] for r in records] == [2, 3, 4, 5, 6]
    assert all(r["logits"][r["prediction"]] >= max(r["logits"]) - 1e-6 for r in records)


def test_ner_trains_evaluates_predicts(tmp_path, tiny_preset, capsys):
    train = tmp_path / "train.txt"
    train.write_text(CONLL_TRAIN, encoding="utf-8")
    run = tmp_path / "run"
    code, out, err = run_cli(
        ["finetune", "ner", "--train", str(train), "--dev", str(train), "--preset", str(tiny_preset),
         "--output", str(run), *COMMON], capsys)
    assert code == 0, err
    metrics = json.loads((run / "metrics.json").read_text())["dev"]
    assert metrics["num_gold"] == 4  # John, Paris, Mary Smith, London: whole spans
    predictions = [json.loads(line) for line in (run / "dev_predictions.jsonl").read_text().splitlines()]
    assert [len(p["tags"]) for p in predictions] == [5, 4]
    # Re-score the written predictions with the entity scorer: same figures.
    from keras_bert_app.data.conll import read_conll
    from keras_bert_app.evaluation.entity_f1 import entity_scores

    gold = read_conll(train).tags
    assert entity_scores(gold, [p["tags"] for p in predictions])["f1"] == pytest.approx(metrics["f1"])
    code, out, err = run_cli(["evaluate", "--preset", str(run / "preset"), "--input", str(train)], capsys)
    assert code == 0, err
    assert json.loads(out[out.index("{"):])["f1"] == pytest.approx(metrics["f1"])


@pytest.mark.large
def test_glue_mrpc(tmp_path, tiny_preset, capsys):
    rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
    rows += [f"{i % 2}\t{i}\t{i}\tThe cat sat {i}.\tA cat sat {i}." for i in range(6)]
    (tmp_path / "train.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "dev.tsv").write_text("\n".join(rows[:4]) + "\n", encoding="utf-8")
    code, out, err = run_cli(
        ["finetune", "glue", "--task", "MRPC", "--data-dir", str(tmp_path), "--preset", str(tiny_preset),
         "--output", str(tmp_path / "run"), *COMMON], capsys)
    assert code == 0, err
    dev = json.loads((tmp_path / "run" / "metrics.json").read_text())["dev"]
    assert set(dev) == {"accuracy", "f1", "examples"} and dev["examples"] == 3


@pytest.mark.parametrize(
    "train_text, dev_text, message",
    [
        ("text,label\nok,a\nfine\n", "text,label\nok,a\n", r"train.csv:3: expected 2 fields"),
        ("sentence,label\nok,a\n", "text,label\nok,a\n", r"train.csv:2: no column 'text'"),
        ("text,label\nok,a\nno,b\n", "text,label\nok,c\n", r"dev.csv:2: label 'c' is not one of \['a', 'b'\]"),
        ("text,label\nok,a\nno,b\n", "text,label\n", r"dev.csv: the dev set is empty"),
    ],
)
def test_classify_bad_input(tmp_path, tiny_preset, capsys, train_text, dev_text, message):
    (tmp_path / "train.csv").write_text(train_text, encoding="utf-8")
    (tmp_path / "dev.csv").write_text(dev_text, encoding="utf-8")
    code, _, err = run_cli(
        ["finetune", "classify", "--train", str(tmp_path / "train.csv"), "--dev", str(tmp_path / "dev.csv"),
         "--text-column", "text", "--label-column", "label", "--preset", str(tiny_preset),
         "--output", str(tmp_path / "run"), *COMMON], capsys)
    assert code == 1
    assert len(err.strip().splitlines()) == 1
    assert __import__("re").search(message, err), err


def test_conlleval_file(tmp_path, capsys):
    path = tmp_path / "out.txt"
    path.write_text("John B-PER B-PER\nSmith I-PER O\nin O O\nParis B-LOC B-LOC\n\nBob B-PER B-PER\n", encoding="utf-8")
    code, out, err = run_cli(["evaluate", "--conlleval", str(path)], capsys)
    assert code == 0, err
    scores = json.loads(out)
    # Gold: John Smith, Paris, Bob. Predicted: John (wrong span), Paris, Bob.
    assert (scores["num_gold"], scores["num_predicted"], scores["num_correct"]) == (3, 3, 2)
    assert scores["f1"] == pytest.approx(2 / 3)
