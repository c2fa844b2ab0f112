"""An ALBERT classifier (SentencePiece tokenizer, shared layers) exported for serving, run in a clean TF + TF Text process.

The export must carry the SentencePiece model itself (a TF resource, not a vocabulary file): the clean process
has neither the model file nor our package.
"""

import json

import keras
import numpy as np

from keras_bert_app.export.serving import export_for_serving
from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_app.preprocessing.sentencepiece_tokenizer import SentencePieceTokenizer
from tests.export.clean_process import serve_in_clean_process
from tests.preprocessing.sentencepiece_models import train_model

LABELS = ["negative", "positive"]


def test_albert_classifier_serves_raw_text_without_its_model_file(tmp_path, enwiki_lines):
    model_file = train_model(tmp_path / "spiece.model", enwiki_lines[:1000], vocabulary_size=800)
    preprocessor = BertPreprocessor(SentencePieceTokenizer(model_file), sequence_length=24)
    keras.utils.set_random_seed(3)
    encoder = BertEncoder(
        vocabulary_size=800, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
        max_sequence_length=32, embedding_dim=8, num_groups=1,
    )
    model = BertClassifier(encoder, num_classes=2)
    target = export_for_serving(model, tmp_path / "export", preprocessor, label_names=LABELS)
    model_file.unlink()  # the export must not read it

    texts = enwiki_lines[1000:1004] + ["", "Zürich ``quoted''   text", "x" * 5000]
    (served,) = serve_in_clean_process([(target, "serving_default", {"text": texts})], tmp_path)
    features = preprocessor(texts)
    expected = keras.ops.convert_to_numpy(keras.ops.softmax(model.predict(features, verbose=0)))
    np.testing.assert_allclose(served["probabilities"], expected, atol=1e-5)
    assert [label.decode() for label in served["label"]] == [LABELS[i] for i in expected.argmax(-1)]
    metadata = json.loads((target / "assets.extra" / "keras_bert_app.json").read_text())
    assert metadata["model_class"] == "BertClassifier" and metadata["sequence_length"] == 24
