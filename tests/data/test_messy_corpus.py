"""Pretraining corpora as users bring them, through the command line (`build-vocab`, `create-pretraining-data`,
`pretrain --corpus`): another encoding, `.gz` files (sound and corrupt), bare-CR line ends, a corpus too small
for one batch.

Each is read as meant, or refused with one line naming the file and the line (exit code 2), never learned from
silently as replacement characters or compressed bytes, and no run says it is done after training on nothing.
"""

import gzip

import pytest

from keras_bert_app import cli
from tests.data.test_messy_input import assert_one_line, run_cli
from tests.tasks.tiny_presets import SPECIALS, write_tiny_preset

WORDS = [f"w{i}" for i in range(30)]
TEXT = "Der Bär aß süße Früchte.\nÜber die Brücke.\n\nLes élèves étudient à l'école.\n"


def build_vocab(corpus, output):
    return ["build-vocab", "--corpus", corpus, "--vocab-size", "200", "--output", output]


def vocab_error(code, err, pattern):
    """`build-vocab` says what it starts on stderr, then the error: one line."""
    assert_one_line(code, "\n".join(line for line in err.splitlines() if "build-vocab: learning" not in line), pattern)


@pytest.mark.parametrize("encoding, line", [("latin-1", 1), ("utf-16", 1), ("gbk", 2)])
def test_build_vocab_refuses_text_that_is_not_utf8_naming_file_and_line(tmp_path, capsys, encoding, line):
    text = "plain ascii first line\n数据 中文\n" if encoding == "gbk" else TEXT
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(text.encode(encoding))
    code, _, err = run_cli(build_vocab(corpus, tmp_path / "vocab.txt"), capsys)
    vocab_error(code, err, rf"corpus\.txt:{line}: not valid UTF-8")
    assert not (tmp_path / "vocab.txt").exists()


def test_build_vocab_reads_gzip_files_as_their_text(tmp_path, capsys):
    plain, packed = tmp_path / "plain.txt", tmp_path / "packed.txt.gz"
    plain.write_text(TEXT * 12, encoding="utf-8")
    packed.write_bytes(gzip.compress((TEXT * 12).encode()))
    assert run_cli(build_vocab(plain, tmp_path / "plain_vocab.txt"), capsys)[0] == 0
    assert run_cli(build_vocab(packed, tmp_path / "packed_vocab.txt"), capsys)[0] == 0
    vocabulary = (tmp_path / "packed_vocab.txt").read_text(encoding="utf-8").split("\n")
    assert "bar" in vocabulary and "ecole" in vocabulary  # lower-cased, accents stripped: the words, not gzip bytes
    assert vocabulary == (tmp_path / "plain_vocab.txt").read_text(encoding="utf-8").split("\n")


def test_a_corrupt_gzip_file_is_one_line(tmp_path, capsys):
    corpus = tmp_path / "broken.txt.gz"
    corpus.write_bytes(gzip.compress((TEXT * 50).encode())[:-40])  # cut short, as by an interrupted download
    code, _, err = run_cli(build_vocab(corpus, tmp_path / "vocab.txt"), capsys)
    vocab_error(code, err, r"broken\.txt\.gz:\d+: cannot read")


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    return write_tiny_preset(tmp_path_factory.mktemp("messy_corpus") / "preset", SPECIALS + WORDS,
                             max_sequence_length=32)


def _documents(count):
    return [" ".join(WORDS[(d + i) % 30] for i in range(5)) + "\n" + " ".join(WORDS[(d + i) % 30] for i in range(7, 12))
            for d in range(count)]


def _records(folder):
    import tensorflow as tf

    return [bytes(r.numpy()) for f in sorted(folder.glob("*.tfrecord")) for r in tf.data.TFRecordDataset(str(f))]


def test_bare_cr_line_ends_are_lines(preset, tmp_path, capsys):
    documents = _documents(12)
    lf, cr = tmp_path / "lf.txt", tmp_path / "cr.txt"
    lf.write_bytes("\n\n".join(documents).encode() + b"\n")
    cr.write_bytes("\n\n".join(documents).replace("\n", "\r").encode() + b"\r")
    outputs = []
    for corpus in (lf, cr):
        output = tmp_path / f"records_{corpus.stem}"
        code, out, err = run_cli(["create-pretraining-data", "--input", corpus, "--output", output,
                                  "--vocab", preset / "vocab.txt", "--max-seq-length", "32",
                                  "--max-predictions-per-seq", "4", "--dupe-factor", "1", "--seed", "1"], capsys)
        assert code == 0, err
        assert "12 documents" in out, out  # not one document of one 24-sentence line
        outputs.append(_records(output))
    assert outputs[0] and outputs[0] == outputs[1]


@pytest.mark.all_backends  # Keras' JAX trainer fails its own way on data that gives no batch
def test_pretrain_on_a_corpus_smaller_than_one_batch_is_refused_not_done(preset, tmp_path, capsys):
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("\n\n".join(_documents(3)) + "\n", encoding="utf-8")
    run = tmp_path / "run"
    code, out, err = run_cli(["pretrain", "--preset", preset, "--corpus", corpus, "--output", run, "--steps", "4",
                              "--batch-size", "64", "--max-seq-length", "32", "--max-predictions", "4",
                              "--checkpoint-every", "2", "--verbose", "0",
                              "--peak-tflops", "1"], capsys)
    assert "Corpus: 3 documents, 6 sentences, 30 tokens from 1 file(s)." in out, out
    assert_one_line(code, err, r"tiny\.txt ran out after 0 of 4 batches: .* fewer than one batch of 64")
    assert "Done" not in out
    # Enough pairs for a batch: the same corpus trains its steps.
    code, out, err = run_cli(["pretrain", "--preset", preset, "--corpus", corpus, "--output", tmp_path / "ok",
                              "--steps", "4", "--batch-size", "2", "--max-seq-length", "32", "--max-predictions",
                              "4", "--checkpoint-every", "2", "--verbose", "0",
                              "--peak-tflops", "1"], capsys)
    assert code == 0, err
    assert "Done: 4 steps." in out
