"""BertTokenClassifier: per-token logits on the sequence output (NER)."""

import keras

from keras_bert_app.models.bert_task import BertTask, head_initializer

IGNORE_LABEL = -100


@keras.saving.register_keras_serializable(package="keras_bert_app")
class BertTokenClassifier(BertTask):
    """BERT with a dense layer on every token's final hidden state (NER).

    Section 5.3 of Devlin et al. 2018: each word is labelled through its
    first sub-token. The other positions get `IGNORE_LABEL` (-100), which the
    default loss skips, and a sample weight of 0 from the data readers.

    Args:
        encoder: `keras_bert_app.BertEncoder`.
        num_classes: int. Number of tags.
        dropout: float. Dropout on the sequence output.

    Inputs: the encoder's dict of int tensors [batch, seq].
    Output: float logits [batch, seq, num_classes].

    Example:
    ```python
    import keras_bert_app as kba

    tagger = kba.BertTokenClassifier.from_preset(
        "bert_tiny_uncased", num_classes=9, load_weights=False
    )
    tagger.compile(learning_rate=5e-5, total_steps=1000)
    ```
    """

    def __init__(self, encoder, num_classes, dropout=0.1, dtype=None, **kwargs):
        if int(num_classes) < 2:
            raise ValueError(f"BertTokenClassifier: num_classes must be >= 2; got {num_classes}.")
        # === Layers ===
        head_dropout = keras.layers.Dropout(dropout, dtype=dtype, name="token_dropout")
        logits_dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=head_initializer(encoder),
            dtype=dtype,
            name="token_logits",
        )

        # === Functional Model ===
        inputs = encoder.input
        sequence_output = encoder(inputs)["sequence_output"]  # (batch, seq, hidden)
        logits = logits_dense(head_dropout(sequence_output))  # (batch, seq, num_classes)
        super().__init__(inputs=inputs, outputs=logits, dtype=dtype, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.num_classes = int(num_classes)
        self.dropout = dropout

    def compile_defaults(self):
        """Cross-entropy that ignores label -100; token accuracy weighted by the readers' sample weights.

        `BertTask.compile` adds the paper's AdamW with warmup and linear decay.
        """
        return {
            "loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE_LABEL),
            "weighted_metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        }

    def head_config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout}
