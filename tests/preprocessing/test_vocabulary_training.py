import pytest

from keras_bert_app import cli
from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer
from keras_bert_app.preprocessing.vocabulary import SPECIAL_TOKENS
from keras_bert_app.preprocessing.vocabulary import read_vocabulary
from keras_bert_app.preprocessing.vocabulary_training import train_vocabulary


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
    assert status == 1
    assert "missing.txt" in capsys.readouterr().err


def test_narrowed_threshold_search_fits_like_tensorflow_texts_in_fewer_passes(tmp_path, enwiki_lines, monkeypatch):
    """`_learn` against tensorflow-text's own bisection over the same word counts."""
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    from keras_bert_app.preprocessing import vocabulary_training

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(enwiki_lines[:600]) + "\n", encoding="utf-8")
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
