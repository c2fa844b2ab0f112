"""Hidden-state matching for `distill` (TinyBERT's intermediate-layer loss, Jiao et al. 2019).

Student layer m of M (1-based) learns teacher layer g(m) = round(m * N / M) of
N, TinyBERT's uniform mapping: the mean over those pairs of the squared
error between the student's states, through a learned projection W (H_s x
H_t, TinyBERT's W_h; none when the widths agree), and the teacher's, over
the tokens that are not padding. The teacher runs on every training step
(its states are too large to keep), frozen and without dropout.

Attention matching (TinyBERT's attention loss, MiniLM's attention
distributions) is not offered: `BertEncoder` returns no attention
probabilities (its fused attention never forms them), so that would take a
second attention path in the model itself.

Written by hand, not with `keras.distillation.FeatureDistillation`: that
arrived in Keras 3.12, after this package's floor (3.11), and it matches
features of models it runs itself, where here the logits come from the
teacher's one pass over the data (`DistillationLoss`).
"""

import keras
from keras import ops


def layer_map(student_layers: int, teacher_layers: int) -> list[int]:
    """0-based teacher layer of each student layer: TinyBERT's g(m) = m * N / M (1-based), rounded."""
    return [max(1, round((m + 1) * teacher_layers / student_layers)) - 1 for m in range(student_layers)]


@keras.saving.register_keras_serializable(package="keras_bert_app")
class HiddenStateMatching(keras.layers.Layer):
    """Adds `weight * mean_pairs(masked MSE(student_states[m] W, teacher_states[g(m)]))` as a loss; returns `logits`.

    Args:
        teacher_layers: list of int. g(m): the teacher layer each student
            layer learns (`layer_map`).
        student_width: int. H_s.
        teacher_width: int. H_t; a learned projection W when it is not H_s.
        weight: float >= 0. Weight of the loss beside `DistillationLoss`.

    Call arguments: `logits` (passed through), `student_states` (list of M
    float [batch, seq, H_s]), `teacher_states` (list of N float
    [batch, seq, H_t]), `padding_mask` (int [batch, seq], 1 for tokens).
    """

    def __init__(self, teacher_layers, student_width, teacher_width, weight=1.0, **kwargs):
        super().__init__(**kwargs)
        self.teacher_layers = [int(layer) for layer in teacher_layers]
        self.student_width = int(student_width)
        self.teacher_width = int(teacher_width)
        self.weight = float(weight)
        self.projection = None
        if self.student_width != self.teacher_width:
            self.projection = keras.layers.Dense(self.teacher_width, use_bias=False, name="projection",
                                                 dtype=self.dtype_policy)

    def build(self, *shapes):
        if self.projection is not None:
            self.projection.build((None, None, self.student_width))
        self.built = True

    def matching_loss(self, student_states, teacher_states, padding_mask):
        """The unweighted loss: mean over layer pairs of the masked mean squared error (float32 scalar)."""
        mask = ops.cast(padding_mask, "float32")[:, :, None]  # (batch, seq, 1)
        count = ops.maximum(ops.sum(mask) * self.teacher_width, 1.0)
        losses = []
        for student, layer in zip(student_states, self.teacher_layers):
            projected = self.projection(student) if self.projection is not None else student  # (batch, seq, H_t)
            error = ops.square(ops.cast(projected, "float32") - ops.cast(teacher_states[layer], "float32"))
            losses.append(ops.sum(error * mask) / count)
        return ops.mean(ops.stack(losses))

    def call(self, logits, student_states, teacher_states, padding_mask):
        self.add_loss(self.weight * self.matching_loss(student_states, teacher_states, padding_mask))
        return logits

    def get_config(self):
        return {**super().get_config(), "teacher_layers": self.teacher_layers, "student_width": self.student_width,
                "teacher_width": self.teacher_width, "weight": self.weight}


def training_model(teacher_model, student_model, weight: float) -> keras.Model:
    """A model of the student's inputs and logits that also adds the hidden-state loss (teacher frozen, no dropout).

    It shares the student's layers: training it trains `student_model`.
    """
    teacher, student = teacher_model.encoder, student_model.encoder
    teacher.trainable = False
    matching = HiddenStateMatching(layer_map(student.num_layers, teacher.num_layers), student.hidden_dim,
                                   teacher.hidden_dim, weight, name="hidden_state_matching")
    return HiddenStateDistiller(teacher, student_model, matching)


class HiddenStateDistiller(keras.Model):
    """The student classifier's forward pass beside the frozen teacher encoder's, with `HiddenStateMatching`.

    A subclassed model, not a functional one: the two encoders may carry the
    same name (a student built from the teacher's config), which a
    functional graph refuses. Used for training only, never saved.
    """

    def __init__(self, teacher_encoder, student_model, matching, **kwargs):
        super().__init__(**kwargs)
        self.teacher_encoder = teacher_encoder
        self.student_model = student_model
        self.matching = matching

    def call(self, inputs, training=None):
        student = self.student_model
        encoded = student.encoder(inputs, training=training)
        teacher_states = self.teacher_encoder(inputs, training=False)["encoder_outputs"]
        dropout = student.get_layer("classifier_dropout")
        output = student.get_layer("logits")
        if student.pooling == "pooler":
            logits = output(dropout(encoded["pooled_output"], training=training))  # (batch, num_classes)
        else:  # `sentence_head.sentence_logits`' "cls" head: dropout, dense, dropout, output
            hidden = student.get_layer("classifier_dense")
            vector = dropout(encoded["sequence_output"][:, 0, :], training=training)
            logits = output(dropout(hidden(vector), training=training))
        return self.matching(logits, encoded["encoder_outputs"], teacher_states, inputs["padding_mask"])
