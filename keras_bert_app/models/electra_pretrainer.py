"""ElectraPretrainer: a small generator fills the masked positions, the encoder finds the replaced tokens."""

import warnings

import keras
from keras import ops

from keras_bert_app import errors
from keras_bert_app.convert import resolve
from keras_bert_app.layers.masked_lm_head import MaskedLMHead
from keras_bert_app.layers.replaced_token_head import ReplacedTokenHead
from keras_bert_app.layers.replaced_token_sampler import ReplacedTokenSampler, position_indicator
from keras_bert_app.models.bert_encoder import _CONFIG_KEYS, INPUT_NAMES, BertEncoder
from keras_bert_app.models.bert_task import BertTask
from keras_bert_app.models.electra_generator import (  # noqa: F401  (generator_config, read_generator_config: public here too)
    CONFIG_ENTRY,
    DEFAULT_GENERATOR_SIZE,
    build_generator,
    generator_config,
    read_generator_config,
)

HEAD_WEIGHTS_FILE = "electra_pretrainer.weights.h5"
GENERATOR_FOLDER = "generator"
# The official recipe (google-research/electra `configure_pretraining.py`, ELECTRA-Small).
DEFAULT_RTD_WEIGHT = 50.0
PAPER_LEARNING_RATE = 5e-4
PAPER_TOTAL_STEPS = 1_000_000
PAPER_WARMUP_STEPS = 10_000
METRIC_NAMES = (
    "generator_mlm_loss",
    "generator_mlm_accuracy",
    "discriminator_loss",
    "discriminator_accuracy",
    "discriminator_precision",
    "discriminator_recall",
    "replaced_token_rate",
)
# The official code's `disc_auc`: ROC AUC of the replaced-token probabilities over real tokens, 200 thresholds.
AUC_NAME = "discriminator_auc"


@keras.saving.register_keras_serializable(package="keras_bert_app")
class ElectraPretrainer(BertTask):
    """ELECTRA's pretraining model (Clark et al. 2020): replaced-token detection.

    A small generator (a `BertEncoder` sharing the discriminator's embedding
    tables, with a masked-LM head) predicts the masked positions; one token
    is sampled at each from its softmax (Gumbel-max, `temperature`) with no
    gradient back into the generator; the discriminator (`encoder`, the
    model being pretrained) reads the corrupted sequence and a per-token
    head says, for every token, whether it was replaced. A sampled token
    equal to the original counts as original. `compile()` without arguments
    uses ELECTRA-Small's recipe (AdamW, lr 5e-4, 10k warmup steps, linear
    decay over 1M steps, weight decay 0.01, clip 1.0); the loss is
    `generator MLM loss + rtd_weight * replaced-token loss`, the latter
    averaged over all real tokens (`padding_mask`).

    Args:
        encoder: `BertEncoder`. The discriminator.
        generator: `BertEncoder`, a `BertEncoder` config dict, or None.
            An encoder must share the discriminator's embeddings (build it
            with `shared_embeddings=encoder.embeddings`); a config is built
            that way; None builds `generator_config(encoder config,
            generator_size)`.
        generator_size: float. Size of a generator built here (default 1/4).
        rtd_weight: float. λ, the weight of the replaced-token loss (50).
        temperature: float. Sampling temperature (1.0).
        seed: int or None. Seed of the sampler.

    Inputs: dict with the encoder's `token_ids` (masked: `[MASK]` or kept
    tokens at the masked positions), `segment_ids`, `padding_mask` int
    [batch, seq] and `mask_positions` int [batch, max_predictions]
    (padding slots at position 0).

    Outputs: dict with `mlm` float32 generator logits [batch,
    max_predictions, vocabulary_size], `sampled_ids` int32 [batch,
    max_predictions] and `rtd` float32 discriminator logits [batch, seq].

    Labels: `{"mlm": original token ids at the masked positions}` (other
    entries, such as `nsp`, are ignored), sample weights `{"mlm": 1 for a
    real prediction, 0 for padding}` — the batches `BertPretrainer` takes.

    Metrics: `generator_mlm_loss`, `generator_mlm_accuracy`,
    `discriminator_loss`, `discriminator_accuracy`, `discriminator_precision`
    and `discriminator_recall` (of the "replaced" class), `discriminator_auc`
    (ROC AUC over real tokens, the official code's `disc_auc`) and
    `replaced_token_rate` (share of real tokens the generator replaced).

    Example:
    ```python
    import keras_bert_app as kba

    discriminator = kba.BertEncoder.from_preset("bert_tiny_uncased", load_weights=False)
    pretrainer = kba.ElectraPretrainer(discriminator)  # generator 1/4 of its size
    pretrainer.compile(learning_rate=5e-4, total_steps=10_000)
    pretrainer.fit(dataset)  # the batches BertPretrainer takes
    pretrainer.save_to_preset("my_electra")  # discriminator + my_electra/generator/
    ```
    """

    weights_file = HEAD_WEIGHTS_FILE
    config_entry = CONFIG_ENTRY
    default_learning_rate = PAPER_LEARNING_RATE
    default_total_steps = PAPER_TOTAL_STEPS
    default_warmup_ratio = PAPER_WARMUP_STEPS / PAPER_TOTAL_STEPS
    optimizer_recipe = "pretrain"

    def __init__(
        self,
        encoder,
        generator=None,
        generator_size=DEFAULT_GENERATOR_SIZE,
        rtd_weight=DEFAULT_RTD_WEIGHT,
        temperature=1.0,
        seed=None,
        **kwargs,
    ):
        errors.check_type("encoder", encoder, BertEncoder, "a BertEncoder (the discriminator)")
        errors.check_number("rtd_weight", rtd_weight, minimum=0)
        errors.check_number("temperature", temperature, minimum=0, minimum_inclusive=False)
        generator = build_generator(encoder, generator, generator_size)
        # === Layers ===
        generator_head = MaskedLMHead(
            generator.token_embedding,
            activation=generator.activation,
            layer_norm_epsilon=generator.layer_norm_epsilon,
            initializer_range=generator.initializer_range,
            dtype=encoder.dtype_policy,
            name="generator_head",
        )
        sampler = ReplacedTokenSampler(temperature=temperature, seed=seed, dtype=encoder.dtype_policy, name="sampler")
        discriminator_head = ReplacedTokenHead(
            encoder.hidden_dim,
            activation=encoder.activation,
            initializer_range=encoder.initializer_range,
            dtype=encoder.dtype_policy,
            name="discriminator_head",
        )

        # === Functional Model ===
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in (*INPUT_NAMES, "mask_positions")
        }
        generated = generator({name: inputs[name] for name in INPUT_NAMES})
        mlm_logits = generator_head(generated["sequence_output"], inputs["mask_positions"])
        sampled_ids, corrupted_ids = sampler(mlm_logits, inputs["token_ids"], inputs["mask_positions"])
        discriminated = encoder(
            {"token_ids": corrupted_ids, "segment_ids": inputs["segment_ids"], "padding_mask": inputs["padding_mask"]}
        )
        outputs = {
            "mlm": mlm_logits,
            "sampled_ids": sampled_ids,
            "rtd": discriminator_head(discriminated["sequence_output"]),
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.generator = generator
        self.generator_head = generator_head
        self.sampler = sampler
        self.discriminator_head = discriminator_head
        self.rtd_weight = float(rtd_weight)
        self.temperature = float(temperature)
        self.seed = seed
        self.trackers = {name: keras.metrics.Mean(name=name) for name in METRIC_NAMES}
        self.trackers[AUC_NAME] = keras.metrics.AUC(num_thresholds=200, name=AUC_NAME)

    @property
    def discriminator(self):
        """The encoder being pretrained (`self.encoder`)."""
        return self.encoder

    # === Losses and metrics ===
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """`generator MLM loss + rtd_weight * replaced-token loss`; also updates the two loss trackers."""
        parts = self._loss_parts(x, y, y_pred, sample_weight)
        self.trackers["generator_mlm_loss"].update_state(parts["mlm_loss"])
        self.trackers["discriminator_loss"].update_state(parts["rtd_loss"])
        total = parts["mlm_loss"] + self.rtd_weight * parts["rtd_loss"]
        if self.losses:
            total = total + ops.sum(ops.stack([ops.cast(loss, "float32") for loss in self.losses]))
        return total

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        labels, weights = _labels_and_weights(y, sample_weight)
        predicted = ops.cast(ops.argmax(y_pred["mlm"], axis=-1), "int32")
        self.trackers["generator_mlm_accuracy"].update_state(
            ops.cast(predicted == labels, "float32"), sample_weight=weights
        )
        replaced = self._replaced_labels(x, labels, weights, y_pred["sampled_ids"])
        real = ops.cast(x["padding_mask"], "float32")
        guessed = ops.cast(y_pred["rtd"] > 0, "float32")
        self.trackers["discriminator_accuracy"].update_state(ops.cast(guessed == replaced, "float32"), sample_weight=real)
        # Precision: right among tokens called replaced; recall: right among replaced tokens.
        self.trackers["discriminator_precision"].update_state(replaced, sample_weight=guessed * real)
        self.trackers["discriminator_recall"].update_state(guessed, sample_weight=replaced * real)
        self.trackers["replaced_token_rate"].update_state(replaced, sample_weight=real)
        self.trackers[AUC_NAME].update_state(replaced, ops.sigmoid(y_pred["rtd"]), sample_weight=real)
        return self.get_metrics_result()

    def _loss_parts(self, x, y, y_pred, sample_weight):
        labels, weights = _labels_and_weights(y, sample_weight)
        cross_entropy = ops.sparse_categorical_crossentropy(labels, y_pred["mlm"], from_logits=True)
        mlm_loss = ops.sum(cross_entropy * weights) / ops.maximum(ops.sum(weights), 1e-6)
        replaced = self._replaced_labels(x, labels, weights, y_pred["sampled_ids"])
        real = ops.cast(x["padding_mask"], "float32")
        binary = ops.binary_crossentropy(replaced, y_pred["rtd"], from_logits=True)
        rtd_loss = ops.sum(binary * real) / ops.maximum(ops.sum(real), 1e-6)
        return {"mlm_loss": mlm_loss, "rtd_loss": rtd_loss}

    @staticmethod
    def _replaced_labels(x, labels, weights, sampled_ids):
        """Float [batch, seq]: 1 where the sampled token differs from the original, 0 elsewhere."""
        differs = ops.logical_and(ops.cast(sampled_ids, "int32") != labels, weights > 0)
        hits = position_indicator(x["mask_positions"], ops.shape(x["token_ids"])[1], valid=differs)
        return ops.cast(ops.any(hits, axis=1), "float32")

    # === Config ===
    def head_config(self):
        return {
            "generator": {key: value for key, value in self.generator.get_config().items() if key in _CONFIG_KEYS},
            "rtd_weight": self.rtd_weight,
            "temperature": self.temperature,
        }

    def get_config(self):
        return {**super().get_config(), "seed": self.seed}

    # === Presets ===
    @classmethod
    def from_preset(
        cls, preset, load_weights=True, generator_size=None, rtd_weight=None, temperature=None, seed=None, **kwargs
    ):
        """Build from a preset: an ELECTRA run's preset, or a fresh generator and heads on any encoder preset.

        Args:
            preset: str or path. A built-in name, one of our preset folders
                (a `pretrain --objective electra` run's `preset/` brings its
                generator and heads) or a foreign checkpoint (its encoder).
            load_weights: bool. Load the preset's weights; without saved
                ELECTRA heads the generator and heads are new (a warning).
            generator_size: float or None. Size of a new generator (default
                1/4); with saved heads it must agree with the saved generator.
            rtd_weight, temperature: float or None. Loss weight and sampling
                temperature (default: the saved ones, else 50 and 1.0).
            seed: int or None. Seed of the sampler.
            **kwargs: overrides of the encoder config (e.g. `dropout=0.0`),
                applied to the generator too.
        """
        resolved = resolve.resolve_preset(preset, fetch_weights=load_weights)
        saved = cls._saved_head_config(resolved)
        encoder = BertEncoder(**{**resolved.config["encoder"], **kwargs})
        arguments = {**(saved or {}), "seed": seed}
        for name, value in (("rtd_weight", rtd_weight), ("temperature", temperature)):
            if value is not None:
                arguments[name] = value
        if saved is not None:
            arguments["generator"] = {**saved["generator"], **kwargs}
            if generator_size is not None:
                expected = generator_config(resolved.config["encoder"], generator_size)
                if expected["hidden_dim"] != saved["generator"]["hidden_dim"]:
                    raise errors.ArgumentError(
                        "generator_size",
                        f"generator_size {generator_size} asks for a generator {expected['hidden_dim']} wide, but "
                        f"preset {str(preset)!r} holds one {saved['generator']['hidden_dim']} wide.",
                    )
        elif generator_size is not None:
            arguments["generator"] = {**generator_config(encoder.get_config(), generator_size), **kwargs}
        elif kwargs:
            arguments["generator"] = {**generator_config(encoder.get_config()), **kwargs}
        model = cls(encoder, **arguments)
        if load_weights:
            model._load_preset_weights(resolved, reuse_head=saved is not None)
        return model

    def _warn_fresh_heads(self, resolved):
        warnings.warn(
            f"Preset {str(resolved.folder)!r} has no ELECTRA generator and heads ({self.weights_file}): "
            "they start from fresh weights (the generator shares the loaded embedding tables).",
            stacklevel=4,
        )

    def save_to_preset(self, preset_dir):
        """Write the discriminator as an encoder preset, the generator and heads, and `generator/`.

        `preset_dir` holds the discriminator's encoder preset plus an
        `electra_pretrainer` config entry and `electra_pretrainer.weights.h5`
        (generator, heads, sampler state); `preset_dir/generator/` is the
        generator as an encoder preset with its masked-LM head, which
        `BertPretrainer.from_preset(..., next_sentence_prediction=False)`
        loads. Other `config.json` entries (tokenizer) are kept.

        Returns:
            pathlib.Path of the folder.
        """
        folder = super().save_to_preset(preset_dir)
        self.save_generator_preset(folder / GENERATOR_FOLDER)
        return folder

    def save_generator_preset(self, preset_dir):
        """Write the generator alone (its own copy of the shared tables) with its masked-LM head."""
        from keras_bert_app.models.bert_pretrainer import BertPretrainer

        generator = BertEncoder.from_config(self.generator.get_config())
        generator.set_weights(self.generator.get_weights())
        masked_lm = BertPretrainer(generator, next_sentence_prediction=False)
        masked_lm.masked_lm_head.set_weights(self.generator_head.get_weights())
        return masked_lm.save_to_preset(preset_dir)


def _labels_and_weights(y, sample_weight):
    """The masked-LM labels (int32) and weights (float32, 1 where no weights are given)."""
    labels = ops.cast(y["mlm"] if isinstance(y, dict) else y, "int32")
    weights = sample_weight.get("mlm") if isinstance(sample_weight, dict) else sample_weight
    weights = ops.ones(ops.shape(labels), "float32") if weights is None else ops.cast(weights, "float32")
    return labels, weights
