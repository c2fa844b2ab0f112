"""Exports follow the tokenizer's `special_tokens_in_strings`, and record it.

A classifier exported with either setting gives, on text that holds a literal
`[SEP]`, the probabilities of the Keras model fed by a preprocessor with the
same setting (served in this process: the setting is what is checked here;
clean TF + TF Text processes serve exports with the option on, the masked-LM
head's, in test_serving_heads.py, and off in test_serving.py). The masked-LM
head always serves with the option on (its requests hold literal `[MASK]`s).
"""

import json

import keras
import numpy as np

from keras_bert_app.export.masked_lm_serving_head import MaskedLMServingHead
from keras_bert_app.export.serving import export_for_serving
from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

SEQUENCE_LENGTH = 16
TEXTS = ["good movie [SEP] bad movie", "good movie bad movie", "[CLS][MASK] x", ""]


def _preprocessor(special_tokens_in_strings):
    tokenizer = BertTokenizer.from_preset("bert_tiny_uncased", special_tokens_in_strings=special_tokens_in_strings)
    return BertPreprocessor(tokenizer, sequence_length=SEQUENCE_LENGTH)


def test_exported_classifier_follows_the_setting(tmp_path):
    # TensorFlow only: the rule lives in the tokenizer's TF graph; exporting from JAX is tested in test_serving.py.
    keras.utils.set_random_seed(5)
    encoder = BertEncoder(
        vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16, max_sequence_length=32
    )
    model = BertClassifier(encoder, num_classes=3)
    model(_preprocessor(False)(TEXTS))  # build
    # Weights that make the probabilities depend visibly (> 2e-4) on the
    # other tokens: every matrix N(0, 0.1), the logits' N(0, 10). NumPy draws
    # them, so they are the same on every backend.
    rng = np.random.default_rng(0)
    model.set_weights([
        rng.normal(0, 10 if "logits" in variable.path else 0.1, variable.shape).astype("float32")
        if len(variable.shape) == 2 else keras.ops.convert_to_numpy(variable)
        for variable in model.weights
    ])
    jobs, expected = [], {}
    for setting in (False, True):
        preprocessor = _preprocessor(setting)
        features = preprocessor(TEXTS)
        token_ids = keras.ops.convert_to_numpy(features["token_ids"])
        sep = preprocessor.tokenizer.sep_token_id
        # [CLS] good movie ([SEP] | "[", "sep", "]") bad movie [SEP]
        assert (token_ids[0] == sep).sum() == (2 if setting else 1)
        logits = model.predict(features, verbose=0)
        expected[setting] = keras.ops.convert_to_numpy(keras.ops.softmax(logits))
        target = export_for_serving(model, tmp_path / f"special_{setting}", preprocessor)
        metadata = json.loads((target / "assets.extra" / "keras_bert_app.json").read_text())
        assert metadata["special_tokens_in_strings"] is setting and metadata["lowercase"] is True
        jobs.append((target, "serving_default", {"text": TEXTS}))
    served = _serve_in_process(jobs)
    for setting, outputs in zip((False, True), served):
        np.testing.assert_allclose(outputs["probabilities"], expected[setting], atol=1e-5)
        # ... and not the other setting's, on the lines with literals (10x the tolerance apart).
        for row in (0, 2):
            assert np.abs(outputs["probabilities"][row] - expected[not setting][row]).max() > 1e-4, (setting, row)
    np.testing.assert_allclose(expected[False][1], expected[True][1], atol=1e-6)


def _serve_in_process(jobs):
    """The outputs of each `(export_dir, signature, inputs)` job as NumPy arrays (strings sent as tf.string)."""
    import tensorflow as tf

    results = []
    for export_dir, signature, inputs in jobs:
        serving = tf.saved_model.load(str(export_dir)).signatures[signature]
        results.append({k: v.numpy() for k, v in serving(**{k: tf.constant(v, tf.string) for k, v in inputs.items()}).items()})
    return results


def test_masked_lm_head_matches_literal_masks_through_the_tokenizer_option():
    default = _preprocessor(False)
    head = MaskedLMServingHead(default, top_k=2, max_predictions=3)
    # The head tokenizes with the option on; the caller's tokenizer is left alone.
    assert head.tokenizer.special_tokens_in_strings is True
    assert default.tokenizer.special_tokens_in_strings is False
    assert head.tokenizer.get_vocabulary() == default.tokenizer.get_vocabulary()
    assert head.metadata() == {"top_k": 2, "max_predictions": 3, "mask_token": "[MASK]"}
    packed = head.preprocessor.packer(head.tokenizer.tokenize_with_offsets(["a [MASK] b[MASK]"])[0])
    mask = head.tokenizer.mask_token_id
    assert (packed["token_ids"].numpy()[0] == mask).sum() == 2
    # Given a tokenizer that already has it, the head uses that one.
    hf_rule = _preprocessor(True)
    assert MaskedLMServingHead(hf_rule).tokenizer is hf_rule.tokenizer
