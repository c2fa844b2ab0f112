"""BertFeatureExtractor: contextual token features from chosen encoder layers."""

import keras

from keras_bert_app.models.bert_task import BertTask

COMBINE_MODES = ("concat", "sum")


@keras.saving.register_keras_serializable(package="keras_bert_app")
class BertFeatureExtractor(BertTask):
    """Per-token features from chosen Transformer layers (the feature-based approach).

    Section 5.3 of Devlin et al. 2018 feeds fixed BERT activations to a
    downstream model (the last four layers concatenated worked best). Nothing
    is trained: the model only selects and combines `encoder_outputs`.

    Args:
        encoder: `keras_bert_app.BertEncoder`.
        layers: tuple of int. Transformer layers to use, Python-indexed into
            the encoder's `num_layers` outputs (-1 is the last layer).
        combine: str. "concat" (features [.., H * len(layers)], in the order
            of `layers`) or "sum" (features [.., H]).

    Inputs: the encoder's dict of int tensors [batch, seq].
    Output: float features [batch, seq, H * len(layers)] or [batch, seq, H].

    Example:
    ```python
    import keras_bert_app as kba

    extractor = kba.BertFeatureExtractor.from_preset(
        "bert_tiny_uncased", load_weights=False
    )
    ```
    """

    def __init__(self, encoder, layers=(-1, -2, -3, -4), combine="concat", dtype=None, **kwargs):
        layers = tuple(int(index) for index in layers)
        if not layers:
            raise ValueError("BertFeatureExtractor: layers must name at least one layer.")
        bad = [i for i in layers if not -encoder.num_layers <= i < encoder.num_layers]
        if bad:
            raise ValueError(
                f"BertFeatureExtractor: layers {bad} are out of range for an encoder "
                f"of {encoder.num_layers} layers (expected -{encoder.num_layers}.."
                f"{encoder.num_layers - 1})."
            )
        if combine not in COMBINE_MODES:
            raise ValueError(
                f"BertFeatureExtractor: combine must be one of {list(COMBINE_MODES)}; got {combine!r}."
            )
        # === Layers ===
        if len(layers) == 1:
            merge = None
        elif combine == "concat":
            merge = keras.layers.Concatenate(axis=-1, dtype=dtype, name="concat_layers")
        else:
            merge = keras.layers.Add(dtype=dtype, name="sum_layers")

        # === Functional Model ===
        inputs = encoder.input
        encoder_outputs = encoder(inputs)["encoder_outputs"]  # num_layers x (batch, seq, hidden)
        chosen = [encoder_outputs[index] for index in layers]
        features = chosen[0] if merge is None else merge(chosen)  # (batch, seq, features)
        super().__init__(inputs=inputs, outputs=features, dtype=dtype, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.layers_to_use = layers
        self.combine = combine

    def head_config(self):
        return {"layers": list(self.layers_to_use), "combine": self.combine}
