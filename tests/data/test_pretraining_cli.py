"""`keras-bert-app create-pretraining-data` end to end on a slice of the
Wikipedia sample: reproducible whatever the workers, safe with old output,
clear on bad input."""

import json
import pathlib

import pytest

from keras_bert_app import cli, errors
from keras_bert_app.data.create_pretraining_data import create_pretraining_data


@pytest.fixture(scope="module")
def small_corpus(shared_data, tmp_path_factory):
    """The first 12 articles of the Wikipedia sample."""
    text = (shared_data / "corpus" / "enwiki_sample.txt").read_text(encoding="utf-8")
    documents = text.split("\n\n")[:12]
    path = tmp_path_factory.mktemp("corpus") / "wiki.txt"
    path.write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def vocab(shared_data):
    return str(shared_data / "vocab" / "bert_uncased_vocab.txt")


@pytest.fixture(scope="module")
def tokenizer(vocab):
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    return BertTokenizer(vocabulary=vocab)


def create(corpus, output, vocab, *extra):
    return cli.main([
        "create-pretraining-data", "--input", str(corpus), "--output", str(output),
        "--vocab", vocab, "--max-seq-length", "64", "--max-predictions-per-seq", "10",
        "--dupe-factor", "2", "--seed", "3", *extra,
    ])


def generate(corpus, output, tokenizer, **kwargs):
    """The command's work without its per-run tokenizer start-up."""
    options = dict(max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2, seed=3, progress=False)
    return create_pretraining_data(str(corpus), str(output), tokenizer, **{**options, **kwargs})


def shard_bytes(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.glob("*.tfrecord"))}


def test_identical_output_whatever_the_workers(small_corpus, vocab, tokenizer, tmp_path, capsys):
    import tensorflow as tf

    # The command passes its --vocab file as `tokenizer`; `generate` passes a BertTokenizer.
    assert create(small_corpus, tmp_path / "one", vocab, "--workers", "1", "--num-shards", "3") == 0
    printed = capsys.readouterr().out
    assert "12 documents" in printed and "IsNext fraction" in printed
    generate(small_corpus, tmp_path / "two", tokenizer, workers=2, num_shards=3)
    one, two = shard_bytes(tmp_path / "one"), shard_bytes(tmp_path / "two")
    assert list(one) == [f"pretraining-{i:05d}-of-00003.tfrecord" for i in range(3)]
    assert one == two
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == sorted(one) + ["pretraining_data.json"]
    summary = json.loads((tmp_path / "one" / "pretraining_data.json").read_text())
    # Records parse with the original feature spec; the summary counts them.
    spec = {
        "input_ids": tf.io.FixedLenFeature([64], tf.int64),
        "input_mask": tf.io.FixedLenFeature([64], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([64], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([10], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([10], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([10], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }
    files = [str(tmp_path / "one" / name) for name in one]
    records = tf.data.TFRecordDataset(files).batch(10_000).get_single_element()
    parsed = {k: v.numpy() for k, v in tf.io.parse_example(records, spec).items()}
    assert len(parsed["input_ids"]) == summary["instances"]
    assert abs((parsed["next_sentence_labels"] == 0).mean() - summary["is_next_fraction"]) < 1e-9
    assert parsed["input_mask"].sum() == summary["tokens"]
    # A different seed gives different data.
    generate(small_corpus, tmp_path / "other", tokenizer, num_shards=3, seed=4)
    assert shard_bytes(tmp_path / "other") != one


def test_old_shards_are_never_silently_replaced(small_corpus, tokenizer, tmp_path):
    generate(small_corpus, tmp_path, tokenizer, num_shards=2)
    before = shard_bytes(tmp_path)
    with pytest.raises(FileExistsError, match=r"already holds 2 \*.tfrecord"):
        generate(small_corpus, tmp_path, tokenizer, num_shards=2, seed=9)
    assert shard_bytes(tmp_path) == before
    generate(small_corpus, tmp_path, tokenizer, num_shards=1, overwrite=True)
    assert list(shard_bytes(tmp_path)) == ["pretraining-00000-of-00001.tfrecord"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_missing_vocabulary_is_one_line(small_corpus, tmp_path, capsys):
    assert create(small_corpus, tmp_path / "out", str(tmp_path / "missing.txt")) == 2
    error = capsys.readouterr().err
    assert "Vocabulary file" in error and len(error.strip().splitlines()) == 1


def test_bad_corpora(tokenizer, tmp_path):
    def error_of(content):
        corpus = tmp_path / "corpus.txt"
        corpus.write_bytes(content)
        with pytest.raises((ValueError, FileNotFoundError)) as error:
            generate(corpus, tmp_path / "out", tokenizer)
        return str(error.value)

    assert "holds 1 document" in error_of(b"First sentence here.\nSecond sentence here.\n")
    assert "holds no document" in error_of(b"\n\n\n")
    assert "holds no document" in error_of(b"")
    assert "corpus.txt:3: not valid UTF-8" in error_of(b"Good line.\n\nBad \xc3\x28 line.\n")
    with pytest.raises(FileNotFoundError, match="matches no file"):
        generate(tmp_path / "*.nothing", tmp_path / "out", tokenizer)
    assert not (tmp_path / "out").exists()


def test_one_sentence_documents_and_a_long_line(tokenizer, tmp_path):
    corpus = tmp_path / "short.txt"
    long_line = "word " * 200_000  # 1 MB
    corpus.write_text("\n\n".join(["Only one sentence.", "Another lonely one.", long_line, "Last."]) + "\n")
    summary = generate(corpus, tmp_path / "out", tokenizer)
    assert summary["documents"] == 4
    # One-sentence documents always get a random next sentence.
    assert summary["is_next_fraction"] < 0.5


def test_readme_command_line(small_corpus, vocab, tmp_path, monkeypatch, capsys):
    """README: `keras-bert-app create-pretraining-data --input corpus/*.txt --output data/ --vocab vocab.txt
    --max-seq-length 128 --max-predictions-per-seq 20 --dupe-factor 10 --workers 2`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus").mkdir()
    documents = small_corpus.read_text(encoding="utf-8").split("\n\n")[:4]
    (tmp_path / "corpus" / "a.txt").write_text("\n\n".join(documents[:2]), encoding="utf-8")
    (tmp_path / "corpus" / "b.txt").write_text("\n\n".join(documents[2:]), encoding="utf-8")
    # A small vocabulary (the first 3,000 tokens, special ones included) keeps the tokenizer's start-up short.
    tokens = pathlib.Path(vocab).read_text(encoding="utf-8").splitlines()[:3000]
    (tmp_path / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    files = sorted(str(path.relative_to(tmp_path)) for path in (tmp_path / "corpus").glob("*.txt"))  # the shell's glob
    assert cli.main([
        "create-pretraining-data", "--input", *files, "--output", "data/", "--vocab", "vocab.txt",
        "--max-seq-length", "128", "--max-predictions-per-seq", "20", "--dupe-factor", "10", "--workers", "2",
    ]) == 0
    assert "4 documents" in capsys.readouterr().out
    summary = json.loads((tmp_path / "data" / "pretraining_data.json").read_text())
    assert summary["input_files"] == ["corpus/a.txt", "corpus/b.txt"] and summary["dupe_factor"] == 10
    assert summary["max_seq_length"] == 128 and summary["max_predictions_per_seq"] == 20
    assert list(shard_bytes(tmp_path / "data")) == ["pretraining-00000-of-00001.tfrecord"]


def test_the_public_name_is_the_stage_function():
    import keras_bert_app as kba

    # (A vocabulary file as `tokenizer` gives the bytes of a BertTokenizer: the command passes
    # its --vocab file, test_identical_output_whatever_the_workers compares it with a tokenizer.)
    assert kba.create_pretraining_data is create_pretraining_data


@pytest.mark.parametrize(
    "change, error_class, argument",
    [
        ({"max_seq_length": "64"}, errors.ArgumentTypeError, "max_seq_length"),
        ({"max_seq_length": 4}, errors.ArgumentError, "max_seq_length"),
        ({"masked_lm_prob": 1.0}, errors.ArgumentError, "masked_lm_prob"),
        ({"dupe_factor": 0}, errors.ArgumentError, "dupe_factor"),
        ({"workers": 2.0}, errors.ArgumentTypeError, "workers"),
        ({"tokenizer": 3}, errors.ArgumentTypeError, "tokenizer"),
        ({"tokenizer": "missing_vocab.txt"}, errors.MissingFileError, "tokenizer"),
        ({"input_files": "missing_corpus.txt"}, errors.MissingFileError, "input_files"),
        ({"input_files": "*.nothing"}, errors.MissingFileError, "input_files"),
        ({"output_dir": 5}, errors.ArgumentTypeError, "output_dir"),
    ],
)
def test_bad_arguments_raise_one_typed_error_naming_the_argument(small_corpus, tokenizer, tmp_path, monkeypatch,
                                                                  change, error_class, argument):
    monkeypatch.chdir(tmp_path)
    arguments = {"input_files": str(small_corpus), "output_dir": tmp_path / "out", "tokenizer": tokenizer,
                 "progress": False, **change}
    with pytest.raises(error_class) as raised:
        create_pretraining_data(**arguments)
    assert raised.value.argument == argument and argument in str(raised.value)
    assert not (tmp_path / "out").exists()


def test_a_cased_vocabulary_keeps_the_texts_case_unless_told(small_corpus, shared_data, tmp_path, capsys):
    """With --vocab and no --lowercase/--no-lowercase, the casing is the vocabulary's: BERT's cased one (its
    capitalised pieces would never match lowercased text) keeps the case; the uncased and the Chinese ones
    (whose only capitals are `<S>` and `<T>`) lowercase."""
    import tensorflow as tf

    from keras_bert_app.convert.weight_map import vocabulary_is_lowercase

    vocabularies = shared_data / "vocab"
    assert [vocabulary_is_lowercase(vocabularies / f"bert_{name}_vocab.txt") for name in ("uncased", "chinese", "cased")
            ] == [True, True, False]
    cased = str(vocabularies / "bert_cased_vocab.txt")
    the = pathlib.Path(cased).read_text(encoding="utf-8").split("\n").index("The")

    def ids(output):
        records = tf.data.TFRecordDataset(sorted(map(str, output.glob("*.tfrecord"))))
        feature = {"input_ids": tf.io.FixedLenFeature([64], tf.int64)}
        return {int(i) for record in records for i in tf.io.parse_single_example(record, feature)["input_ids"].numpy()}

    assert create(small_corpus, tmp_path / "kept", cased) == 0
    assert "a cased vocabulary, so the text keeps its case" in capsys.readouterr().out
    assert the in ids(tmp_path / "kept")
    assert create(small_corpus, tmp_path / "lowered", cased, "--lowercase") == 0
    assert "cased vocabulary" not in capsys.readouterr().out
    assert the not in ids(tmp_path / "lowered")


def test_more_shards_than_instances_are_written_and_said(vocab, tmp_path, capsys):
    corpus = tmp_path / "short.txt"
    corpus.write_text("One short document here.\nIt has two sentences.\n\nAnother one.\nWith two lines.\n",
                      encoding="utf-8")
    assert create(corpus, tmp_path / "out", vocab, "--num-shards", "8", "--dupe-factor", "1") == 0
    out = capsys.readouterr().out
    instances = json.loads((tmp_path / "out" / "pretraining_data.json").read_text())["instances"]
    assert 0 < instances < 8 and len(list((tmp_path / "out").glob("*.tfrecord"))) == 8
    assert f"{8 - instances} of the 8 shards hold no instance: fewer instances than --num-shards ({instances})" in out
