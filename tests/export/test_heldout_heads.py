"""The serving export of checkpoints built elsewhere: transformers task checkpoints with random weights and odd sizes
(40 positions, 3 heads of 16), converted, fine-tuned and exported through the command line, then called with raw
text in a process that imports only TensorFlow and TF Text, against transformers and the in-process Keras model."""

import json

import keras
import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.models.bert_question_answerer import BertQuestionAnswerer
from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
from tests.convert.heldout_checkpoints import TEXTS, converted
from tests.export.clean_process import serve_in_clean_process

TOLERANCE = 1e-5
BATCHES = (slice(0, 7), slice(3, 4))  # 7 texts, and the long one alone


def _export(model, base, *flags):
    assert cli.main(["export", "--model", str(model), "--output", str(base), *flags]) == 0
    return base / "1"


QUESTIONS = ["where is the city ?", "", "中国 who ran", "what is " * 10, "hello", "x", "who ran over the river"]
CONTEXTS = ["the cat sat on the mat . paris is big .", "red fox", "", "paris london " * 30, "   ",
            "中国 人 大学 day night", "a quick brown fox ran over the lazy dog"]


@pytest.fixture(scope="module")
def encoder_exports(tmp_path_factory):
    """A transformers BertModel converted, exported without --sequence-length, bucketed and not."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    tmp_path = tmp_path_factory.mktemp("encoder")
    reference, preset = converted("BertModel", tmp_path)  # (a task class converts to its task: its own export)
    exports = [_export(preset, tmp_path / "bucketed"), _export(preset, tmp_path / "fixed", "--no-bucketing")]
    return tmp_path, reference, preset, exports


@pytest.fixture(scope="module")
def squad_exports(tmp_path_factory):
    """A `finetune squad --sequence-length 40` run from a converted BertForQuestionAnswering, exported bucketed and
    not."""
    tmp_path = tmp_path_factory.mktemp("squad")
    _, preset = converted("BertForQuestionAnswering", tmp_path)
    words = "the cat sat on the mat and the dog ran over the big red river"
    examples = [(f"{words} . paris is a city .", "paris"), (f"{words} {words} . london is a city .", "london")]
    data = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": [
        {"id": answer, "question": "where is the city ?",
         "answers": [{"text": answer, "answer_start": context.index(answer)}]}
    ]}]} for context, answer in examples]}
    (tmp_path / "squad.json").write_text(json.dumps(data), encoding="utf-8")
    argv = ["finetune", "squad", "--version", "1.1", "--preset", preset, "--train", tmp_path / "squad.json",
            "--dev", tmp_path / "squad.json", "--output", tmp_path / "run", "--epochs", "1", "--batch-size", "4",
            "--sequence-length", "40", "--doc-stride", "16"]
    assert cli.main([str(argument) for argument in argv]) == 0
    run = tmp_path / "run" / "preset"
    exports = [_export(run, tmp_path / "bucketed"), _export(run, tmp_path / "fixed", "--no-bucketing")]
    return run, exports


@pytest.fixture(scope="module")
def served(encoder_exports, squad_exports, tmp_path_factory):
    """Both tests' requests, answered by ONE process that imports only TensorFlow and TF Text."""
    encoder_jobs = [(path, "serving_default", {"text": TEXTS[batch]}) for path in encoder_exports[3] for batch in BATCHES]
    squad_jobs = [(path, "serving_default", {"question": QUESTIONS[batch], "context": CONTEXTS[batch]})
                  for path in squad_exports[1] for batch in BATCHES]
    results = serve_in_clean_process(encoder_jobs + squad_jobs, tmp_path_factory.mktemp("served"))
    return {"encoder": results[: len(encoder_jobs)], "squad": results[len(encoder_jobs):]}


def test_converted_checkpoint_serves_what_transformers_computes_at_its_40_positions(encoder_exports, served):
    """No --sequence-length: the export runs at the checkpoint's 40 positions (not 128, which has no position
    embeddings past 40: a long request failed in serving), bucketed or not, equal to transformers' encoder."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tmp_path, reference, preset, exports = encoder_exports
    metadata = json.loads((exports[0] / "assets.extra" / "keras_bert_app.json").read_text())
    assert (metadata["sequence_length"], metadata["bucket_lengths"]) == (40, [8, 12, 16, 24, 32, 40])
    served = served["encoder"]
    tokenizer = transformers.BertTokenizer(vocab=str(tmp_path / "hf" / "vocab.txt"), do_lower_case=True)
    inputs = tokenizer(TEXTS, padding="max_length", max_length=40, truncation=True, return_tensors="pt")
    with torch.no_grad():
        expected = reference(**inputs)
    real = inputs["attention_mask"].numpy().astype(bool)
    for index, outputs in enumerate(served):
        assert not isinstance(outputs, str), outputs
        batch = BATCHES[index % len(BATCHES)]
        assert outputs["pooled_output"].dtype == np.float32 and outputs["sequence_output"].shape[1:] == (40, 48)
        np.testing.assert_allclose(outputs["pooled_output"], expected.pooler_output.numpy()[batch], atol=TOLERANCE)
        np.testing.assert_allclose(outputs["sequence_output"][real[batch]],
                                   expected.last_hidden_state.numpy()[batch][real[batch]], atol=TOLERANCE)
    # Asked for explicitly, a length past the positions is one line, not an export that fails when served.
    argv = ["export", "--model", str(preset), "--output", str(tmp_path / "long"), "--sequence-length", "64"]
    assert cli.main(argv) == 2


def test_squad_run_at_a_short_sequence_length_exports_and_serves(squad_exports, served):
    """A `finetune squad --sequence-length 40` run keeps the default max_query_length 64, which its featurizer
    accepts; the export serves its questions at what the length leaves room for (36 pieces), as the run did."""
    run, exports = squad_exports
    metadata = json.loads((exports[0] / "assets.extra" / "keras_bert_app.json").read_text())
    assert (metadata["max_query_length"], metadata["max_answer_length"]) == (36, 30)
    questions, contexts = QUESTIONS, CONTEXTS
    served = served["squad"]
    # In process: [CLS] question [SEP] context [SEP], the context cut to fit (questions here are under 36 pieces).
    features = BertPreprocessor.from_preset(run, sequence_length=40, truncate="waterfall")((questions, contexts))
    expected = keras.tree.map_structure(keras.ops.convert_to_numpy, BertQuestionAnswerer.from_preset(run)(features))
    real = np.asarray(features["padding_mask"]).astype(bool)
    for index, outputs in enumerate(served):
        assert not isinstance(outputs, str), outputs
        batch = BATCHES[index % len(BATCHES)]
        for name in ("start_logits", "end_logits"):
            assert outputs[name].dtype == np.float32 and outputs[name].shape == (batch.stop - batch.start, 40)
            np.testing.assert_allclose(outputs[name][real[batch]], expected[name][batch][real[batch]],
                                       atol=TOLERANCE)
        assert outputs["answer_start"].dtype == np.int64 and outputs["answer_text"].shape == (batch.stop - batch.start,)
    assert [text.decode() for text in served[0]["answer_text"]] == [text.decode() for text in served[2]["answer_text"]]
