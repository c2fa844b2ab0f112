"""`layers.initializers` and `from_preset`: the same weights as building the model, then loading the checkpoint.

The reference is the plain way: build the model (every weight drawn), then
load. `from_preset` must give the same weights to the bit, including those
the checkpoint leaves to their initializer (a new task head, a pooler the
checkpoint lacks), on every backend.
"""

import keras
import numpy as np
import pytest

from keras_bert_app.convert import resolve
from keras_bert_app.layers import initializers
from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_encoder import BertEncoder
from tests.convert.checkpoints import TINY, huggingface_tensors, write_huggingface

pytestmark = pytest.mark.all_backends

ENCODER = dict(vocabulary_size=30, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=64)


def _weights(model):
    return {variable.path: keras.ops.convert_to_numpy(variable) for variable in model.weights}


def _assert_same_weights(model, reference):
    ours, theirs = _weights(model), _weights(reference)
    assert sorted(ours) == sorted(theirs)
    for path in ours:
        np.testing.assert_array_equal(ours[path], theirs[path], err_msg=path)


def _built_then_loaded(preset, **head):
    """The reference: every weight drawn at construction, then the checkpoint loaded over them."""
    resolved = resolve.resolve_preset(preset)
    encoder = BertEncoder(**resolved.config["encoder"])
    model = BertClassifier(encoder, **head) if head else encoder
    resolved.load_weights(model.encoder if head else model)
    return model


def _our_preset(tmp_path):
    keras.utils.set_random_seed(7)
    return BertEncoder(**ENCODER).save_to_preset(tmp_path / "preset")


def test_classifier_from_our_preset_equals_built_then_loaded(tmp_path):
    preset = _our_preset(tmp_path)
    keras.utils.set_random_seed(3)
    model = BertClassifier.from_preset(preset, num_classes=3)
    keras.utils.set_random_seed(3)
    reference = _built_then_loaded(preset, num_classes=3)
    _assert_same_weights(model, reference)
    # The new head was drawn, not left at zeros; the encoder holds the preset's weights.
    assert np.abs(keras.ops.convert_to_numpy(model.get_layer("logits").kernel)).min() > 0
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(model.encoder.embeddings.token_embedding.embeddings),
        keras.ops.convert_to_numpy(BertEncoder.from_preset(preset).embeddings.token_embedding.embeddings),
    )


def test_checkpoint_without_pooler_keeps_the_drawn_pooler(tmp_path):
    tensors = {name: value for name, value in huggingface_tensors(TINY).items() if not name.startswith("pooler.")}
    folder = write_huggingface(tmp_path / "hf", tensors=tensors, architecture="BertForMaskedLM")
    keras.utils.set_random_seed(5)
    encoder = BertEncoder.from_preset(folder)
    keras.utils.set_random_seed(5)
    reference = _built_then_loaded(folder)
    _assert_same_weights(encoder, reference)
    assert np.abs(keras.ops.convert_to_numpy(encoder.pooler.kernel)).max() > 0


def test_without_weights_every_weight_is_drawn(tmp_path):
    preset = _our_preset(tmp_path)
    keras.utils.set_random_seed(11)
    model = BertClassifier.from_preset(preset, load_weights=False, num_classes=2)
    keras.utils.set_random_seed(11)
    reference = BertClassifier(BertEncoder(**resolve.resolve_preset(preset).config["encoder"]), num_classes=2)
    _assert_same_weights(model, reference)


def test_serializes_as_a_truncated_normal():
    initializer = initializers.truncated_normal(0.05)
    restored = keras.initializers.deserialize(keras.initializers.serialize(initializer))
    assert isinstance(restored, keras.initializers.TruncatedNormal)
    assert restored.get_config()["stddev"] == 0.05
