"""`LeftToRightPretrainer`: its loss on next-token batches made from masked-LM batches is NumPy's next-token
cross-entropy of the uncorrupted text; it needs a causal encoder; its preset stays causal when fine-tuned."""

import keras
import numpy as np
import pytest

from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.left_to_right_pretrainer import LeftToRightPretrainer

pytestmark = pytest.mark.all_backends

VOCABULARY_SIZE, MASK_ID = 40, 3


def _pretrainer():
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(vocabulary_size=VOCABULARY_SIZE, num_layers=1, num_heads=2, hidden_dim=8,
                          intermediate_dim=16, max_sequence_length=16, dropout=0.0, causal=True)
    return LeftToRightPretrainer(encoder)


def _masked_batch():
    """A masked-LM batch as the pipeline gives it: original text, [MASK] written at 2 positions per row."""
    rng = np.random.default_rng(0)
    num_real = np.array([10, 7, 4])
    original = rng.integers(5, VOCABULARY_SIZE, (3, 10)).astype("int32")
    padding_mask = (np.arange(10) < num_real[:, None]).astype("int32")
    original *= padding_mask
    positions = np.array([[2, 5], [1, 6], [3, 0]], "int32")
    weights = np.array([[1, 1], [1, 1], [1, 0]], "float32")  # row 2: one real position, one padding slot
    corrupted = original.copy()
    for row in range(3):
        for slot in range(2):
            if weights[row, slot]:
                corrupted[row, positions[row, slot]] = MASK_ID
    x = {"token_ids": corrupted, "segment_ids": np.zeros_like(original), "padding_mask": padding_mask,
         "mask_positions": positions}
    labels = np.take_along_axis(original, positions, axis=1) * weights.astype("int32")
    return original, padding_mask, (x, {"mlm": labels}, {"mlm": weights})


def _reference_loss(logits, token_ids, padding_mask):
    """Mean over the positions t with a real token at t + 1 of -log softmax(logits[t])[token_ids[t + 1]]."""
    logits = logits.astype(np.float64)
    log_probabilities = logits - logits.max(-1, keepdims=True)
    log_probabilities -= np.log(np.exp(log_probabilities).sum(-1, keepdims=True))
    losses = [-log_probabilities[row, t, token_ids[row, t + 1]]
              for row in range(len(token_ids)) for t in range(token_ids.shape[1] - 1) if padding_mask[row, t + 1]]
    return float(np.mean(losses))


def test_loss_is_next_token_cross_entropy_of_the_uncorrupted_text():
    import tensorflow as tf

    from keras_bert_app.data.next_token_batches import next_token_batches

    original, padding_mask, batch = _masked_batch()
    x, y, sample_weight = next(iter(next_token_batches(tf.data.Dataset.from_tensors(batch)).as_numpy_iterator()))
    np.testing.assert_array_equal(x["token_ids"], original)  # the [MASK]s undone
    assert sorted(x) == ["padding_mask", "segment_ids", "token_ids"]

    pretrainer = _pretrainer()
    pretrainer.compile(jit_compile=False)
    logits = keras.ops.convert_to_numpy(pretrainer(x)["lm"])
    assert logits.shape == (3, 10, VOCABULARY_SIZE)
    loss = pretrainer.evaluate(x, y, sample_weight=sample_weight, verbose=0, return_dict=True)["loss"]
    np.testing.assert_allclose(loss, _reference_loss(logits, original, padding_mask), rtol=1e-5)


def test_needs_a_causal_encoder():
    encoder = BertEncoder(vocabulary_size=VOCABULARY_SIZE, num_layers=1, num_heads=2, hidden_dim=8,
                          intermediate_dim=16, max_sequence_length=16)
    with pytest.raises(ValueError, match="causal"):
        LeftToRightPretrainer(encoder)


def test_preset_round_trip_and_fine_tuning_stays_causal(tmp_path):
    from keras_bert_app.models.bert_classifier import BertClassifier

    pretrainer = _pretrainer()
    x = {"token_ids": np.arange(5, 13, dtype="int32")[None], "segment_ids": np.zeros((1, 8), "int32"),
         "padding_mask": np.ones((1, 8), "int32")}
    pretrainer.lm_head.output_bias.assign(np.linspace(-1, 1, VOCABULARY_SIZE).astype("float32"))
    pretrainer.save_to_preset(tmp_path)
    reloaded = LeftToRightPretrainer.from_preset(tmp_path)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(pretrainer(x)["lm"]),
                               keras.ops.convert_to_numpy(reloaded(x)["lm"]), atol=1e-5)
    classifier = BertClassifier.from_preset(tmp_path, num_classes=2)
    assert classifier.encoder.causal  # fine-tuned as pretrained, with the causal mask
