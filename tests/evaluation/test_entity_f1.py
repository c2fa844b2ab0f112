import pytest

from keras_bert_app.evaluation.entity_f1 import entity_scores
from keras_bert_app.evaluation.entity_f1 import entity_spans


def test_bio_spans():
    tags = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC", "O", "B-ORG"]
    assert entity_spans(tags) == [("PER", 0, 2), ("LOC", 3, 4), ("LOC", 4, 6), ("ORG", 7, 8)]


def test_iob1_spans():
    # IOB1 (CoNLL-2003's original files): I- starts a chunk; B- splits two
    # adjacent chunks of the same type; a type change also splits.
    tags = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG", "I-ORG"]
    assert entity_spans(tags) == [("PER", 0, 2), ("PER", 2, 3), ("LOC", 4, 5), ("ORG", 5, 7)]


def test_whole_spans_only():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "I-ORG", "I-ORG"]]
    # PER is cut short (wrong), LOC right, ORG right, one spurious MISC.
    predicted = [["B-PER", "O", "O", "B-LOC"], ["B-ORG", "I-ORG", "I-ORG"]]
    predicted[0][2] = "B-MISC"
    scores = entity_scores(gold, predicted)
    assert (scores["num_gold"], scores["num_predicted"], scores["num_correct"]) == (3, 4, 2)
    assert scores["precision"] == pytest.approx(2 / 4)
    assert scores["recall"] == pytest.approx(2 / 3)
    assert scores["f1"] == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert scores["accuracy"] == pytest.approx(5 / 7)
    assert scores["per_type"]["PER"]["num_correct"] == 0
    assert scores["per_type"]["MISC"] == {
        "precision": 0.0, "recall": 0.0, "f1": 0.0, "num_gold": 0, "num_predicted": 1, "num_correct": 0,
    }


def test_chunks_do_not_cross_sentences():
    # One PER chunk per sentence, not one chunk over both.
    scores = entity_scores([["I-PER"], ["I-PER"]], [["I-PER"], ["I-PER"]])
    assert scores["num_gold"] == 2 and scores["f1"] == 1.0


def test_errors():
    with pytest.raises(ValueError, match="'X-PER'"):
        entity_spans(["X-PER"])
    with pytest.raises(ValueError, match="Sentence 0: 2 gold tags but 1 predicted"):
        entity_scores([["O", "O"]], [["O"]])
