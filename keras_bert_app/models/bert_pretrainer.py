"""BertPretrainer: the encoder with BERT's masked-LM and next-sentence heads."""

import pathlib
import warnings

import keras
import numpy as np
from keras import ops

from keras_bert_app import presets
from keras_bert_app.layers.masked_lm_head import MaskedLMHead
from keras_bert_app.layers.next_sentence_head import NextSentenceHead
from keras_bert_app.models.bert_encoder import INPUT_NAMES, BertEncoder
from keras_bert_app.training.optimizer import create_optimizer
from keras_bert_app.training.xla import resolve_jit_compile

HEAD_WEIGHTS_FILE = "pretrainer.weights.h5"
# The paper's pretraining recipe (Devlin et al. 2018, appendix A.2).
PAPER_LEARNING_RATE = 1e-4
PAPER_TOTAL_STEPS = 1_000_000
PAPER_WARMUP_STEPS = 10_000


@keras.saving.register_keras_serializable(package="keras_bert_app")
class BertPretrainer(keras.Model):
    """BERT's pretraining model: masked LM + next sentence prediction.

    The masked-LM head scores only the `mask_positions` (gathered before the
    vocabulary projection, which is tied to the token embeddings); the NSP
    head classifies the pooled [CLS] output. `compile()` without arguments
    uses the paper's recipe: AdamW (lr 1e-4, 10k warmup steps, linear decay
    over 1M steps, weight decay 0.01, clip 1.0), loss = masked-LM loss
    (weighted mean over real predictions) + NSP cross-entropy.

    Args:
        encoder: `BertEncoder`.
        next_sentence_prediction: bool. False drops the NSP head (masked LM
            only, as RoBERTa (Liu et al. 2019) found NSP can go).

    Inputs: dict with the encoder's `token_ids`, `segment_ids`,
    `padding_mask` int [batch, seq] and `mask_positions` int
    [batch, max_predictions].

    Outputs: dict with `mlm` float32 logits [batch, max_predictions,
    vocabulary_size] and `nsp` float32 logits [batch, 2] (label 0 = IsNext,
    1 = random).

    Labels: `{"mlm": masked token ids, "nsp": label}`, sample weights
    `{"mlm": 1 for a real prediction, 0 for padding}`.

    Example:
    ```python
    import keras_bert_app as kba

    encoder = kba.BertEncoder.from_preset("bert_mini_uncased", load_weights=False)
    pretrainer = kba.BertPretrainer(encoder)
    pretrainer.compile()
    pretrainer.fit(dataset)  # (x, {"mlm", "nsp"}, {"mlm": weights}) batches
    pretrainer.save_to_preset("my_bert")
    ```
    """

    def __init__(self, encoder, next_sentence_prediction=True, **kwargs):
        # === Layers ===
        masked_lm_head = MaskedLMHead(
            encoder.token_embedding,
            activation=encoder.activation,
            layer_norm_epsilon=encoder.layer_norm_epsilon,
            initializer_range=encoder.initializer_range,
            dtype=encoder.dtype_policy,
            name="masked_lm_head",
        )
        next_sentence_head = None
        if next_sentence_prediction:
            next_sentence_head = NextSentenceHead(
                initializer_range=encoder.initializer_range,
                dtype=encoder.dtype_policy,
                name="next_sentence_head",
            )

        # === Functional Model ===
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in (*INPUT_NAMES, "mask_positions")
        }
        encoded = encoder({name: inputs[name] for name in INPUT_NAMES})
        outputs = {"mlm": masked_lm_head(encoded["sequence_output"], inputs["mask_positions"])}
        if next_sentence_head is not None:
            outputs["nsp"] = next_sentence_head(encoded["pooled_output"])
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.next_sentence_prediction = next_sentence_prediction
        self.masked_lm_head = masked_lm_head
        self.next_sentence_head = next_sentence_head

    def compile(
        self,
        optimizer="auto",
        loss="auto",
        metrics="auto",
        weighted_metrics="auto",
        jit_compile="auto",
        **kwargs,
    ):
        """`keras.Model.compile` with the paper's recipe for every "auto".

        "auto" `jit_compile` is XLA on TensorFlow and JAX, CPU included,
        except under a multi-replica `tf.distribute` strategy, where Keras
        decides (`keras_bert_app.training.xla`).
        """
        if optimizer == "auto":
            optimizer = create_optimizer(
                PAPER_LEARNING_RATE, total_steps=PAPER_TOTAL_STEPS, warmup_steps=PAPER_WARMUP_STEPS
            )
        if loss == "auto":
            loss = {"mlm": masked_lm_loss()}
            if self.next_sentence_prediction:
                loss["nsp"] = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if weighted_metrics == "auto":
            # Weighted by the mask weights: padding prediction slots excluded.
            # Keras prefixes the output name only when there are several outputs.
            name = "accuracy" if self.next_sentence_prediction else "mlm_accuracy"
            weighted_metrics = {"mlm": [keras.metrics.SparseCategoricalAccuracy(name=name)]}
        if metrics == "auto":
            metrics = None
            if self.next_sentence_prediction:
                metrics = {"nsp": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
        super().compile(
            optimizer=optimizer,
            loss=loss,
            metrics=metrics,
            weighted_metrics=weighted_metrics,
            jit_compile=resolve_jit_compile(jit_compile, self),
            **kwargs,
        )

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return super().compute_loss(
            x=x, y=y, y_pred=y_pred, sample_weight=self._complete_weights(y, sample_weight), training=training
        )

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return super().compute_metrics(x, y, y_pred, sample_weight=self._complete_weights(y, sample_weight))

    def _complete_weights(self, y, sample_weight):
        """Give every output a weight: batches carry weights for `mlm` only."""
        if not isinstance(sample_weight, dict) or not isinstance(y, dict):
            return sample_weight
        return {
            name: sample_weight[name] if name in sample_weight else ops.ones(ops.shape(y[name]), "float32")
            for name in y
        }

    def get_config(self):
        return {
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "next_sentence_prediction": self.next_sentence_prediction,
            "name": self.name,
            "trainable": self.trainable,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, load_weights=True, next_sentence_prediction=True, **kwargs):
        """Build from a built-in preset name or a preset folder.

        Args:
            preset: str. A name from `keras_bert_app.presets.names()` or a
                preset folder.
            load_weights: bool. Load the encoder weights (`model.weights.h5`,
                required) and the head weights (`pretrainer.weights.h5`, when
                the folder has them; fresh heads otherwise, with a warning).
            next_sentence_prediction: bool. Keep the NSP head.
            **kwargs: overrides of the encoder config (e.g. `dropout=0.0`).
        """
        encoder = BertEncoder.from_preset(preset, load_weights=load_weights, **kwargs)
        pretrainer = cls(encoder, next_sentence_prediction=next_sentence_prediction)
        if load_weights:
            from keras_bert_app.convert import detect  # imports no TensorFlow

            foreign = detect.load_foreign_preset(presets.preset_dir(preset))
            path = presets.preset_dir(preset) / HEAD_WEIGHTS_FILE
            if foreign is not None and foreign[1](pretrainer):
                pass  # Google / HF pretraining checkpoint: encoder and heads loaded
            elif path.is_file():
                pretrainer.load_head_weights(path)
            else:
                warnings.warn(
                    f"Preset {str(preset)!r} has no {HEAD_WEIGHTS_FILE}: the pretraining "
                    "heads start from fresh weights (the MLM output stays tied to the "
                    "loaded token embeddings).",
                    stacklevel=2,
                )
        return pretrainer

    def save_to_preset(self, preset_dir):
        """Write the encoder (`config.json`, `model.weights.h5`) and `pretrainer.weights.h5`."""
        folder = self.encoder.save_to_preset(preset_dir)
        self.save_head_weights(folder / HEAD_WEIGHTS_FILE)
        return folder

    def head_variables(self):
        """`{name: variable}` of the heads' own variables (not the tied embeddings)."""
        tied = id(self.encoder.token_embedding.embeddings)
        variables = {}
        for head in (self.masked_lm_head, self.next_sentence_head):
            if head is None:
                continue
            for variable in head.weights:
                if id(variable) != tied:
                    variables[f"{head.name}/{_relative_path(variable, head.name)}"] = variable
        return variables

    def save_head_weights(self, path):
        """Save the head variables to an HDF5 file, one dataset per variable path."""
        import h5py

        path = pathlib.Path(path)
        temporary = path.with_name(path.name + ".tmp")
        with h5py.File(temporary, "w") as file:
            for name, variable in self.head_variables().items():
                file[name] = ops.convert_to_numpy(variable)
        temporary.replace(path)

    def load_head_weights(self, path):
        """Load head variables saved by `save_head_weights`; NSP is optional in the file."""
        import h5py

        stored = {}

        def collect(name, item):
            if isinstance(item, h5py.Dataset):
                stored[name] = item[()]

        with h5py.File(path, "r") as file:
            file.visititems(collect)
        for name, variable in self.head_variables().items():
            if name not in stored:
                raise ValueError(f"{path}: no weights for {name!r}; the file has {sorted(stored)}.")
            value = np.asarray(stored[name])
            if value.shape != tuple(variable.shape):
                raise ValueError(
                    f"{path}: {name!r} has shape {value.shape}, expected {tuple(variable.shape)}."
                )
            variable.assign(value)


def masked_lm_loss():
    """BERT's masked-LM loss: `sum(weight * cross_entropy) / sum(weight)`.

    The mean over the real predictions of the batch (weight 1; padding
    prediction slots have weight 0), as the original `run_pretraining.py`
    (which adds 1e-5 to the denominator; here an all-padding batch gives 0).
    """
    return keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="mean_with_sample_weight", name="masked_lm_loss"
    )


def _relative_path(variable, head_name):
    """`dense/kernel` from `.../masked_lm_head/dense/kernel`."""
    parts = variable.path.split("/")
    if head_name in parts:
        parts = parts[len(parts) - parts[::-1].index(head_name):]
    return "/".join(parts)
