"""BertMultipleChoice: one score per choice from [CLS], softmax over choices (SWAG)."""

import keras
from keras import ops

from keras_bert_app.models import sentence_head
from keras_bert_app.models.bert_encoder import INPUT_NAMES
from keras_bert_app.models.bert_task import head_initializer


@keras.saving.register_keras_serializable(package="keras_bert_app")
class BertMultipleChoice(sentence_head.SentenceTask):
    """BERT scoring `num_choices` (context, ending) pairs, as for SWAG.

    Section 4.4 of Devlin et al. 2018: each choice is packed as
    `[CLS] context [SEP] ending [SEP]` and scored by a dot product with the
    pooled [CLS] output (ELECTRA: the raw [CLS], `models.sentence_head`);
    a softmax over the choices, in the loss, picks one.

    Args:
        encoder: `keras_bert_app.BertEncoder`.
        num_choices: int. Choices per example (4 for SWAG).
        dropout: float. Dropout on the pooled output.
        pooling: "pooler" (BERT, ALBERT), "cls" (ELECTRA) or None:
            "pooler", and for `from_preset` the preset's family.

    Inputs: the encoder's keys, int tensors [batch, num_choices, seq].
    Output: float logits [batch, num_choices].

    Example:
    ```python
    import keras_bert_app as kba

    model = kba.BertMultipleChoice.from_preset(
        "bert_tiny_uncased", num_choices=4, load_weights=False
    )
    model.compile(learning_rate=2e-5, total_steps=1000)
    ```
    """

    def __init__(self, encoder, num_choices, dropout=0.1, pooling=None, dtype=None, **kwargs):
        if int(num_choices) < 2:
            raise ValueError(f"BertMultipleChoice: num_choices must be >= 2; got {num_choices}.")
        pooling = sentence_head.check_pooling("BertMultipleChoice", pooling)
        flatten = _FlattenChoices(dtype=dtype, name="flatten_choices")
        to_choices = _SplitChoices(num_choices, dtype=dtype, name="choice_logits")

        # === Functional Model ===
        inputs = {
            name: keras.Input(shape=(num_choices, None), dtype="int32", name=name)
            for name in INPUT_NAMES
        }
        flat_inputs = {name: flatten(inputs[name]) for name in INPUT_NAMES}  # (batch * choices, seq)
        scores = sentence_head.sentence_logits(  # (batch * choices, 1)
            encoder(flat_inputs), 1, pooling, dropout, head_initializer(encoder), dtype,
            names=("choice_dropout", "choice_summary", "choice_score"), first_dropout=False,
        )
        logits = to_choices(scores)  # (batch, choices)
        super().__init__(inputs=inputs, outputs=logits, dtype=dtype, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.num_choices = int(num_choices)
        self.dropout = dropout
        self.pooling = pooling

    def compile_defaults(self):
        """Cross-entropy over the choices (from logits) and accuracy; `BertTask.compile` adds the optimizer."""
        return {
            "loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        }

    def head_config(self):
        return {"num_choices": self.num_choices, "dropout": self.dropout, "pooling": self.pooling}


@keras.saving.register_keras_serializable(package="keras_bert_app")
class _FlattenChoices(keras.layers.Layer):
    """[batch, choices, seq] -> [batch * choices, seq]."""

    def call(self, inputs):
        return ops.reshape(inputs, (-1, ops.shape(inputs)[-1]))

    def compute_output_shape(self, input_shape):
        return (None, input_shape[-1])


@keras.saving.register_keras_serializable(package="keras_bert_app")
class _SplitChoices(keras.layers.Layer):
    """[batch * choices, 1] -> [batch, choices]."""

    def __init__(self, num_choices, **kwargs):
        super().__init__(**kwargs)
        self.num_choices = num_choices

    def call(self, inputs):
        return ops.reshape(inputs, (-1, self.num_choices))

    def compute_output_shape(self, input_shape):
        return (None, self.num_choices)

    def get_config(self):
        return {**super().get_config(), "num_choices": self.num_choices}
