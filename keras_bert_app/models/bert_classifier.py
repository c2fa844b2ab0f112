"""BertClassifier: sentence(-pair) classification or regression on [CLS]."""

import keras

from keras_bert_app.models import sentence_head
from keras_bert_app.models.bert_task import head_initializer


@keras.saving.register_keras_serializable(package="keras_bert_app")
class BertClassifier(sentence_head.SentenceTask):
    """BERT with a dropout + dense head on [CLS] (GLUE), pooled as the encoder's family fine-tunes.

    Section 4.1 of Devlin et al. 2018: a classification layer on the pooled
    output, every encoder weight fine-tuned; an ELECTRA encoder reads the raw
    [CLS] instead (`models.sentence_head`). `num_classes=1` makes a regressor
    (STS-B, mean squared error). The model returns logits.

    Args:
        encoder: `keras_bert_app.BertEncoder`.
        num_classes: int. Number of classes; 1 for regression.
        dropout: float. Dropout on the pooled output before the dense layer.
        pooling: "pooler" (BERT, ALBERT), "cls" (ELECTRA) or None:
            "pooler", and for `from_preset` the preset's family.

    Inputs: the encoder's dict of int tensors [batch, seq].
    Output: float logits [batch, num_classes].

    Example:
    ```python
    import keras_bert_app as kba

    classifier = kba.BertClassifier.from_preset(
        "bert_tiny_uncased", num_classes=2, load_weights=False
    )
    classifier.compile(learning_rate=2e-5, total_steps=1000)
    classifier.fit(train_dataset, validation_data=dev_dataset, epochs=3)
    ```
    """

    def __init__(self, encoder, num_classes, dropout=0.1, pooling=None, dtype=None, **kwargs):
        if int(num_classes) < 1:
            raise ValueError(f"BertClassifier: num_classes must be >= 1; got {num_classes}.")
        pooling = sentence_head.check_pooling("BertClassifier", pooling)

        # === Functional Model ===
        inputs = encoder.input
        logits = sentence_head.sentence_logits(  # (batch, num_classes)
            encoder(inputs), num_classes, pooling, dropout, head_initializer(encoder), dtype,
            names=("classifier_dropout", "classifier_dense", "logits"),
        )
        super().__init__(inputs=inputs, outputs=logits, dtype=dtype, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.num_classes = int(num_classes)
        self.dropout = dropout
        self.pooling = pooling

    def compile_defaults(self):
        """Sparse categorical cross-entropy on logits and accuracy; mean squared error and MAE when `num_classes=1`.

        `compile()` (see `BertTask.compile`) adds the paper's AdamW with a
        linear warmup over `warmup_ratio` of `total_steps`, then linear decay.
        """
        if self.num_classes == 1:
            return {"loss": keras.losses.MeanSquaredError(), "metrics": [keras.metrics.MeanAbsoluteError(name="mae")]}
        return {
            "loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        }

    def head_config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout, "pooling": self.pooling}
