"""The task models on length-bucketed batches, on every backend: per-position logits (token
classification, SQuAD windows) equal those of fixed padding (1e-5) at every real position, in
input order, and `fit` trains on batches of several lengths."""

import dataclasses
import json

import numpy as np
import pytest

from keras_bert_app.tasks.question_answering import QuestionAnswering
from keras_bert_app.tasks.token_classification import TokenClassification
from tests.tasks.tiny_presets import SPECIALS, write_tiny_preset

pytestmark = pytest.mark.all_backends

WORDS = "john mary lives in paris london visited the old town had quiet streets what color is car red".split()
SEQUENCE_LENGTH = 64


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bucketing_models")
    return write_tiny_preset(folder, SPECIALS + sorted(set(WORDS + [".", "?"])), max_sequence_length=SEQUENCE_LENGTH)


def _logits_both_ways(task, model, split):
    task.bucketing = True
    bucketed = task.logits(model, split, 2)
    task.bucketing = False
    fixed = task.logits(model, split, 2)
    task.bucketing = True
    return bucketed, fixed


def test_token_classification_logits_and_training(preset, tmp_path):
    sentences = ["john lives in paris .", "mary visited london and the old town " * 3,
                 "the old town had quiet streets .", "mary ."]
    tags = {"john": "B-PER", "mary": "B-PER", "paris": "B-LOC", "london": "B-LOC"}
    path = tmp_path / "ner.txt"
    path.write_text("\n\n".join("\n".join(f"{w} {tags.get(w, 'O')}" for w in s.split()) for s in sentences) + "\n")
    task = TokenClassification().prepare(preset, SEQUENCE_LENGTH)
    examples = task.read(path)
    task.learn_labels(examples)
    split = task.featurize("dev", examples)
    model = task.build_model(preset)
    model.compile(learning_rate=1e-3)
    # Trained on the short sentences only: one batch length, one compilation of the train step on JAX
    # (each bucket length is one more, seconds each).
    short = task.featurize("train", dataclasses.replace(examples, words=examples.words[::2], tags=examples.tags[::2],
                                                        lines=examples.lines[::2]))
    history = model.fit(**task.fit_arguments(short, 2, seed=0), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    bucketed, fixed = _logits_both_ways(task, model, split)
    assert bucketed.shape == fixed.shape == (4, SEQUENCE_LENGTH, len(task.label_names))
    real = split.features["padding_mask"].astype(bool)
    np.testing.assert_allclose(bucketed[real], fixed[real], atol=1e-5)
    assert task.decode(split, bucketed) == task.decode(split, fixed)


def test_question_answering_window_logits(preset, tmp_path):
    context = "the old town had quiet streets . the car is red . " * 4
    qas = [{"id": f"q{i}", "question": question, "answers": [{"text": "red", "answer_start": context.index("red")}]}
           for i, question in enumerate(["what color is the car ?", "what color ?", "what color is the old car ?"])]
    path = tmp_path / "squad.json"
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [
        {"context": context, "qas": qas}, {"context": "the car is red .", "qas": [dict(qas[0], id="short", answers=[
            {"text": "red", "answer_start": 11}])]}]}]}))
    task = QuestionAnswering(version="1.1", doc_stride=16, max_query_length=8).prepare(preset, SEQUENCE_LENGTH)
    split = task.featurize("dev", task.read(path))
    model = task.build_model(preset)
    model.compile()
    (bucketed_start, bucketed_end), (fixed_start, fixed_end) = _logits_both_ways(task, model, split)
    assert bucketed_start.shape == fixed_start.shape == (len(split.features), SEQUENCE_LENGTH)
    real = split.features.inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(bucketed_start[real], fixed_start[real], atol=1e-5)
    np.testing.assert_allclose(bucketed_end[real], fixed_end[real], atol=1e-5)
    predictions = [task.decode(split, logits).predictions for logits in ((bucketed_start, bucketed_end),
                                                                         (fixed_start, fixed_end))]
    assert predictions[0] == predictions[1]
