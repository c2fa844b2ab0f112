"""The exported SavedModel on Chinese text: a tagger with BERT's Chinese vocabulary, served in a
clean TF + TF Text process, gives character offsets into Chinese, traditional, mixed
Chinese/English/full-width and emoji text, as HF `tokenizers` does, and the same outputs as the
serving head run in-process (which `tests/training/test_chinese_downstream.py` checks in CI).

Large: one export and a clean process cost about a minute on 2 CPU cores.
"""

import keras
import numpy as np
import pytest

from tests.export.clean_process import serve_in_clean_process

pytest.importorskip("tokenizers")

TAGS = ["O", "B-LOC", "B-ORG", "B-PER", "I-LOC", "I-ORG", "I-PER"]


@pytest.mark.all_backends
@pytest.mark.large
@pytest.mark.skipif(keras.config.backend() == "torch", reason="Keras exports no SavedModel from torch (a documented error)")
def test_exported_tagger_offsets_on_chinese_and_mixed_text(shared_data, tmp_path):
    import keras
    import tensorflow as tf

    from keras_bert_app.export.serving import export_for_serving
    from keras_bert_app.export.token_classification_head import TokenClassificationHead
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.models.bert_token_classifier import BertTokenClassifier
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
    from tests.tasks.tiny_presets import write_tiny_preset
    from tests.training.test_chinese_downstream import SEQUENCE_LENGTH, SERVED_TEXTS, check_offsets

    preset = write_tiny_preset(
        tmp_path / "preset", shared_data / "vocab" / "bert_chinese_vocab.txt", max_sequence_length=SEQUENCE_LENGTH
    )
    keras.utils.set_random_seed(3)
    model = BertTokenClassifier(BertEncoder.from_preset(str(preset)), num_classes=len(TAGS))
    preprocessor = BertPreprocessor.from_preset(str(preset), sequence_length=SEQUENCE_LENGTH)
    target = export_for_serving(model, tmp_path / "export", preprocessor, label_names=TAGS)
    (served,) = serve_in_clean_process([(target, "serving_default", {"text": SERVED_TEXTS})], tmp_path)
    check_offsets(served, preset / "vocab.txt")

    head = TokenClassificationHead(preprocessor, TAGS)
    head.attach(tf.Module(), lambda features: model(features, training=False))
    in_process = head.serve_text(tf.constant(SERVED_TEXTS))
    for name in ("token_start", "token_end", "word_start", "word_end", "word_tag_ids", "tag_ids"):
        np.testing.assert_array_equal(served[name], in_process[name].numpy(), err_msg=name)
    np.testing.assert_allclose(served["probabilities"], in_process["probabilities"].numpy(), atol=1e-5)
