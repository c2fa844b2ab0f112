"""`export --format onnx` of question answering and token classification: the SavedModel's `serve_token_ids`
outputs (less its strings), checked in ONNX Runtime against the Keras model and a NumPy span search."""

import keras
import numpy as np
import pytest

from keras_bert_app import errors
from keras_bert_app.export.runtime_export import NEWEST_CHECKED_KERAS
from keras_bert_app.export.serving import export_for_serving
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_question_answerer import BertQuestionAnswerer
from keras_bert_app.models.bert_token_classifier import BertTokenClassifier
from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor

pytestmark = pytest.mark.skipif(
    tuple(int(part) for part in keras.__version__.split(".")[:2]) < NEWEST_CHECKED_KERAS
    or keras.config.backend() != "tensorflow",
    reason=f"export --format onnx runs on TensorFlow and needs Keras {NEWEST_CHECKED_KERAS}")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("tf2onnx")

SEQUENCE_LENGTH, CLS, SEP, PAD = 24, 101, 102, 0


def _encoder():
    return BertEncoder(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32,
                       max_sequence_length=SEQUENCE_LENGTH)


def _rows():
    """[CLS] question [SEP] context [SEP] padding, of several lengths; the last row has no context piece."""
    rng = np.random.default_rng(3)
    token_ids = np.full((4, SEQUENCE_LENGTH), PAD, np.int32)
    segment_ids = np.zeros_like(token_ids)
    for row, (question, context) in enumerate([(3, 12), (5, 4), (2, 18), (6, 0)]):
        pieces = [CLS, *rng.integers(1000, 30000, question), SEP]
        if context:
            segment_ids[row, len(pieces):len(pieces) + context + 1] = 1
            pieces += [*rng.integers(1000, 30000, context), SEP]
        token_ids[row, :len(pieces)] = pieces
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": (token_ids != PAD).astype(np.int32)}


def _session(folder):
    return ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])


def _run(session, inputs):
    return dict(zip([output.name for output in session.get_outputs()], session.run(None, inputs)))


def _best_span(start, end, candidates, max_answer_length):
    best, where = None, (0, 0)
    for i in range(len(start)):
        for j in range(i, min(i + max_answer_length, len(start))):
            if candidates[i] and candidates[j] and (best is None or start[i] + end[j] > best):
                best, where = start[i] + end[j], (i, j)
    return (*where, 0.0 if best is None else best)


@pytest.mark.parametrize("max_answer_length", [1, 4])
def test_question_answering_serves_its_spans(tmp_path, max_answer_length):
    keras.utils.set_random_seed(5)
    model = BertQuestionAnswerer(_encoder())
    preprocessor = BertPreprocessor.from_preset("bert_tiny_uncased", sequence_length=SEQUENCE_LENGTH)
    folder = export_for_serving(model, tmp_path / "qa", preprocessor, format="onnx",
                                max_answer_length=max_answer_length)
    inputs = _rows()
    served = _run(_session(folder), inputs)
    raw = model.predict(inputs, verbose=0)
    np.testing.assert_allclose(served["start_logits"], raw["start_logits"], atol=1e-4)
    np.testing.assert_allclose(served["end_logits"], raw["end_logits"], atol=1e-4)
    candidates = (inputs["segment_ids"] == 1) & (inputs["padding_mask"] == 1) & (inputs["token_ids"] != SEP)
    for row in range(len(candidates)):
        start, end, score = _best_span(served["start_logits"][row], served["end_logits"][row], candidates[row],
                                       max_answer_length)
        assert (served["answer_start_position"][row], served["answer_end_position"][row]) == (start, end), row
        assert served["score"][row] == pytest.approx(score, abs=1e-5)
    lengths = served["answer_end_position"] - served["answer_start_position"]
    assert (lengths >= 0).all() and (lengths < max_answer_length).all()
    assert served["score"][3] == 0 and served["answer_start_position"][3] == 0  # no context: no span
    np.testing.assert_allclose(served["null_score"], raw["start_logits"][:, 0] + raw["end_logits"][:, 0], atol=1e-4)
    # Dynamic length: the batch cut to its longest row gives the same spans.
    longest = int(inputs["padding_mask"].sum(1).max())
    cut = _run(_session(folder), {name: value[:, :longest] for name, value in inputs.items()})
    np.testing.assert_array_equal(cut["answer_start_position"], served["answer_start_position"])
    with pytest.raises(errors.ArgumentError, match="with-tokenizer serves classification"):
        export_for_serving(model, tmp_path / "qa_text", preprocessor, format="onnx", with_tokenizer=True)


def test_token_classification_serves_tags_at_real_positions(tmp_path):
    keras.utils.set_random_seed(6)
    model = BertTokenClassifier(_encoder(), num_classes=5)
    preprocessor = BertPreprocessor.from_preset("bert_tiny_uncased", sequence_length=SEQUENCE_LENGTH)
    folder = export_for_serving(model, tmp_path / "tagger", preprocessor, format="onnx")
    inputs = _rows()
    served = _run(_session(folder), inputs)
    real = inputs["padding_mask"] == 1
    probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(model.predict(inputs, verbose=0), axis=-1))
    np.testing.assert_allclose(served["probabilities"][real], probabilities[real], atol=1e-4)
    np.testing.assert_array_equal(served["tag_ids"][real], probabilities[real].argmax(-1))
    assert (served["tag_ids"][~real] == -1).all() and (served["probabilities"][~real] == 0).all()


def test_openvino_serves_the_same_spans_and_tags(tmp_path):
    ov = pytest.importorskip("openvino")
    keras.utils.set_random_seed(5)
    preprocessor = BertPreprocessor.from_preset("bert_tiny_uncased", sequence_length=SEQUENCE_LENGTH)
    inputs = _rows()
    for name, model, options in [("qa", BertQuestionAnswerer(_encoder()), {"max_answer_length": 4}),
                                 ("tagger", BertTokenClassifier(_encoder(), num_classes=5), {})]:
        onnx_folder = export_for_serving(model, tmp_path / f"{name}_onnx", preprocessor, format="onnx", **options)
        folder = export_for_serving(model, tmp_path / name, preprocessor, format="openvino", **options)
        (xml,) = folder.glob("*.xml")
        served = {key.get_any_name(): np.asarray(value)
                  for key, value in ov.Core().compile_model(str(xml), "CPU")(inputs).items()}
        expected = _run(_session(onnx_folder), inputs)
        assert set(served) == set(expected), name
        for key, value in expected.items():
            np.testing.assert_allclose(served[key], value, atol=1e-4, err_msg=f"{name} {key}")


def test_masked_lm_serves_the_top_tokens_of_the_first_masks(tmp_path):
    from keras_bert_app.models.bert_pretrainer import BertPretrainer

    keras.utils.set_random_seed(8)
    model = BertPretrainer(_encoder())
    preprocessor = BertPreprocessor.from_preset("bert_tiny_uncased", sequence_length=SEQUENCE_LENGTH)
    folder = export_for_serving(model, tmp_path / "mlm", preprocessor, format="onnx", top_k=3, max_predictions=3)
    inputs = _rows()
    mask = preprocessor.tokenizer.mask_token_id
    for row, positions in enumerate([[2, 7], [1, 3, 5, 9], [], [4]]):  # row 1: more masks than max_predictions
        inputs["token_ids"][row, positions] = mask
    served = _run(_session(folder), inputs)
    expected_positions = np.full((4, 3), -1)
    for row, positions in enumerate([[2, 7], [1, 3, 5], [], [4]]):
        expected_positions[row, :len(positions)] = positions
    np.testing.assert_array_equal(served["mask_positions"], expected_positions)
    logits = model.predict({**inputs, "mask_positions": np.maximum(expected_positions, 0).astype("int32")},
                           verbose=0)["mlm"]
    probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(logits, axis=-1))
    real = expected_positions >= 0
    np.testing.assert_array_equal(served["top_k_ids"][real], np.argsort(-probabilities, axis=-1)[..., :3][real])
    np.testing.assert_allclose(served["top_k_probabilities"][real], -np.sort(-probabilities, axis=-1)[..., :3][real],
                               atol=1e-5)
    assert (served["top_k_ids"][~real] == -1).all() and (served["top_k_probabilities"][~real] == 0).all()
