"""LeftToRightPretrainer: a causal encoder predicting the next token (the paper's "LTR & No NSP")."""

import warnings

import keras

from keras_bert_app.layers.masked_lm_head import MaskedLMHead
from keras_bert_app.models.bert_encoder import INPUT_NAMES
from keras_bert_app.models.bert_pretrainer import PAPER_LEARNING_RATE, PAPER_TOTAL_STEPS, PAPER_WARMUP_STEPS
from keras_bert_app.models.bert_pretrainer import masked_lm_loss
from keras_bert_app.models.bert_task import BertTask

HEAD_WEIGHTS_FILE = "left_to_right_pretrainer.weights.h5"


@keras.saving.register_keras_serializable(package="keras_bert_app")
class LeftToRightPretrainer(BertTask):
    """A left-to-right language model on BERT's encoder (Devlin et al. 2018, Table 5, "LTR & No NSP").

    The baseline the paper compares its masked LM with: the same encoder
    with a causal attention mask (`BertEncoder(causal=True)`: each position
    attends to itself and its left), trained to predict the next token at
    every position that has one, without NSP and without `[MASK]`. The head
    is BERT's masked-LM head run at every position (tied to the token
    embeddings, with its output bias), so `output_bias_init="unigram"` and
    the head weights work as the masked LM's.

    Args:
        encoder: `BertEncoder` built with `causal=True`.

    Inputs: dict with the encoder's `token_ids`, `segment_ids` and
    `padding_mask` int [batch, seq] (uncorrupted text, padded on the right).

    Outputs: dict with `lm` float32 logits [batch, seq, vocabulary_size]:
    at position t, the scores of the token at t + 1.

    Labels: `{"lm": token_ids shifted one to the left}`, sample weights
    `{"lm": 1 where position t + 1 is a real token, else 0}`
    (`data.next_token_batches` makes them from pretraining batches).

    Example:
    ```python
    import keras_bert_app as kba

    encoder = kba.BertEncoder.from_preset("bert_tiny_uncased", load_weights=False,
                                          causal=True)
    pretrainer = kba.LeftToRightPretrainer(encoder)
    pretrainer.compile()
    ```
    """

    weights_file = HEAD_WEIGHTS_FILE
    config_entry = None
    default_learning_rate = PAPER_LEARNING_RATE
    default_total_steps = PAPER_TOTAL_STEPS
    default_warmup_ratio = PAPER_WARMUP_STEPS / PAPER_TOTAL_STEPS
    optimizer_recipe = "pretrain"

    def __init__(self, encoder, **kwargs):
        if not getattr(encoder, "causal", False):
            raise ValueError(
                "LeftToRightPretrainer needs a causal encoder (BertEncoder(..., causal=True)): with a "
                "bidirectional one every position sees the token it predicts."
            )
        # === Layers ===
        lm_head = MaskedLMHead(
            encoder.token_embedding,
            activation=encoder.activation,
            layer_norm_epsilon=encoder.layer_norm_epsilon,
            initializer_range=encoder.initializer_range,
            dtype=encoder.dtype_policy,
            name="lm_head",
        )

        # === Functional Model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}
        encoded = encoder(inputs)
        outputs = {"lm": lm_head(encoded["sequence_output"])}  # (batch, seq, vocabulary_size)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.lm_head = lm_head

    def compile_defaults(self):
        """The next-token cross-entropy (weighted mean over the positions with a next token) and its accuracy."""
        return {
            "loss": {"lm": masked_lm_loss()},
            "weighted_metrics": {"lm": [keras.metrics.SparseCategoricalAccuracy(name="lm_accuracy")]},
        }

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Build from a preset, its encoder made causal (a bidirectional preset's weights start it).

        Args:
            preset: str or path. A built-in name or a preset folder (one of
                ours, or a foreign checkpoint: only its encoder is read).
            load_weights: bool. Load the encoder weights, and the head's
                (`left_to_right_pretrainer.weights.h5`) when the folder has
                them; fresh heads otherwise, with a warning.
            **kwargs: overrides of the encoder config (e.g. `dropout=0.0`).
        """
        return cls._from_preset(preset, load_weights, head_arguments={}, encoder_arguments={**kwargs, "causal": True})

    @classmethod
    def _saved_head_config(cls, resolved):
        if resolved.source_format is not None or not (resolved.folder / cls.weights_file).is_file():
            return None
        return {}

    def _warn_fresh_heads(self, resolved):
        warnings.warn(
            f"Preset {str(resolved.folder)!r} has no {self.weights_file}: the language-model head starts "
            "from fresh weights (its output stays tied to the loaded token embeddings).",
            stacklevel=4,
        )

