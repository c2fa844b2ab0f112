"""BertQuestionAnswerer: start/end span logits on every token (SQuAD)."""

import keras
from keras import ops

from keras_bert_app.models.bert_task import BertTask, head_initializer

OUTPUT_NAMES = ("start_logits", "end_logits")


@keras.saving.register_keras_serializable(package="keras_bert_app")
class BertQuestionAnswerer(BertTask):
    """BERT with a span head: a start and an end logit for every token.

    Sections 4.2-4.3 of Devlin et al. 2018: a dense layer of 2 units on each
    final hidden state gives the start and end logits; the loss is the mean
    of the start and end cross-entropies. An unanswerable SQuAD v2.0
    question points both ends at `[CLS]` (position 0).

    Args:
        encoder: `keras_bert_app.BertEncoder`.

    Inputs: the encoder's dict of int tensors [batch, seq].
    Outputs: dict of float logits (no softmax) `start_logits` [batch, seq] and
    `end_logits` [batch, seq]. Labels for `fit` are a dict with the same keys
    holding the int positions [batch].

    Example:
    ```python
    import keras_bert_app as kba

    qa = kba.BertQuestionAnswerer.from_preset("bert_tiny_uncased", load_weights=False)
    qa.compile(learning_rate=3e-5, total_steps=1000)
    qa.fit(inputs, {"start_logits": starts, "end_logits": ends}, batch_size=32)
    ```
    """

    def __init__(self, encoder, dtype=None, **kwargs):
        # === Layers ===
        span_dense = keras.layers.Dense(
            2,
            kernel_initializer=head_initializer(encoder),
            dtype=dtype,
            name="span_logits",
        )

        # === Functional Model ===
        inputs = encoder.input
        sequence_output = encoder(inputs)["sequence_output"]  # (batch, seq, hidden)
        span_logits = span_dense(sequence_output)  # (batch, seq, 2)
        start_logits, end_logits = ops.unstack(span_logits, 2, axis=-1)  # 2 x (batch, seq)
        super().__init__(
            inputs=inputs,
            outputs={"start_logits": start_logits, "end_logits": end_logits},
            dtype=dtype,
            **kwargs,
        )

        # === Config ===
        self.encoder = encoder

    def compile_defaults(self):
        """The mean of the start and end sparse cross-entropies on logits; start/end position accuracy.

        `compile()` (see `BertTask.compile`) adds the paper's AdamW with
        warmup and linear decay (the paper uses 5e-5 for SQuAD v1.1 and 3e-5
        for v2.0).
        """
        return {
            "loss": {name: keras.losses.SparseCategoricalCrossentropy(from_logits=True) for name in OUTPUT_NAMES},
            "loss_weights": {name: 0.5 for name in OUTPUT_NAMES},
            "metrics": {name: [keras.metrics.SparseCategoricalAccuracy(name="accuracy")] for name in OUTPUT_NAMES},
        }
