"""ElectraDiscriminator: an encoder with ELECTRA's replaced-token-detection head, on its own."""

import keras

from keras_bert_app.layers.replaced_token_head import ReplacedTokenHead
from keras_bert_app.models.bert_encoder import INPUT_NAMES
from keras_bert_app.models.bert_task import BertTask

HEAD_WEIGHTS_FILE = "discriminator.weights.h5"


@keras.saving.register_keras_serializable(package="keras_bert_app")
class ElectraDiscriminator(BertTask):
    """ELECTRA's discriminator (Clark et al. 2020): for every token, was it replaced?

    The encoder with the replaced-token-detection head and no generator:
    what an HF `ElectraForPreTraining` checkpoint holds. It scores a given
    text (a positive logit: "this token looks replaced"); to pretrain, use
    `ElectraPretrainer`, which adds the generator.

    Args:
        encoder: `BertEncoder`.

    Inputs: the encoder's dict (`token_ids`, `segment_ids`, `padding_mask`).

    Outputs: dict with `rtd` float32 logits [batch, seq].

    Example:
    ```python
    import keras_bert_app as kba

    discriminator = kba.ElectraDiscriminator.from_preset("electra_small")
    logits = discriminator(inputs)["rtd"]  # > 0: replaced
    ```
    """

    weights_file = HEAD_WEIGHTS_FILE
    config_entry = None  # a discriminator preset is an encoder preset with its head's weights

    def __init__(self, encoder, **kwargs):
        # === Layers ===
        discriminator_head = ReplacedTokenHead(
            encoder.hidden_dim,
            activation=encoder.activation,
            initializer_range=encoder.initializer_range,
            dtype=encoder.dtype_policy,
            name="discriminator_head",
        )

        # === Functional Model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}
        encoded = encoder(inputs)
        outputs = {"rtd": discriminator_head(encoded["sequence_output"])}
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.discriminator_head = discriminator_head

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Build from a preset with a discriminator head (a converted ELECTRA discriminator), or a new head.

        Args:
            preset: str or path. A built-in name (`electra_small`, ...), one
                of our preset folders (`discriminator.weights.h5` holds the
                head), or a foreign checkpoint (an HF `ElectraForPreTraining`
                folder or an original ELECTRA release brings its head).
            load_weights: bool. Load the preset's weights.
            **kwargs: overrides of the encoder config.
        """
        return cls._from_preset(preset, load_weights, head_arguments={}, encoder_arguments=kwargs)

    @classmethod
    def _saved_head_config(cls, resolved):
        if resolved.source_format is not None or not (resolved.folder / cls.weights_file).is_file():
            return None
        return {}

    def _foreign_weights_target(self):
        return self  # ELECTRA discriminator checkpoints hold the head too
