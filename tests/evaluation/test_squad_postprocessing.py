"""Post-processing on hand-made windows and logits (no tokenizer: positions and offsets by hand)."""

import json

import numpy as np

from keras_bert_app.data.squad import SquadExample
from keras_bert_app.data.squad_features import SquadFeatures
from keras_bert_app.evaluation.squad_postprocessing import squad_predictions

CONTEXT = "Alpha  BETA gamma\tDelta"
# Four context pieces with their character spans.
OFFSETS = np.array([[0, 5], [7, 11], [12, 17], [18, 23]])
SEQ = 8


def features(windows, offsets=OFFSETS):
    """One example; windows = [(window_start, context_length, max_context positions)]."""
    n = len(windows)
    max_context = np.zeros((n, SEQ), bool)
    for row, (_, _, owned) in enumerate(windows):
        max_context[row, owned] = True
    return SquadFeatures(
        inputs={}, start_positions=np.zeros(n, "int32"), end_positions=np.zeros(n, "int32"),
        example_index=np.zeros(n, "int32"), context_start=np.full(n, 3, "int32"),
        window_start=np.array([w[0] for w in windows], "int32"),
        context_length=np.array([w[1] for w in windows], "int32"), max_context=max_context,
        piece_offsets=[offsets], examples=[SquadExample("q", "?", CONTEXT, [])], skipped=[],
    )


def logits(values):
    row = np.full(SEQ, -10.0)
    for position, value in values.items():
        row[position] = value
    return row


def test_invalid_pairs_dropped_and_text_from_the_document():
    # One window: positions 3..6 hold pieces 0..3; position 7 is [SEP].
    feats = features([(0, 4, [3, 4, 5, 6])])
    start = logits({7: 9.0, 5: 8.0, 4: 3.0, 0: 1.0})
    end = logits({2: 9.0, 4: 7.0, 6: 6.0, 5: 2.0})
    result = squad_predictions(feats, start[None], end[None], n_best_size=3, max_answer_length=2)
    texts = [entry["text"] for entry in result.nbest["q"]]
    # Top 3 starts 7, 5, 4 and ends 2, 4, 6. Kept: (5,6) 8+6, (4,4) 3+7; dropped: start 7
    # ([SEP]), end 2 (question), (5,4) end < start, (4,6) 3 pieces > 2; (4,5) not a top end.
    assert texts == ["gamma\tDelta", "BETA"]
    assert result.predictions == {"q": "gamma\tDelta"}
    scores = np.array([14.0, 10.0])
    expected = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    np.testing.assert_allclose([e["probability"] for e in result.nbest["q"]], expected, atol=1e-12)
    assert result.null_odds is None


def test_max_context_duplicates_and_null_score(tmp_path):
    # Two windows: pieces 0..2 and 1..3; piece 1 is owned by window 0, piece 2 by window 1.
    feats = features([(0, 3, [3, 4]), (1, 3, [4, 5])])
    start = np.stack([logits({4: 5.0, 5: 4.0, 0: 2.0}), logits({3: 6.0, 4: 4.0, 0: 1.0})])
    end = np.stack([logits({4: 5.0, 0: 2.0}), logits({3: 6.0, 4: 4.5, 0: 3.0})])
    result = squad_predictions(feats, start, end, version_2=True, n_best_size=3)
    # Window 0: (4,4) "BETA" 10; (5,·) not max context there. Window 1: position 3 = piece 1
    # is owned by window 0 -> dropped; (4,4) "gamma" 8.5. Null = min(2+2, 1+3) = 4 (window 0).
    assert [e["text"] for e in result.nbest["q"]] == ["BETA", "gamma", ""]
    assert result.nbest["q"][2]["start_logit"] == 2.0
    assert result.null_odds == {"q": 4.0 - 10.0}
    assert result.predictions == {"q": "BETA"}
    strict = squad_predictions(feats, start, end, version_2=True, n_best_size=3, null_score_diff_threshold=-7.0)
    assert strict.predictions == {"q": ""}
    strict.write(tmp_path)
    assert json.loads((tmp_path / "predictions.json").read_text()) == {"q": ""}
    assert json.loads((tmp_path / "null_odds.json").read_text()) == {"q": -6.0}
    assert len(json.loads((tmp_path / "nbest_predictions.json").read_text())["q"]) == 3


def test_same_text_from_two_windows_kept_once():
    # Pieces 0 and 2 both read "Alpha" (as in "Alpha ... Alpha").
    offsets = np.array([[0, 5], [7, 11], [0, 5], [18, 23]])
    feats = features([(0, 3, [3, 4]), (1, 3, [4, 5])], offsets)
    start = np.stack([logits({3: 5.0}), logits({4: 4.0, 5: 3.0})])
    end = np.stack([logits({3: 5.0}), logits({4: 4.0, 5: 3.0})])
    result = squad_predictions(feats, start, end, n_best_size=2)
    # Window 0 (3,3) "Alpha" 10; window 1 (4,4) piece 2 "Alpha" 8 (a duplicate, skipped),
    # (4,5) "Alpha ... Delta" 7, (5,5) "Delta" 6.
    assert [e["text"] for e in result.nbest["q"]] == ["Alpha", "Alpha  BETA gamma\tDelta"]
