"""Serving heads for QA, token tagging and masked LM, checked in a clean TF + TF Text process.

References are built independently: ids, character offsets and word ids come
from HF `tokenizers` (the Rust BERT tokenizer), packing and span search are
written out in NumPy, and the Keras model runs on those ids.
"""

import json

import keras
import numpy as np
import pytest

from keras_bert_app import presets
from keras_bert_app.export.serving import export_for_serving
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_pretrainer import BertPretrainer
from keras_bert_app.models.bert_question_answerer import BertQuestionAnswerer
from keras_bert_app.models.bert_token_classifier import BertTokenClassifier
from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
from tests.export.clean_process import serve_and_run_saved_model_cli

tokenizers = pytest.importorskip("tokenizers")

SEQUENCE_LENGTH = 32
MAX_QUERY_LENGTH = 8
MAX_ANSWER_LENGTH = 5
MAX_PREDICTIONS = 4
TOP_K = 5
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
CLS, SEP, MASK = 101, 102, 103

QUESTIONS = ["Where does Émile live?", "who?", "a very long question that goes on and on and on", ""]
CONTEXTS = [
    "Émile Zola   lived in PARIS,\tFrance; naïve café owners\u00a0loved him.",
    "Zürich 😀 and عربي right-to-left שלום text.",
    "Short Context.",
    "context only, " * 20,
]
TAG_TEXTS = [
    "Angela Merkel visited ZÜRICH\u00a0and  Paris,\ttwice.",
    "Émile Zola's naïve café — 😀 عربي שלום",
    "word " * 40,
]
MASK_TEXTS = [
    "The capital of France is [MASK].",
    "[MASK] [MASK] went to the store[MASK] today",
    "Émile [MASK] 😀 naïve",
    "no mask here",
    "[MASK] " * 6,
    "[mask] in lower case is text",
    "[CLS] the [SEP] other literals [[MASK]] x[MASK]y [UNK] [PAD] [MASK]",
]
# Bad input: each batch must give valid outputs.
BAD_TEXTS = ["", "   \t\n ", "x" * 100_000, b"bad \xff\xfe bytes", "emoji 😀🎉 and عربي שלום", "nul\x00byte"]
BAD_MASK_TEXTS = [text + (b" [MASK]" if isinstance(text, bytes) else " [MASK]") for text in BAD_TEXTS]


def _tiny_encoder():
    return BertEncoder(
        vocabulary_size=30522, num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=64,
    )


@pytest.fixture(scope="module")
def hf():
    path = presets.vocabulary_path("bert_tiny_uncased")
    return tokenizers.BertWordPieceTokenizer(str(path), lowercase=True, strip_accents=None, clean_text=True)


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    keras.utils.set_random_seed(7)
    preprocessor = BertPreprocessor.from_preset("bert_tiny_uncased", sequence_length=SEQUENCE_LENGTH)
    folder = tmp_path_factory.mktemp("heads")
    models = {
        "qa": BertQuestionAnswerer(_tiny_encoder()),
        "tagger": BertTokenClassifier(_tiny_encoder(), num_classes=len(TAGS)),
        "mlm": BertPretrainer(_tiny_encoder()),
    }
    options = {
        "qa": {"max_query_length": MAX_QUERY_LENGTH, "max_answer_length": MAX_ANSWER_LENGTH},
        "tagger": {"label_names": TAGS},
        "mlm": {"top_k": TOP_K, "max_predictions": MAX_PREDICTIONS},
    }
    return {
        name: (model, export_for_serving(model, folder / name, preprocessor, **options[name]))
        for name, model in models.items()
    }


@pytest.fixture(scope="module")
def served(exports, tmp_path_factory, hf):
    """Every request of this module, answered by one clean process."""
    qa, tagger, mlm = (exports[name][1] for name in ("qa", "tagger", "mlm"))
    requests = {
        "qa": (qa, {"question": QUESTIONS, "context": CONTEXTS}),
        "qa_bad": (qa, {"question": BAD_TEXTS[::-1], "context": BAD_TEXTS}),
        "qa_empty": (qa, {"question": [], "context": []}),
        "qa_mismatch": (qa, {"question": ["a", "b"], "context": ["a"]}),
        "qa_ids": (qa, "serve_token_ids", _qa_reference_inputs(hf, 0)),
        "tagger": (tagger, {"text": TAG_TEXTS}),
        "tagger_bad": (tagger, {"text": BAD_TEXTS}),
        "tagger_empty": (tagger, {"text": []}),
        "tagger_ids": (tagger, "serve_token_ids", _pack(hf.encode(TAG_TEXTS[0], add_special_tokens=False).ids)),
        "mlm": (mlm, {"text": MASK_TEXTS}),
        "mlm_bad": (mlm, {"text": BAD_MASK_TEXTS}),
        "mlm_empty": (mlm, {"text": []}),
        "mlm_ids": (mlm, "serve_token_ids", _pack(hf.encode(MASK_TEXTS[1], add_special_tokens=False).ids)),
    }
    for name, (_, target) in exports.items():
        for index, inputs in enumerate(_warmup_requests(target)):
            requests[f"warmup_{name}_{index}"] = (target, inputs)
    jobs = [(job[0], "serving_default", job[1]) if len(job) == 2 else job for job in requests.values()]
    results, cli_outputs = serve_and_run_saved_model_cli(jobs, CLI_COMMANDS(exports), tmp_path_factory.mktemp("clean"))
    return {**dict(zip(requests, results)), "saved_model_cli": cli_outputs}


CLI_EXPECTED = {
    "qa": ("inputs['question']", "inputs['context']", "outputs['answer_text']", "outputs['answer_start']"),
    "tagger": ("inputs['text']", "outputs['word_tags']", "outputs['token_start']"),
    "mlm": ("inputs['text']", "outputs['top_k_tokens']", "outputs['mask_positions']"),
}


def CLI_COMMANDS(exports):  # noqa: N802
    """`saved_model_cli show` of each head, and `run` of a question (in the clean process, after the requests)."""
    return (
        *(["show", "--dir", exports[name][1], "--all"] for name in CLI_EXPECTED),
        ["run", "--dir", exports["qa"][1], "--tag_set", "serve", "--signature_def", "serving_default",
         "--input_exprs", "question=['Who wrote it?'];context=['It was written by Jacob Devlin.']"],
    )


def _warmup_requests(target):
    """The inputs of each `PredictionLog` in the export's warmup file."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    requests = []
    for record in tf.data.TFRecordDataset(str(target / "assets.extra" / "tf_serving_warmup_requests")):
        request = prediction_log_pb2.PredictionLog.FromString(record.numpy()).predict_log.request
        assert request.model_spec.signature_name == "serving_default"
        requests.append({k: list(tf.make_ndarray(v)) for k, v in request.inputs.items()})
    return requests


def _qa_reference_inputs(hf, row):
    query = hf.encode(QUESTIONS[row], add_special_tokens=False).ids[:MAX_QUERY_LENGTH]
    kept = hf.encode(CONTEXTS[row], add_special_tokens=False).ids[: SEQUENCE_LENGTH - 3 - len(query)]
    return _pack(query, kept)


def _pack(first, second=()):
    """[CLS] first [SEP] (second [SEP]) padded: the encoder's inputs [1, seq] as NumPy."""
    ids = [CLS, *first, SEP] + ([*second, SEP] if second else [])
    segments = [0] * (len(first) + 2) + [1] * (len(second) + 1 if second else 0)
    padding = SEQUENCE_LENGTH - len(ids)
    return {
        "token_ids": np.array([ids + [0] * padding], "int32"),
        "segment_ids": np.array([segments + [0] * padding], "int32"),
        "padding_mask": np.array([[1] * len(ids) + [0] * padding], "int32"),
    }


def _run(model, inputs):
    return keras.tree.map_structure(keras.ops.convert_to_numpy, model(inputs, training=False))


def _best_span(start_logits, end_logits, first, last):
    """Exhaustive SQuAD span search over positions first..last: (start, end, score) or None."""
    best = None
    for i in range(first, last + 1):
        for j in range(i, min(last, i + MAX_ANSWER_LENGTH - 1) + 1):
            score = start_logits[i] + end_logits[j]
            if best is None or score > best[2]:
                best = (i, j, score)
    return best


def _repaired(text):
    """The string the offsets index: invalid UTF-8 replaced by U+FFFD, as the graph does."""
    return text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text


def test_question_answering_matches_keras_and_indexes_the_context(exports, served, hf):
    model, target = exports["qa"]
    metadata = json.loads((target / "assets.extra" / "keras_bert_app.json").read_text())
    assert metadata["task"] == "question_answering" and metadata["inputs"] == ["question", "context"]
    assert (metadata["max_query_length"], metadata["max_answer_length"]) == (MAX_QUERY_LENGTH, MAX_ANSWER_LENGTH)
    out = served["qa"]
    for row, (question, context) in enumerate(zip(QUESTIONS, CONTEXTS)):
        query = hf.encode(question, add_special_tokens=False).ids[:MAX_QUERY_LENGTH]
        encoding = hf.encode(context, add_special_tokens=False)
        kept = encoding.ids[: SEQUENCE_LENGTH - 3 - len(query)]
        inputs = _pack(query, kept)
        np.testing.assert_array_equal(inputs["token_ids"][0], _qa_reference_inputs(hf, row)["token_ids"][0])
        logits = _run(model, inputs)
        real = inputs["padding_mask"][0].astype(bool)  # padding positions: 0 (length buckets)
        for name in ("start_logits", "end_logits"):
            np.testing.assert_allclose(out[name][row][real], logits[name][0][real], atol=1e-5)
            assert not out[name][row][~real].any()
        first = len(query) + 2
        start, end, score = _best_span(logits["start_logits"][0], logits["end_logits"][0], first, first + len(kept) - 1)
        char_start, char_end = encoding.offsets[start - first][0], encoding.offsets[end - first][1]
        assert (out["answer_start"][row], out["answer_end"][row]) == (char_start, char_end)
        assert out["answer_text"][row].decode() == context[char_start:char_end]
        if row == 0:  # the same ids through serve_token_ids: the span as sequence positions
            by_ids = served["qa_ids"]
            assert (by_ids["answer_start_position"][0], by_ids["answer_end_position"][0]) == (start, end)
        np.testing.assert_allclose(out["score"][row], score, atol=1e-5)
        np.testing.assert_allclose(
            out["null_score"][row], logits["start_logits"][0][0] + logits["end_logits"][0][0], atol=1e-5
        )


def test_question_answering_bad_input(served):
    out = served["qa_bad"]
    assert out["start_logits"].shape == (len(BAD_TEXTS), SEQUENCE_LENGTH)
    for row, context in enumerate(BAD_TEXTS):
        start, end, text = out["answer_start"][row], out["answer_end"][row], out["answer_text"][row].decode()
        if isinstance(context, str) and not context.strip():
            assert (start, end, text, out["score"][row]) == (0, 0, "", 0.0)  # no context pieces
            continue
        repaired = _repaired(context)
        assert 0 <= start < end <= len(repaired) and text == repaired[start:end]
    assert served["qa_empty"]["answer_text"].shape == (0,)
    assert served["qa_empty"]["start_logits"].shape == (0, SEQUENCE_LENGTH)
    assert served["qa_mismatch"].startswith("InvalidArgument") and "same batch size" in served["qa_mismatch"]


def test_token_classification_matches_keras_with_offsets_and_words(exports, served, hf):
    model, target = exports["tagger"]
    out = served["tagger"]
    for row, text in enumerate(TAG_TEXTS):
        encoding = hf.encode(text, add_special_tokens=False)
        count = min(len(encoding.ids), SEQUENCE_LENGTH - 2)
        logits = _run(model, _pack(encoding.ids[:count]))[0]
        probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(logits))
        # Padding positions (past [SEP]): -1, 0 and "" (length buckets: not computed).
        probabilities[count + 2 :] = 0
        np.testing.assert_allclose(out["probabilities"][row], probabilities, atol=1e-5)
        tag_ids = probabilities.argmax(-1)
        tag_ids[count + 2 :] = -1
        np.testing.assert_array_equal(out["tag_ids"][row], tag_ids)
        assert [tag.decode() for tag in out["tags"][row]] == [TAGS[i] if i >= 0 else "" for i in tag_ids]
        offsets = np.full((SEQUENCE_LENGTH, 2), -1)
        offsets[1 : count + 1] = encoding.offsets[:count]
        np.testing.assert_array_equal(out["token_start"][row], offsets[:, 0])
        np.testing.assert_array_equal(out["token_end"][row], offsets[:, 1])
        np.testing.assert_array_equal(out["token_mask"][row], offsets[:, 0] >= 0)
        # Words: tagged through their first piece, spanning their kept pieces.
        words = {}
        for position, word in enumerate(encoding.word_ids[:count]):
            start, end = encoding.offsets[position]
            if word not in words:
                words[word] = [tag_ids[position + 1], start, end]
            words[word][2] = end
        expected = np.full((SEQUENCE_LENGTH - 2, 3), -1)
        expected[: len(words)] = list(words.values())
        np.testing.assert_array_equal(out["word_tag_ids"][row], expected[:, 0])
        np.testing.assert_array_equal(out["word_start"][row], expected[:, 1])
        np.testing.assert_array_equal(out["word_end"][row], expected[:, 2])
        assert [tag.decode() for tag in out["word_tags"][row][: len(words)]] == [TAGS[i] for i in expected[: len(words), 0]]
    first_words = [TAG_TEXTS[0][s:e] for s, e in zip(out["word_start"][0], out["word_end"][0]) if s >= 0]
    assert first_words == ["Angela", "Merkel", "visited", "ZÜRICH", "and", "Paris", ",", "twice", "."]


def test_token_classification_bad_input(served, hf):
    out = served["tagger_bad"]
    assert out["probabilities"].shape == (len(BAD_TEXTS), SEQUENCE_LENGTH, len(TAGS))
    assert not out["token_mask"][:2].any() and (out["word_tag_ids"][:2] == -1).all()  # empty, whitespace
    for row, text in enumerate(BAD_TEXTS):
        encoding = hf.encode(_repaired(text), add_special_tokens=False)
        count = min(len(encoding.ids), SEQUENCE_LENGTH - 2)
        spans = list(zip(out["token_start"][row], out["token_end"][row]))[1 : count + 1]
        assert spans == encoding.offsets[:count], row
    assert served["tagger_empty"]["word_tags"].shape == (0, SEQUENCE_LENGTH - 2)


def test_masked_lm_top_k_matches_keras(exports, served, hf):
    model, target = exports["mlm"]
    metadata = json.loads((target / "assets.extra" / "keras_bert_app.json").read_text())
    assert (metadata["top_k"], metadata["max_predictions"]) == (TOP_K, MAX_PREDICTIONS)
    # Literal special tokens are matched by the tokenizer's option (HF's rule), turned on for this head.
    assert metadata["special_tokens_in_strings"] is True and metadata["mask_token"] == "[MASK]"
    vocabulary = presets.vocabulary_path("bert_tiny_uncased").read_text(encoding="utf-8").split("\n")
    out = served["mlm"]
    for row, text in enumerate(MASK_TEXTS):
        ids = hf.encode(text, add_special_tokens=False).ids[: SEQUENCE_LENGTH - 2]
        inputs = _pack(ids)
        positions = [p for p, token in enumerate(inputs["token_ids"][0]) if token == MASK][:MAX_PREDICTIONS]
        assert len(positions) == min(text.count("[MASK]"), MAX_PREDICTIONS)
        padded = positions + [-1] * (MAX_PREDICTIONS - len(positions))
        np.testing.assert_array_equal(out["mask_positions"][row], padded)
        inputs["mask_positions"] = np.array([[max(p, 0) for p in padded]], "int32")
        logits = _run(model, inputs)["mlm"][0]  # (max_predictions, vocabulary)
        probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(logits))
        for slot in range(MAX_PREDICTIONS):
            if slot >= len(positions):
                assert (out["top_k_ids"][row, slot] == -1).all() and (out["top_k_tokens"][row, slot] == b"").all()
                continue
            top = np.argsort(-probabilities[slot], kind="stable")[:TOP_K]
            np.testing.assert_array_equal(out["top_k_ids"][row, slot], top)
            np.testing.assert_allclose(out["top_k_probabilities"][row, slot], probabilities[slot][top], atol=1e-5)
            assert [token.decode() for token in out["top_k_tokens"][row, slot]] == [vocabulary[i] for i in top]


def test_masked_lm_bad_input(served, hf):
    out = served["mlm_bad"]
    assert out["top_k_ids"].shape == (len(BAD_TEXTS), MAX_PREDICTIONS, TOP_K)
    for row, text in enumerate(BAD_MASK_TEXTS):
        ids = [CLS, *hf.encode(_repaired(text), add_special_tokens=False).ids]
        expected = [p for p, token in enumerate(ids[: SEQUENCE_LENGTH - 1]) if token == MASK]
        assert out["mask_positions"][row].tolist() == expected + [-1] * (MAX_PREDICTIONS - len(expected))
    assert (out["top_k_ids"][:, 0] >= 0).all() and (out["top_k_ids"][:, 1:] == -1).all()
    assert served["mlm_empty"]["top_k_tokens"].shape == (0, MAX_PREDICTIONS, TOP_K)


def test_warmup_requests_and_token_id_signatures(exports, served):
    for name in exports:
        warmups = [key for key in served if key.startswith(f"warmup_{name}_")]
        assert len(warmups) >= 2 and all(isinstance(served[key], dict) for key in warmups), name
    # serve_token_ids on the ids that serving_default packs gives its outputs.
    by_ids, by_text = served["qa_ids"], served["qa"]
    np.testing.assert_allclose(by_ids["start_logits"][0], by_text["start_logits"][0], atol=1e-5)
    np.testing.assert_allclose(by_ids["score"][0], by_text["score"][0], atol=1e-5)
    np.testing.assert_allclose(served["tagger_ids"]["probabilities"][0], served["tagger"]["probabilities"][0], atol=1e-5)
    assert served["tagger_ids"]["tags"][0].tolist() == served["tagger"]["tags"][0].tolist()
    for key in ("mask_positions", "top_k_ids", "top_k_tokens"):
        assert served["mlm_ids"][key][0].tolist() == served["mlm"][key][1].tolist(), key


def test_refusals(exports):
    preprocessor = BertPreprocessor.from_preset("bert_tiny_uncased", sequence_length=8)
    qa, _ = exports["qa"]
    with pytest.raises(ValueError, match="max_query_length must be between 0 and sequence_length - 4 = 4"):
        export_for_serving(qa, "/nonexistent", preprocessor, max_query_length=5)
    with pytest.raises(ValueError, match="text_pair applies to classifiers and features, not question_answering"):
        export_for_serving(qa, "/nonexistent", preprocessor, max_query_length=2, text_pair=True)
    with pytest.raises(ValueError, match="expected 5 label names, got 2"):
        export_for_serving(exports["tagger"][0], "/nonexistent", preprocessor, label_names=["O", "X"])


def test_saved_model_cli_shows_each_head_and_runs_a_question(served):
    *shown, ran = served["saved_model_cli"]
    for (name, names), output in zip(CLI_EXPECTED.items(), shown):
        for text in ("signature_def['serving_default']", "signature_def['serve_token_ids']", "dtype: DT_STRING",
                     f"shape: (-1, {SEQUENCE_LENGTH})", *names):
            assert text in output, (name, text)
    assert "answer_text" in ran and "answer_start" in ran
