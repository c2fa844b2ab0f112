"""The switches of the paper's ablations and the successors' recipes in `kba.pretrain`: `corruption` (Table 8's
masking procedures) on every data path, `adam_beta2` / `adam_epsilon` reaching the optimizer, and their one-line
errors. The masking shares are measured on real text (the Wikipedia sample)."""

import dataclasses

import numpy as np
import pytest

from keras_bert_app import cli, errors

WIKIPEDIA = "../shared/data/corpus/enwiki_sample.txt"
VOCABULARY = "../shared/data/vocab/bert_uncased_vocab.txt"
CORPUS_LINES = 1500


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A tiny encoder on BERT's uncased vocabulary, the head of the Wikipedia sample, and its nsp records."""
    from keras_bert_app.data.create_pretraining_data import create_pretraining_data
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer
    from tests.tasks.tiny_presets import write_tiny_preset

    root = tmp_path_factory.mktemp("switches")
    preset = write_tiny_preset(root / "preset", VOCABULARY, max_sequence_length=64)
    with open(WIKIPEDIA, encoding="utf-8") as file:
        lines = [next(file) for _ in range(CORPUS_LINES)]
    corpus = root / "wiki.txt"
    corpus.write_text("".join(lines), encoding="utf-8")
    create_pretraining_data(str(corpus), str(root / "records"), BertTokenizer.from_preset(preset), pairing="nsp",
                            max_seq_length=64, max_predictions_per_seq=10, dupe_factor=1, progress=False)
    return preset, corpus, str(root / "records" / "*.tfrecord")


def _settings(preset, output, **arguments):
    """The settings `kba.pretrain` would train with (checked, the data's shape read), and the resolved preset."""
    from keras_bert_app.convert import resolve
    from keras_bert_app.training.pretrain_settings import checked_settings
    from keras_bert_app.training.pretraining_inputs import data_shape

    defaults = dict(
        data=None, corpus=None, batch_size=32, learning_rate=None, warmup_steps=None, optimizer="adamw",
        weight_decay=0.01, accumulation_steps=1, strategy="auto", tpu=None, mixed_precision=False,
        jit_compile=False, next_sentence_prediction=True, max_seq_length=64, max_predictions=None,
        checkpoint_every=None, seed=1, output_bias_init="zeros", dropout=None, peak_tflops=None, verbose=0, log=None,
    )
    settings = checked_settings(preset=str(preset), output=output, steps=10, **{**defaults, **arguments})
    resolved = resolve.resolve_preset(settings.preset)
    return dataclasses.replace(settings, **data_shape(settings, resolved.config["encoder"])), resolved


def _shares(settings, resolved):
    """Shares of the real masked positions holding [MASK], their own token and another token, over one pass."""
    from keras_bert_app.training.pretraining_inputs import pretraining_batches

    mask_id = resolved.vocabulary_path.read_text(encoding="utf-8").splitlines().index("[MASK]")
    counts = np.zeros(3)
    for x, y, sample_weight in pretraining_batches(settings, resolved, repeat=False).as_numpy_iterator():
        real = sample_weight["mlm"] > 0
        tokens = np.take_along_axis(x["token_ids"], x["mask_positions"], axis=1)[real]
        is_mask, is_same = tokens == mask_id, tokens == y["mlm"][real]
        counts += [is_mask.sum(), (is_same & ~is_mask).sum(), (~is_mask & ~is_same).sum()]
    return counts / counts.sum(), int(counts.sum())


def _assert_shares(found, num_positions, mask, random):
    expected = np.clip([mask, 1 - mask - random, random], 0, 1)
    # Four standard errors of a share, and a random token that happens to be the original (1 in 30,522).
    tolerance = 4 * np.sqrt(expected * (1 - expected) / num_positions) + 1e-3
    assert np.all(np.abs(found - expected) <= tolerance), (found, expected, tolerance, num_positions)


@pytest.mark.parametrize(
    ("source", "objective", "corruption"),
    [
        ("corpus", "mlm", (1.0, 0.0)),  # packed once, masked after batching: the paper's 100/0/0
        ("corpus", "mlm", (0.8, 0.0)),  # 80/20/0 (MASK/SAME/RND)
        ("corpus", "mlm_nsp", (0.8, 0.0)),  # pairs drawn pair by pair, masked 80/10/10, then drawn again
        ("records", "mlm_nsp", (0.8, 0.2)),  # the records' baked 80/10/10 drawn again: 80/0/20
        ("records", "mlm_nsp", None),  # the records' own 80/10/10
        ("corpus", "mlm", None),  # BERT's 80/10/10 by default
    ],
)
def test_corruption_shares_on_wikipedia(inputs, tmp_path, source, objective, corruption):
    preset, corpus, records = inputs
    data = {"corpus": str(corpus)} if source == "corpus" else {"data": records, "max_seq_length": None}
    settings, resolved = _settings(preset, tmp_path / "run", objective=objective, corruption=corruption, **data)
    found, num_positions = _shares(settings, resolved)
    assert num_positions > 2000
    _assert_shares(found, num_positions, *(corruption or (0.8, 0.1)))


@pytest.mark.parametrize("optimizer", ["adamw", "lamb"])
def test_the_optimizer_gets_beta2_and_epsilon(inputs, tmp_path, optimizer):
    from keras_bert_app.training.pretrain import _build_pretrainer

    preset, corpus, _ = inputs
    settings, resolved = _settings(preset, tmp_path / "run", corpus=str(corpus), optimizer=optimizer,
                                   adam_beta2=0.98, adam_epsilon=1e-8)
    built = _build_pretrainer(settings, resolved, resuming=False).optimizer
    assert (built.beta_2, built.epsilon, built.beta_1) == (0.98, 1e-8, 0.9)
    settings, resolved = _settings(preset, tmp_path / "run", corpus=str(corpus), optimizer=optimizer)
    default = _build_pretrainer(settings, resolved, resuming=False).optimizer
    assert (default.beta_2, default.epsilon) == (0.999, 1e-6)  # BERT's, as before the switches


@pytest.mark.parametrize(
    ("arguments", "argument", "message"),
    [
        ({"corruption": (0.9, 0.2)}, "corruption", "at most 1"),
        ({"corruption": (1.5, 0.0)}, "corruption", "<= 1"),
        ({"corruption": (-0.1, 0.0)}, "corruption", ">= 0"),
        ({"corruption": (0.8,)}, "corruption", "pair"),
        ({"corruption": (0.8, 0.1), "objective": "ltr"}, "corruption", "ltr"),
        ({"corruption": (0.8, 0.1), "whole_word_masking": True}, "corruption", "per word"),
        ({"adam_beta2": 1.0}, "adam_beta2", r"\[0, 1\)"),
        ({"adam_epsilon": 0.0}, "adam_epsilon", "> 0"),
    ],
)
def test_bad_switches_are_refused(inputs, tmp_path, arguments, argument, message):
    preset, corpus, _ = inputs
    with pytest.raises((errors.ArgumentError, errors.ArgumentTypeError), match=message) as raised:
        _settings(preset, tmp_path / "run", corpus=str(corpus), **arguments)
    assert raised.value.argument == argument


def test_command_line_switches(inputs, tmp_path, capsys):
    preset, corpus, _ = inputs
    base = ["pretrain", "--preset", str(preset), "--corpus", str(corpus), "--output", str(tmp_path / "run"),
            "--steps", "2"]
    assert cli.main([*base, "--corruption", "0.8;0.1"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "keras-bert-app pretrain: error: --corruption takes two shares MASK,RND such as 0.8,0.1; got '0.8;0.1'."
    ]
    assert cli.main([*base, "--objective", "ltr", "--corruption", "1,0"]) == 2
    assert "refused for objective 'ltr'" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
    with pytest.raises(SystemExit):
        cli.main(["pretrain", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for default in ("adamw (BERT, RoBERTa) or lamb (ALBERT); default adamw", "(default 0.01)", "(default 0.999,",
                    "(default 1e-6,", "(default 12345)", "--corpus: default 128", "Default: the objective's (0.8,0.1;",
                    "ltr: left-to-right LM"):
        assert default in shown, default


def test_corruption_share_tolerance_catches_a_wrong_share():
    """The tolerance of `_assert_shares` is tight enough to tell 80/10/10 from 80/20/0 at the positions measured."""
    with pytest.raises(AssertionError):
        _assert_shares(np.array([0.8, 0.1, 0.1]), 2000, 0.8, 0.0)


@pytest.mark.parametrize("source", ["records", "corpus"])
def test_ltr_reads_the_text_uncorrupted_with_next_token_labels(inputs, tmp_path, source):
    from keras_bert_app.training.pretraining_inputs import pretraining_batches

    preset, corpus, records = inputs
    data = {"corpus": str(corpus), "pairing": "nsp"} if source == "corpus" else {"data": records,
                                                                                 "max_seq_length": None}
    settings, resolved = _settings(preset, tmp_path / "run", objective="ltr", **data)
    mask_id = resolved.vocabulary_path.read_text(encoding="utf-8").splitlines().index("[MASK]")
    for x, y, sample_weight in pretraining_batches(settings, resolved, repeat=False).take(3).as_numpy_iterator():
        assert sorted(x) == ["padding_mask", "segment_ids", "token_ids"]
        assert not np.any(x["token_ids"] == mask_id)  # the masked LM's 80% [MASK] undone
        np.testing.assert_array_equal(y["lm"][:, :-1], x["token_ids"][:, 1:])
        np.testing.assert_array_equal(sample_weight["lm"][:, :-1], x["padding_mask"][:, 1:])
        assert not sample_weight["lm"][:, -1].any()
