"""`DistillationLoss` against a NumPy reference (Hinton et al.'s soft cross-entropy at T, T² scaled), and
DistilBERT's layer initialisation (`copy_teacher_layers`): model-side code, run on every backend."""

import keras
import numpy as np
import pytest

from keras_bert_app.training.distillation_loss import DistillationLoss

pytestmark = pytest.mark.all_backends


def _log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def reference(teacher, student, labels, labelled, temperature, weight):
    """Per-example loss in float64: (1 - w) T² H(softmax(t/T), softmax(s/T)) + w m CE(y, softmax(s))."""
    teacher, student = teacher.astype("float64"), student.astype("float64")
    soft = -(np.exp(_log_softmax(teacher / temperature)) * _log_softmax(student / temperature)).sum(-1)
    hard = -_log_softmax(student)[np.arange(len(labels)), labels]
    return (1 - weight) * temperature**2 * soft + weight * labelled * hard


def _targets(teacher, labels, labelled):
    return np.concatenate([teacher, labels[:, None], labelled[:, None]], axis=1).astype("float32")


@pytest.mark.parametrize("temperature, weight", [(1.0, 0.0), (2.0, 0.5), (5.0, 0.3), (0.5, 1.0)])
def test_loss_equals_the_numpy_soft_cross_entropy_at_temperature(temperature, weight):
    rng = np.random.default_rng(0)
    teacher = rng.normal(scale=3.0, size=(6, 4)).astype("float32")
    student = rng.normal(scale=3.0, size=(6, 4)).astype("float32")
    labels = rng.integers(0, 4, size=6)
    labelled = np.array([1, 1, 0, 1, 0, 0], "float32")  # the transfer set's rows have no hard term
    loss = DistillationLoss(4, temperature=temperature, hard_label_weight=weight, reduction=None)
    got = keras.ops.convert_to_numpy(loss(_targets(teacher, labels, labelled), student))
    np.testing.assert_allclose(got, reference(teacher, student, labels, labelled, temperature, weight), rtol=1e-5)
    mean = DistillationLoss(4, temperature=temperature, hard_label_weight=weight)
    np.testing.assert_allclose(float(mean(_targets(teacher, labels, labelled), student)), got.mean(), rtol=1e-5)


def test_soft_term_scales_with_t_squared_and_is_least_at_the_teacher():
    teacher = np.array([[2.0, -1.0, 0.5]], "float32")
    targets = _targets(teacher, np.array([0]), np.array([0.0]))
    soft = {t: float(DistillationLoss(3, temperature=t, hard_label_weight=0.0)(targets, teacher)) for t in (1.0, 4.0)}
    # At student == teacher the soft cross-entropy is the teacher's entropy at T, times T².
    for t, value in soft.items():
        p = np.exp(_log_softmax(teacher.astype("float64") / t))
        assert value == pytest.approx(-(p * np.log(p)).sum() * t**2, rel=1e-5)
    moved = float(DistillationLoss(3, temperature=4.0, hard_label_weight=0.0)(targets, teacher + [[1.0, 0, 0]]))
    assert moved > soft[4.0]


def test_regression_is_squared_error_to_the_teacher_and_the_label():
    teacher = np.array([[0.5], [2.0], [-1.0]], "float32")
    student = np.array([[1.0], [1.0], [0.0]], "float32")
    labels, labelled = np.array([0.0, 3.0, 7.0]), np.array([1.0, 1.0, 0.0])
    loss = DistillationLoss(1, temperature=3.0, hard_label_weight=0.25, reduction=None)
    got = keras.ops.convert_to_numpy(loss(_targets(teacher, labels, labelled), student))
    expected = 0.75 * (student[:, 0] - teacher[:, 0]) ** 2 + 0.25 * labelled * (student[:, 0] - labels) ** 2
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_config_round_trip():
    loss = DistillationLoss(5, temperature=3.0, hard_label_weight=0.2)
    again = DistillationLoss.from_config(loss.get_config())
    assert (again.num_outputs, again.temperature, again.hard_label_weight) == (5, 3.0, 0.2)


def _classifier(num_layers, seed):
    from keras_bert_app.models.bert_classifier import BertClassifier
    from keras_bert_app.models.bert_encoder import BertEncoder

    keras.utils.set_random_seed(seed)
    encoder = BertEncoder(vocabulary_size=30, num_layers=num_layers, num_heads=2, hidden_dim=8, intermediate_dim=16,
                          max_sequence_length=12)
    return BertClassifier(encoder, num_classes=3)


def test_student_layers_are_the_teachers_chosen_layers():
    from keras_bert_app.training.distill_student import copy_teacher_layers

    teacher, student = _classifier(4, seed=1), _classifier(2, seed=2)
    copy_teacher_layers(teacher, student, [3, 1])

    def same(a, b):
        return all(np.array_equal(keras.ops.convert_to_numpy(x), keras.ops.convert_to_numpy(y))
                   for x, y in zip(a.weights, b.weights))

    layers, taught = student.encoder.transformer_layers, teacher.encoder.transformer_layers
    assert same(layers[0], taught[3]) and same(layers[1], taught[1])
    assert not same(layers[0], taught[0]) and not same(layers[1], taught[2])
    assert same(student.encoder.embeddings, teacher.encoder.embeddings)
    assert same(student.encoder.pooler, teacher.encoder.pooler)
    assert same(student.get_layer("logits"), teacher.get_layer("logits"))
