"""`DistillationLoss`: Hinton et al.'s soft cross-entropy at a temperature, plus the hard-label loss.

Hinton, Vinyals and Dean 2015 ("Distilling the Knowledge in a Neural
Network"): the student matches the teacher's class probabilities at a
temperature T, softmax(z / T); the soft term's gradients scale as 1 / T², so
it is multiplied by T² to keep its weight when T changes. The hard term is the
ordinary cross-entropy on the true label, where an example has one (the
teacher-labelled transfer set of Turc et al. 2019 has none). A regressor
matches the teacher's output with squared error.

Written by hand, not with `keras.distillation.LogitsDistillation`: that
arrived in Keras 3.12 (this package supports 3.11), runs the teacher on every
training step (here it labels each example once, before training), and has
no per-example hard-label weight for mixing unlabelled examples in.
"""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_app")
class DistillationLoss(keras.losses.Loss):
    """Per example: `(1 - w) * T² * H(p_T, q_T) + w * m * CE(y, q_1)` (classification).

    `p_T = softmax(teacher / T)`, `q_T = softmax(student / T)`,
    `H(p, q) = -sum p log q` (the soft cross-entropy), `CE` the cross-entropy
    on the true class `y`, `m` 1 for a labelled example and 0 for one of the
    transfer set, `w` the `hard_label_weight`. Regression (`num_outputs=1`):
    `(1 - w) * (s - t)² + w * m * (s - y)²`.

    Args:
        num_outputs: int. Logits per example (the classes; 1: regression).
        temperature: float > 0. T of the soft term (classification).
        hard_label_weight: float in [0, 1]. w.
        name: str.

    `y_true`: float [batch, num_outputs + 2]: the teacher's logits, the true
    label (class id or score; anything where m = 0), and m.
    `y_pred`: the student's logits [batch, num_outputs].

    Example:
    ```python
    import numpy as np
    import keras_bert_app as kba

    loss = kba.DistillationLoss(num_outputs=3, temperature=2.0, hard_label_weight=0.5)
    teacher = np.array([[2.0, 0.5, -1.0]])
    target = np.concatenate([teacher, [[0.0, 1.0]]], axis=1)  # label 0, labelled
    float(loss(target, np.array([[1.0, 0.0, 0.0]])))
    ```
    """

    def __init__(self, num_outputs, temperature=2.0, hard_label_weight=0.5, name="distillation", **kwargs):
        super().__init__(name=name, **kwargs)
        self.num_outputs = int(num_outputs)
        self.temperature = float(temperature)
        self.hard_label_weight = float(hard_label_weight)

    def call(self, y_true, y_pred):
        y_true = ops.cast(y_true, "float32")
        student = ops.cast(y_pred, "float32")  # (batch, num_outputs)
        teacher = y_true[:, : self.num_outputs]  # (batch, num_outputs)
        label = y_true[:, self.num_outputs]  # (batch,)
        labelled = y_true[:, self.num_outputs + 1]  # (batch,)
        weight = self.hard_label_weight
        if self.num_outputs == 1:
            soft = ops.square(student[:, 0] - teacher[:, 0])
            hard = ops.square(student[:, 0] - label)
            return (1.0 - weight) * soft + weight * labelled * hard
        temperature = self.temperature
        teacher_probabilities = ops.softmax(teacher / temperature, axis=-1)
        student_log_probabilities = ops.log_softmax(student / temperature, axis=-1)
        soft = -ops.sum(teacher_probabilities * student_log_probabilities, axis=-1) * temperature**2
        true_class = ops.one_hot(ops.cast(label, "int32"), self.num_outputs)
        hard = -ops.sum(true_class * ops.log_softmax(student, axis=-1), axis=-1)
        return (1.0 - weight) * soft + weight * labelled * hard

    def get_config(self):
        return {
            **super().get_config(),
            "num_outputs": self.num_outputs,
            "temperature": self.temperature,
            "hard_label_weight": self.hard_label_weight,
        }
