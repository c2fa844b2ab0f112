"""BertPretrainer: the encoder with BERT's masked-LM and next-sentence heads."""

import warnings

import keras
from keras import ops

from keras_bert_app.layers.masked_lm_head import MaskedLMHead
from keras_bert_app.layers.next_sentence_head import NextSentenceHead
from keras_bert_app.models import head_weights
from keras_bert_app.models.bert_encoder import INPUT_NAMES
from keras_bert_app.models.bert_task import BertTask

HEAD_WEIGHTS_FILE = "pretrainer.weights.h5"
# The paper's pretraining recipe (Devlin et al. 2018, appendix A.2).
PAPER_LEARNING_RATE = 1e-4
PAPER_TOTAL_STEPS = 1_000_000
PAPER_WARMUP_STEPS = 10_000


@keras.saving.register_keras_serializable(package="keras_bert_app")
class BertPretrainer(BertTask):
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

    weights_file = HEAD_WEIGHTS_FILE
    config_entry = None  # a pretrainer preset is an encoder preset with heads, not a fine-tuned task
    default_learning_rate = PAPER_LEARNING_RATE
    default_total_steps = PAPER_TOTAL_STEPS
    default_warmup_ratio = PAPER_WARMUP_STEPS / PAPER_TOTAL_STEPS
    optimizer_recipe = "pretrain"  # the original optimization.py: epsilon 1e-6, decay from step 0

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
            # Both outputs used: the pooled output from the whole sequence's [CLS] row, not computed apart again.
            encoder.transformer_layers[-1].first_apart = False
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.next_sentence_prediction = next_sentence_prediction
        self.masked_lm_head = masked_lm_head
        self.next_sentence_head = next_sentence_head

    def compile_defaults(self):
        """The masked-LM loss (+ NSP cross-entropy), masked-LM accuracy weighted by the mask weights, NSP accuracy."""
        loss = {"mlm": masked_lm_loss()}
        metrics = None
        if self.next_sentence_prediction:
            loss["nsp"] = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            metrics = {"nsp": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
        # Weighted by the mask weights: padding prediction slots excluded.
        # Keras prefixes the output name only when there are several outputs.
        name = "accuracy" if self.next_sentence_prediction else "mlm_accuracy"
        weighted_metrics = {"mlm": [keras.metrics.SparseCategoricalAccuracy(name=name)]}
        return {"loss": loss, "metrics": metrics, "weighted_metrics": weighted_metrics}

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

    def head_config(self):
        return {"next_sentence_prediction": self.next_sentence_prediction}

    @classmethod
    def from_preset(cls, preset, load_weights=True, next_sentence_prediction=None, **kwargs):
        """Build from a built-in preset name or a preset folder.

        Args:
            preset: str or path. A name from `keras_bert_app.presets.names()`,
                one of our preset folders, or a foreign checkpoint (an HF
                `BertForPreTraining` folder or an original Google release
                brings its pretraining heads).
            load_weights: bool. Load the encoder weights (`model.weights.h5`,
                required) and the head weights (`pretrainer.weights.h5`, when
                the folder has them; fresh heads otherwise, with a warning).
                Every weight is read once.
            next_sentence_prediction: bool or None. Keep the NSP head; None
                keeps it unless the preset's saved heads are masked-LM only.
            **kwargs: overrides of the encoder config (e.g. `dropout=0.0`).
        """
        head_arguments = {}
        if next_sentence_prediction is not None:
            head_arguments["next_sentence_prediction"] = bool(next_sentence_prediction)
        return cls._from_preset(preset, load_weights, head_arguments=head_arguments, encoder_arguments=kwargs)

    @classmethod
    def _saved_head_config(cls, resolved):
        path = resolved.folder / cls.weights_file
        if resolved.source_format is not None or not path.is_file():
            return None
        return {"next_sentence_prediction": "next_sentence_head" in head_weights.saved_head_names(path)}

    @classmethod
    def _reuses_saved_head(cls, resolved, saved, head_arguments):
        """Saved heads load unless NSP is asked for and they have none (an NSP head in the file may go unused)."""
        if saved is None:
            return False
        if head_arguments.get("next_sentence_prediction", False) and not saved["next_sentence_prediction"]:
            raise ValueError(
                f"{resolved.folder / cls.weights_file} holds masked-LM heads only (pretrained without "
                "next sentence prediction); build the pretrainer with next_sentence_prediction=False."
            )
        return True

    def _foreign_weights_target(self):
        return self  # Google and HF pretraining checkpoints hold the heads too

    def _warn_fresh_heads(self, resolved):
        warnings.warn(
            f"Preset {str(resolved.folder)!r} has no {self.weights_file}: the pretraining "
            "heads start from fresh weights (the MLM output stays tied to the loaded token embeddings).",
            stacklevel=4,
        )


def masked_lm_loss():
    """BERT's masked-LM loss: `sum(weight * cross_entropy) / sum(weight)`.

    The mean over the real predictions of the batch (weight 1; padding
    prediction slots have weight 0), as the original `run_pretraining.py`
    (which adds 1e-5 to the denominator; here an all-padding batch gives 0).
    """
    return keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="mean_with_sample_weight", name="masked_lm_loss"
    )


