"""Which token fits: frequencies alone score 0.5, context lifts the score, and a real pretraining preset is read."""

import numpy as np
import pytest

from keras_bert_app.evaluation import token_context

VOCABULARY = 60
SPECIALS = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}
FIRST_WORD = 5


def _rows(successor, count=400, length=32, seed=7):  # not the slots' seed: the same uniforms would pick the same words
    """Rows of words with Zipf frequencies; `successor`: each word is the one after its left neighbour (cyclic)."""
    rng = np.random.default_rng(seed)
    words = np.arange(FIRST_WORD, VOCABULARY)
    zipf = 1.0 / np.arange(1, len(words) + 1)
    body = rng.choice(words, size=(count, length - 2), p=zipf / zipf.sum())
    if successor:
        for column in range(1, length - 2):
            body[:, column] = np.where(rng.random(count) < 0.9, FIRST_WORD + (body[:, column - 1] - FIRST_WORD + 1)
                                       % len(words), body[:, column])
    return np.concatenate([np.full((count, 1), SPECIALS["[CLS]"]), body, np.full((count, 1), SPECIALS["[SEP]"])],
                          axis=1).astype(np.int32)


def _frequency_head(rows):
    """Log frequencies of the words, whatever the context."""
    counts = np.bincount(rows[:, 1:-1].ravel(), minlength=VOCABULARY) + 0.5
    log_frequencies = np.log(counts / counts.sum())
    return lambda token_ids, positions: np.broadcast_to(log_frequencies, (*positions.shape, VOCABULARY))


def _successor_head(token_ids, positions):
    """Puts its mass on the word after the left neighbour when that neighbour is shown (else uniform)."""
    scores = np.zeros((*positions.shape, VOCABULARY))
    left = np.take_along_axis(token_ids, positions - 1, axis=1)
    shown = left >= FIRST_WORD
    guess = FIRST_WORD + (left - FIRST_WORD + 1) % (VOCABULARY - FIRST_WORD)
    np.put_along_axis(scores, np.where(shown, guess, 0)[..., None], np.where(shown, 10.0, 0.0)[..., None], axis=-1)
    return scores


def test_slots_skip_the_ends_and_fakes_follow_the_word_frequencies():
    rows = _rows(successor=False)
    positions, fakes = token_context.slots_and_fakes(rows, VOCABULARY, SPECIALS.values(), seed=1)
    assert positions.shape == fakes.shape == (len(rows), round(0.15 * 30))
    assert positions.min() >= 1 and positions.max() <= rows.shape[1] - 2
    assert all(len(set(row)) == len(row) for row in positions)  # distinct slots in a row
    assert fakes.min() >= FIRST_WORD  # never a special token
    # Drawn independently of the true token (same words as often as the text has them), not drawn again on a match.
    text = np.bincount(rows[:, 1:-1].ravel(), minlength=VOCABULARY) / rows[:, 1:-1].size
    drawn = np.bincount(fakes.ravel(), minlength=VOCABULARY) / fakes.size
    np.testing.assert_allclose(drawn, text, atol=0.03)
    assert (fakes == np.take_along_axis(rows, positions, axis=1)).any()


def test_a_head_that_knows_only_the_frequencies_prefers_the_true_token_half_the_time():
    rows = _rows(successor=False)
    positions, fakes = token_context.slots_and_fakes(rows, VOCABULARY, SPECIALS.values())
    result = token_context.masked_lm_context(_frequency_head(rows), rows, positions, fakes, SPECIALS["[MASK]"])
    assert result["prefers_true"] == pytest.approx(0.5, abs=0.025)  # ~1,700 slots: standard error 0.012
    # Its top-1 is the most frequent word everywhere: its accuracy is the frequency baseline's.
    assert result["masked_accuracy"] == result["frequency_accuracy"] > 0.1


def test_a_head_that_reads_the_context_prefers_the_true_token():
    rows = _rows(successor=True)
    positions, fakes = token_context.slots_and_fakes(rows, VOCABULARY, SPECIALS.values())
    result = token_context.masked_lm_context(_successor_head, rows, positions, fakes, SPECIALS["[MASK]"])
    frequencies_only = token_context.masked_lm_context(_frequency_head(rows), rows, positions, fakes, SPECIALS["[MASK]"])
    assert result["prefers_true"] > 0.75 > frequencies_only["prefers_true"]
    assert result["masked_accuracy"] > 0.6 > frequencies_only["masked_accuracy"]
    # The head sees the slots as [MASK]: one that read the true token there would be right everywhere.
    copying = token_context.masked_lm_context(
        lambda token_ids, slots: np.eye(VOCABULARY)[np.take_along_axis(token_ids, slots, axis=1)] * 10,
        rows, positions, fakes, SPECIALS["[MASK]"])
    assert copying["masked_accuracy"] == 0.0


def test_the_discriminator_auc_ranks_fakes_by_context_not_by_frequency():
    rows = _rows(successor=True)
    positions, fakes = token_context.slots_and_fakes(rows, VOCABULARY, SPECIALS.values())

    def by_context(token_ids):  # replaced when a word does not follow its left neighbour
        expected = FIRST_WORD + (token_ids[:, :-1] - FIRST_WORD + 1) % (VOCABULARY - FIRST_WORD)
        return np.pad((token_ids[:, 1:] != expected).astype(float), ((0, 0), (1, 0)))

    def by_frequency(token_ids):  # rarer words look replaced
        return token_ids.astype(float)

    assert token_context.discriminator_context(by_context, rows, positions, fakes)["detects_fakes"] > 0.8
    assert token_context.discriminator_context(by_frequency, rows, positions, fakes)["detects_fakes"] == pytest.approx(
        0.5, abs=0.05)


def test_prefers_true_counts_ties_as_one_half():
    assert token_context.prefers_true([1.0, 2.0, 3.0, 0.0], [0.0, 2.0, 4.0, -1.0]) == pytest.approx(2.5 / 4)


def test_the_loss_beats_the_unigram_baseline_only_with_context():
    rows = _rows(successor=True)
    positions, fakes = token_context.slots_and_fakes(rows, VOCABULARY, SPECIALS.values())
    frequencies_only = token_context.masked_lm_context(_frequency_head(rows), rows, positions, fakes, SPECIALS["[MASK]"])
    assert frequencies_only["masked_loss"] == pytest.approx(frequencies_only["frequency_loss"], abs=0.02)
    with_context = token_context.masked_lm_context(_successor_head, rows, positions, fakes, SPECIALS["[MASK]"])
    assert with_context["masked_loss"] < frequencies_only["frequency_loss"] - 0.5


def test_next_token_metrics_score_each_token_from_its_left():
    rows = _rows(successor=True)

    def successor(token_ids):  # at t, puts its mass on the word after token t
        scores = np.zeros((*token_ids.shape, VOCABULARY))
        guess = FIRST_WORD + (token_ids - FIRST_WORD + 1) % (VOCABULARY - FIRST_WORD)
        np.put_along_axis(scores, guess[..., None], 10.0, axis=-1)
        return scores

    result = token_context.next_token_context(successor, rows)
    # Position 1 follows [CLS] (no guess); the others follow their left neighbour 90% of the time.
    assert result["next_token_accuracy"] == pytest.approx(0.9 * 29 / 30, abs=0.02)
    assert result["next_token_loss"] < result["frequency_loss"]
    log_frequencies = _frequency_head(rows)(rows, np.zeros((len(rows), 1), int))[0, 0]
    unigram = token_context.next_token_context(lambda ids: np.broadcast_to(log_frequencies, (*ids.shape, VOCABULARY)),
                                               rows)
    assert unigram["next_token_loss"] == pytest.approx(unigram["frequency_loss"], abs=0.02)


@pytest.mark.parametrize("objective", ["mlm", "electra", "ltr"])
def test_a_pretraining_runs_preset_is_checked_with_its_own_heads(tmp_path, objective):
    import keras_bert_app as kba
    from keras_bert_app.demo.objectives_study_runs import token_context as check
    from tests.tasks.tiny_presets import SPECIALS as TINY_SPECIALS
    from tests.tasks.tiny_presets import write_tiny_preset

    words = "the a team match goal coach player season win cup league final bank rate price".split()
    write_tiny_preset(tmp_path / "initial", TINY_SPECIALS + words, num_layers=1, hidden_dim=16)
    if objective == "electra":
        pretrainer = kba.ElectraPretrainer(kba.BertEncoder.from_preset(tmp_path / "initial"), seed=0)
    elif objective == "ltr":
        pretrainer = kba.LeftToRightPretrainer.from_preset(tmp_path / "initial")
    else:
        pretrainer = kba.BertPretrainer(kba.BertEncoder.from_preset(tmp_path / "initial"), next_sentence_prediction=False)
    kba.BertTokenizer.from_preset(tmp_path / "initial").save_to_preset(tmp_path / "run")
    pretrainer.save_to_preset(tmp_path / "run")
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, 12)) for _ in range(40)]
    result = check(tmp_path / "run", texts, sequence_length=16, objective=objective)
    if objective == "ltr":
        assert result["slots"] == (12 * 40 // 14) * 14 and 0 <= result["next_token_accuracy"] <= 1
        assert result["next_token_loss"] > 0
    else:
        assert 0.8 * (12 * 40 // 14) * 2 < result["slots"] <= (12 * 40 // 14) * 2  # rows of 14 words, 2 slots each
        assert 0 <= result["prefers_true"] <= 1 and 0 <= result["masked_accuracy"] <= 1
    assert ("detects_fakes" in result) == (objective == "electra")
    with pytest.raises(ValueError, match="fewer than one row"):
        check(tmp_path / "run", ["the team"], sequence_length=16, objective=objective)
