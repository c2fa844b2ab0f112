"""Hidden-state matching (`distill_hidden_states`): TinyBERT's layer map, the loss against a NumPy reference with
and without a projection, and a training model that trains the student and leaves the teacher alone; every
backend."""

import keras
import numpy as np
import pytest

from keras_bert_app.training.distill_hidden_states import HiddenStateMatching, layer_map, training_model

pytestmark = pytest.mark.all_backends


def test_layer_map_is_tinyberts_uniform_map():
    assert layer_map(2, 6) == [2, 5]  # g(m) = 3m, 1-based
    assert layer_map(3, 6) == [1, 3, 5]
    assert layer_map(4, 12) == [2, 5, 8, 11]
    assert layer_map(6, 6) == list(range(6))


def reference(student_states, teacher_states, teacher_layers, mask, projection=None):
    """Mean over pairs of the squared error summed over tokens that are not padding, divided by tokens x H_t."""
    losses = []
    for student, layer in zip(student_states, teacher_layers):
        projected = student.astype("float64") @ projection if projection is not None else student.astype("float64")
        error = (projected - teacher_states[layer].astype("float64")) ** 2 * mask[:, :, None]
        losses.append(error.sum() / (mask.sum() * teacher_states[layer].shape[-1]))
    return float(np.mean(losses))


@pytest.mark.parametrize("student_width", [4, 6])
def test_loss_equals_the_numpy_masked_squared_error_through_the_projection(student_width):
    rng = np.random.default_rng(0)
    student = [rng.normal(size=(3, 5, student_width)).astype("float32") for _ in range(2)]
    teacher = [rng.normal(size=(3, 5, 6)).astype("float32") for _ in range(4)]
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], "int32")
    matching = HiddenStateMatching([1, 3], student_width, 6, weight=0.5)
    matching.build()
    projection = None
    if student_width != 6:
        projection = keras.ops.convert_to_numpy(matching.projection.kernel)
        assert projection.shape == (student_width, 6)
    got = float(keras.ops.convert_to_numpy(matching.matching_loss(student, teacher, mask)))
    expected = reference(student, teacher, [1, 3], mask, projection)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    # Padding does not count: other values there leave the loss as it was.
    noisy = [np.where(mask[:, :, None] == 0, 100.0, state).astype("float32") for state in student]
    again = float(keras.ops.convert_to_numpy(matching.matching_loss(noisy, teacher, mask)))
    np.testing.assert_allclose(again, got, rtol=1e-5)
    assert (matching.projection is None) == (student_width == 6)


def _classifier(num_layers, hidden_dim, seed):
    from keras_bert_app.models.bert_classifier import BertClassifier
    from keras_bert_app.models.bert_encoder import BertEncoder

    keras.utils.set_random_seed(seed)
    encoder = BertEncoder(vocabulary_size=30, num_layers=num_layers, num_heads=2, hidden_dim=hidden_dim,
                          intermediate_dim=16, max_sequence_length=12)
    return BertClassifier(encoder, num_classes=3)


def test_training_model_trains_the_student_through_the_matching_loss_and_not_the_teacher():
    teacher, student = _classifier(4, 8, seed=1), _classifier(2, 4, seed=2)
    model = training_model(teacher, student, weight=2.0)
    rng = np.random.default_rng(0)
    inputs = {"token_ids": rng.integers(1, 30, size=(4, 10)).astype("int32"),
              "segment_ids": np.zeros((4, 10), "int32"), "padding_mask": np.ones((4, 10), "int32")}
    logits = keras.ops.convert_to_numpy(model(inputs, training=False))
    np.testing.assert_allclose(logits, keras.ops.convert_to_numpy(student(inputs, training=False)), rtol=1e-5,
                               atol=1e-6)  # the same logits as the student's own
    (added,) = model.losses
    student_states = [keras.ops.convert_to_numpy(s) for s in student.encoder(inputs)["encoder_outputs"]]
    teacher_states = [keras.ops.convert_to_numpy(s) for s in teacher.encoder(inputs)["encoder_outputs"]]
    projection = keras.ops.convert_to_numpy(model.get_layer("hidden_state_matching").projection.kernel)
    expected = 2.0 * reference(student_states, teacher_states, [1, 3], inputs["padding_mask"], projection)
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(added)), expected, rtol=1e-4)

    teacher_before = [keras.ops.convert_to_numpy(w).copy() for w in teacher.weights]
    student_before = [keras.ops.convert_to_numpy(w).copy() for w in student.encoder.transformer_layers[0].weights]
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=lambda y_true, y_pred: 0.0 * keras.ops.sum(y_pred))
    model.fit(inputs, np.zeros((4, 3), "float32"), epochs=2, verbose=0)  # the matching loss alone moves it
    assert all(np.array_equal(a, keras.ops.convert_to_numpy(b)) for a, b in zip(teacher_before, teacher.weights))
    moved = [not np.allclose(a, keras.ops.convert_to_numpy(b))
             for a, b in zip(student_before, student.encoder.transformer_layers[0].weights)]
    assert any(moved)
