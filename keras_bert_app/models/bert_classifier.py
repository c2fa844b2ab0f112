"""BertClassifier: sentence(-pair) classification or regression on [CLS]."""

import keras

from keras_bert_app import presets
from keras_bert_app.models.bert_encoder import BertEncoder

TASK_WEIGHTS_FILE = "task.weights.h5"


@keras.saving.register_keras_serializable(package="keras_bert_app")
class BertClassifier(keras.Model):
    """BERT with a dropout + dense head on the pooled [CLS] output (GLUE).

    Section 4.1 of Devlin et al. 2018: the only new parameters are a
    classification layer `W` [H, num_classes]; every encoder weight is
    fine-tuned. `num_classes=1` makes a regressor (STS-B) trained with mean
    squared error. The model returns logits (no softmax).

    Args:
        encoder: `keras_bert_app.BertEncoder`.
        num_classes: int. Number of classes; 1 for regression.
        dropout: float. Dropout on the pooled output before the dense layer.

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

    def __init__(self, encoder, num_classes, dropout=0.1, dtype=None, **kwargs):
        if int(num_classes) < 1:
            raise ValueError(f"BertClassifier: num_classes must be >= 1; got {num_classes}.")
        # === Layers ===
        head_dropout = keras.layers.Dropout(dropout, dtype=dtype, name="classifier_dropout")
        logits_dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=encoder.initializer_range
            ),
            dtype=dtype,
            name="logits",
        )

        # === Functional Model ===
        inputs = encoder.input
        pooled_output = encoder(inputs)["pooled_output"]  # (batch, hidden)
        logits = logits_dense(head_dropout(pooled_output))  # (batch, num_classes)
        super().__init__(inputs=inputs, outputs=logits, dtype=dtype, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.num_classes = int(num_classes)
        self.dropout = dropout

    def compile(
        self,
        optimizer="auto",
        loss="auto",
        metrics="auto",
        *,
        learning_rate=5e-5,
        total_steps=None,
        warmup_ratio=0.1,
        **kwargs,
    ):
        """Compile with the paper's defaults.

        "auto" gives AdamW (weight decay 0.01, LayerNorm and biases excluded)
        with a linear warmup over `warmup_ratio` of `total_steps` then linear
        decay to 0 (constant `learning_rate` when `total_steps` is None);
        sparse categorical cross-entropy on logits and accuracy, or mean
        squared error when `num_classes=1`.
        """
        if optimizer == "auto":
            optimizer = default_optimizer(learning_rate, total_steps, warmup_ratio)
        regression = self.num_classes == 1
        if loss == "auto":
            loss = (
                keras.losses.MeanSquaredError()
                if regression
                else keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            )
        if metrics == "auto":
            metrics = (
                [keras.metrics.MeanAbsoluteError(name="mae")]
                if regression
                else [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
            )
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def get_config(self):
        return {
            "encoder": keras.layers.serialize(self.encoder),
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "name": self.name,
            "trainable": self.trainable,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.layers.deserialize(config["encoder"])
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Build from a preset: a fine-tuned run's preset or a plain encoder one.

        A preset whose `config.json` has a "task" entry for this class (written
        by `save_to_preset`) is rebuilt with its head and fine-tuned weights;
        otherwise the encoder comes from `BertEncoder.from_preset` and the head
        is new (`num_classes` must then be given).

        Args:
            preset: str. A built-in preset name or a preset folder.
            load_weights: bool. Load the preset's weights.
            **kwargs: constructor arguments (`num_classes`, `dropout`).
        """
        return task_from_preset(cls, preset, load_weights, kwargs)

    def save_to_preset(self, preset_dir, label_names=None):
        """Write the encoder preset, `task.weights.h5` and a "task" config entry."""
        head_config = {"num_classes": self.num_classes, "dropout": self.dropout}
        return save_task_preset(self, preset_dir, head_config, label_names)


def default_optimizer(learning_rate, total_steps, warmup_ratio):
    """The fine-tuning optimizer of the paper (appendix A.3), shared by the task models.

    AdamW from `training.optimizer.create_optimizer` with `warmup_ratio` of
    `total_steps` of linear warmup then linear decay; a constant learning
    rate with the same AdamW settings when `total_steps` is None.
    """
    from keras_bert_app.training import optimizer as bert_optimizer

    if total_steps is not None:
        warmup_steps = int(round(warmup_ratio * total_steps))
        return bert_optimizer.create_optimizer(learning_rate, total_steps, warmup_steps)
    optimizer = keras.optimizers.AdamW(
        learning_rate=learning_rate, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0
    )
    optimizer.exclude_from_weight_decay(var_names=list(bert_optimizer.NO_DECAY_NAMES))
    return optimizer


def task_from_preset(cls, preset, load_weights, kwargs):
    """Shared by the task models: rebuild a saved task or put a new head on an encoder.

    A "task" entry of the same class gives the head's arguments (`kwargs`
    override them); its fine-tuned weights are loaded when the head is
    unchanged, else only the encoder's.
    """
    task = presets.read_config(preset).get("task", {})
    saved = task.get("config", {}) if task.get("class_name") == cls.__name__ else None
    reuse_head = saved is not None and all(saved.get(k, v) == v for k, v in kwargs.items())
    arguments = {**(saved or {}), **kwargs}
    encoder = BertEncoder.from_preset(preset, load_weights=load_weights and not reuse_head)
    model = cls(encoder, **arguments)
    if load_weights and reuse_head:
        model.load_weights(str(presets.preset_dir(preset) / task.get("weights", TASK_WEIGHTS_FILE)))
    return model


def save_task_preset(model, preset_dir, head_config, label_names):
    """Shared by the task models: encoder preset + task weights + a "task" entry."""
    folder = model.encoder.save_to_preset(preset_dir)
    model.save_weights(str(folder / TASK_WEIGHTS_FILE))
    entry = {"class_name": type(model).__name__, "config": head_config, "weights": TASK_WEIGHTS_FILE}
    if label_names is not None:
        entry["label_names"] = [str(name) for name in label_names]
    presets.write_config_entry(folder, "task", entry)
    return folder
