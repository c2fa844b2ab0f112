import pytest

from keras_bert_app import cli, errors
from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer
from keras_bert_app.preprocessing.vocabulary import SPECIAL_TOKENS
from keras_bert_app.preprocessing.vocabulary import read_vocabulary
from keras_bert_app.preprocessing.vocabulary_training import build_vocabulary, train_vocabulary


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, enwiki_lines):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(enwiki_lines[:1500]) + "\n", encoding="utf-8")
    return path


def test_trained_vocabulary_round_trips_the_corpus(tmp_path, corpus):
    output = tmp_path / "vocab.txt"
    vocabulary = train_vocabulary([corpus], 2000, lowercase=True, output=output)
    assert vocabulary[: len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS)
    assert 500 < len(vocabulary) <= 2000
    assert read_vocabulary(output) == vocabulary
    tokenizer = BertTokenizer(output, lowercase=True)
    lines = corpus.read_text(encoding="utf-8").split("\n")
    ids = tokenizer(lines).flat_values.numpy()
    unknown_rate = (ids == tokenizer.unk_token_id).mean()
    assert unknown_rate < 0.005, unknown_rate
    assert "##s" in vocabulary and "the" in vocabulary


def test_cli_build_vocab_cased(tmp_path, corpus, capsys):
    output = tmp_path / "cased.txt"
    status = cli.main([
        "build-vocab", "--corpus", str(corpus), "--vocab-size", "1500",
        "--output", str(output), "--no-lowercase",
    ])
    assert status == 0
    vocabulary = read_vocabulary(output)
    assert "The" in vocabulary and vocabulary[0] == "[PAD]"
    assert "wrote" in capsys.readouterr().err


def test_cli_errors_are_one_line(tmp_path, capsys):
    status = cli.main([
        "build-vocab", "--corpus", str(tmp_path / "missing.txt"), "--vocab-size", "100",
        "--output", str(tmp_path / "v.txt"),
    ])
    assert status == 2
    error = capsys.readouterr().err
    assert "missing.txt" in error and "Traceback" not in error
    assert len([line for line in error.splitlines() if "error:" in line]) == 1
    status = cli.main([
        "build-vocab", "--corpus", str(tmp_path / "missing.txt"), "--vocab-size", "100",
        "--output", str(tmp_path / "no_such_folder" / "v.txt"),
    ])
    assert status == 2
    assert "missing.txt" in capsys.readouterr().err


def test_narrowed_threshold_search_fits_like_tensorflow_texts_in_fewer_passes(tmp_path, enwiki_lines, monkeypatch):
    """`_learn` against tensorflow-text's own bisection over the same word counts."""
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    from keras_bert_app.preprocessing import vocabulary_training

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(enwiki_lines[:300]) + "\n", encoding="utf-8")
    word_counts = vocabulary_training.corpus_word_counts([corpus])
    passes = []
    learn_with_thresh = learner.learn_with_thresh
    monkeypatch.setattr(learner, "learn_with_thresh", lambda *a: passes.append(a[1]) or learn_with_thresh(*a))

    def both(size):
        passes.clear()
        ours = vocabulary_training._learn(learner.learn, word_counts, size, 10, max_unique_chars=1000)
        ours_passes = len(passes)
        passes.clear()
        theirs = learner.learn(word_counts, size, list(SPECIAL_TOKENS), max_unique_chars=1000)
        return ours, ours_passes, theirs, len(passes)

    # A size the lowest threshold cannot reach (the quickstart's case): the
    # lowest threshold's vocabulary in one pass. tensorflow-text's bisection
    # ends there too, or one below it (it tries `lower - 1` as it closes).
    ours, ours_passes, theirs, their_passes = both(50_000)
    assert ours_passes == 1 < their_passes and passes[-1] in (9, 10)
    assert 0.9 * len(theirs) <= len(ours) <= len(theirs), (len(ours), len(theirs))
    # A reachable size: both within 5% below the target, ours in no more passes.
    size = len(ours) // 2
    ours, ours_passes, theirs, their_passes = both(size)
    assert 0.95 * size <= len(ours) <= size and 0.95 * size <= len(theirs) <= size, (size, len(ours), len(theirs))
    assert ours[: len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS)
    assert ours_passes <= their_passes, (size, ours_passes, their_passes)


def test_readme_command_line(tmp_path, corpus, monkeypatch, capsys):
    """README: `keras-bert-app build-vocab --corpus corpus/*.txt --vocab-size 8000 --output vocab.txt`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus").mkdir()
    lines = corpus.read_text(encoding="utf-8").splitlines()
    (tmp_path / "corpus" / "a.txt").write_text("\n".join(lines[:700]) + "\n", encoding="utf-8")
    (tmp_path / "corpus" / "b.txt").write_text("\n".join(lines[700:]) + "\n", encoding="utf-8")
    files = sorted(str(path.relative_to(tmp_path)) for path in (tmp_path / "corpus").glob("*.txt"))  # the shell's glob
    assert cli.main(["build-vocab", "--corpus", *files, "--vocab-size", "8000", "--output", "vocab.txt"]) == 0
    vocabulary = read_vocabulary(tmp_path / "vocab.txt")
    assert vocabulary[: len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS) and len(vocabulary) <= 8000
    assert f"wrote {len(vocabulary)} tokens to vocab.txt" in capsys.readouterr().err
    # The stage function: the same vocabulary, the written file's path back.
    import keras_bert_app as kba

    assert kba.build_vocabulary is build_vocabulary
    path = kba.build_vocabulary([tmp_path / name for name in files], tmp_path / "again.txt", vocab_size=8000)
    assert path == tmp_path / "again.txt" and read_vocabulary(path) == vocabulary
    assert train_vocabulary([tmp_path / name for name in files], 8000) == vocabulary


@pytest.mark.parametrize(
    "change, error_class, argument",
    [
        ({"corpus": "missing.txt"}, errors.MissingFileError, "corpus"),
        ({"corpus": []}, errors.ArgumentError, "corpus"),
        ({"corpus": 3}, errors.ArgumentTypeError, "corpus"),
        ({"output": "no_such_folder/vocab.txt"}, errors.MissingFileError, "output"),
        ({"output": "."}, errors.ArgumentError, "output"),
        ({"vocab_size": "8000"}, errors.ArgumentTypeError, "vocab_size"),
        ({"vocab_size": 5}, errors.ArgumentError, "vocab_size"),
        ({"lowercase": "yes"}, errors.ArgumentTypeError, "lowercase"),
    ],
)
def test_bad_arguments_raise_one_typed_error_naming_the_argument(tmp_path, corpus, monkeypatch, change, error_class,
                                                                  argument):
    monkeypatch.chdir(tmp_path)
    arguments = {"corpus": corpus, "output": "vocab.txt", "vocab_size": 1000, **change}
    with pytest.raises(error_class) as raised:
        build_vocabulary(**arguments)
    assert raised.value.argument == argument and argument in str(raised.value)
    assert not (tmp_path / "vocab.txt").exists()


def test_an_empty_corpus_is_a_data_error(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(errors.DataError, match="gave no vocabulary"):
        build_vocabulary(empty, tmp_path / "vocab.txt", vocab_size=100)
    with pytest.raises(errors.ArgumentError, match="vocabulary_size must be above 5"):
        train_vocabulary([empty], 5)
