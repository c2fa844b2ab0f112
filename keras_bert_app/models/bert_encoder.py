"""BertEncoder: the BERT backbone (embeddings, Transformer stack, pooler)."""

import keras
import numpy as np
from keras import ops

from keras_bert_app import errors, presets
from keras_bert_app.convert import resolve
from keras_bert_app.layers.bert_embeddings import BertEmbeddings
from keras_bert_app.layers.initializers import truncated_normal
from keras_bert_app.layers.transformer_block import TransformerBlock

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")
# Keras' warning when no loss reads the pooler (tagging and span heads, pretraining without NSP/SOP): expected there.
POOLER_WITHOUT_GRADIENT = r"Gradients do not exist for variables \[('[\w/]*pooler/\w+'(, )?)+\] "


@keras.saving.register_keras_serializable(package="keras_bert_app")
class BertEncoder(keras.Model):
    """The bidirectional Transformer encoder of BERT (Devlin et al. 2018).

    Token + segment + position embeddings, `num_layers` post-LN Transformer
    blocks and the pooler `tanh(dense(hidden[CLS]))`. Every layer's output is
    returned, for feature extraction.

    Args:
        vocabulary_size: int. Number of WordPiece ids.
        num_layers: int. Number of Transformer blocks L.
        num_heads: int. Attention heads A.
        hidden_dim: int. Model width H.
        intermediate_dim: int. Feed-forward width (4H in BERT).
        dropout: float. Dropout on embeddings, sublayers and attention.
        max_sequence_length: int. Number of learned positions (512).
        num_segments: int. Number of segment ids (2).
        activation: str. Feed-forward activation: "gelu" (exact erf) or
            "gelu_approximate" (tanh, the original TF code).
        layer_norm_epsilon: float. LayerNorm epsilon (1e-12).
        initializer_range: float. Stddev of the truncated-normal init (0.02).
        fused_attention: bool. Compute attention with
            `keras.ops.dot_product_attention`, the backend's fused kernel
            where it has one, at inference and when attention dropout is off;
            same results within float tolerance. An execution choice, not
            part of the weights: `from_preset(..., fused_attention=True)`.
        embedding_dim: int or None. Width E of the token, position and
            segment embeddings (factorized embeddings, as ELECTRA-Small's
            E=128 with H=256). When E != `hidden_dim`, a learned Dense
            `embedding_projection` (E -> H) follows the embeddings' LayerNorm
            and dropout. None (default): E = H, no projection.
        num_groups: int or None. Cross-layer parameter sharing (ALBERT, Lan
            et al. 2019): the layers use `num_groups` sets of weights, each
            shared by `num_layers / num_groups` consecutive layers, as HF
            `AlbertTransformer`; it must divide `num_layers`. 1 is ALBERT's
            all-shared encoder; None (default) or `num_layers` is BERT.
            `encoder_outputs` still has one entry per layer.
        shared_embeddings: `BertEmbeddings` or None. Use this embeddings
            layer (token, position and segment tables and their LayerNorm)
            instead of a new one, to share it with another encoder (an
            ELECTRA generator shares its discriminator's). Its sizes must
            match `vocabulary_size`, `embedding_dim`, `max_sequence_length`
            and `num_segments`. Not part of the config: a deserialized
            encoder has its own tables.
        causal: bool. A causal attention mask: each position attends to
            itself and its left only (the left-to-right LM of Devlin et al.
            2018, Table 5, pretrained by `LeftToRightPretrainer`). It is part
            of the model: a preset saved from a causal encoder stays causal
            when fine-tuned, as the paper fine-tuned its LTR model. `[CLS]`
            then sees only itself, so `pooled_output` reads the last real
            token (the final `[SEP]`, inputs padded on the right), as GPT
            (Radford et al. 2018) classifies from its last token. Default
            False: BERT.

    Inputs: dict of int tensors [batch, seq]: `token_ids`, `segment_ids`,
    `padding_mask` (1 for real tokens, 0 for padding).

    Outputs: dict with `sequence_output` [batch, seq, H], `pooled_output`
    [batch, H] and `encoder_outputs`, a list of `num_layers` [batch, seq, H].

    `BertEncoder(..., embedding_dim=128, num_groups=1)` is ALBERT (the
    `albert_base`, `albert_large` and `albert_xlarge` presets).

    Example:
    ```python
    import numpy as np
    import keras_bert_app as kba

    encoder = kba.BertEncoder.from_preset("bert_tiny_uncased", load_weights=False)
    ids = np.array([[101, 7592, 102, 0]])
    out = encoder({"token_ids": ids, "segment_ids": np.zeros_like(ids),
                   "padding_mask": (ids > 0).astype("int32")})
    out["pooled_output"].shape  # (1, 128)
    ```
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        dropout=0.1,
        max_sequence_length=512,
        num_segments=2,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        fused_attention=False,
        embedding_dim=None,
        num_groups=None,
        shared_embeddings=None,
        causal=False,
        dtype=None,
        **kwargs,
    ):
        if embedding_dim is not None:
            errors.check_int("embedding_dim", embedding_dim, minimum=1)
        layers_per_group = _layers_per_group(num_layers, num_groups)
        width = hidden_dim if embedding_dim is None else embedding_dim
        # === Layers ===
        if shared_embeddings is not None:
            embeddings = _checked_shared_embeddings(
                shared_embeddings, vocabulary_size, width, max_sequence_length, num_segments
            )
        else:
            embeddings = BertEmbeddings(
                vocabulary_size,
                width,
                max_sequence_length=max_sequence_length,
                num_segments=num_segments,
                dropout=dropout,
                layer_norm_epsilon=layer_norm_epsilon,
                initializer_range=initializer_range,
                dtype=dtype,
                name="embeddings",
            )
        embedding_projection = None
        if width != hidden_dim:
            # (batch, seq, E) -> (batch, seq, H), after the embeddings' LayerNorm and dropout.
            embedding_projection = keras.layers.Dense(
                hidden_dim, kernel_initializer=truncated_normal(initializer_range), dtype=dtype,
                name="embedding_projection",
            )
        blocks = [
            TransformerBlock(
                num_heads,
                hidden_dim,
                intermediate_dim,
                activation=activation,
                dropout=dropout,
                layer_norm_epsilon=layer_norm_epsilon,
                initializer_range=initializer_range,
                fused_attention=fused_attention,
                causal=causal,
                dtype=dtype,
                name=f"transformer_layer_{index}",
            )
            for index in range(num_layers // layers_per_group)
        ]
        pooler = keras.layers.Dense(
            hidden_dim, activation="tanh", kernel_initializer=truncated_normal(initializer_range), dtype=dtype,
            name="pooler",
        )

        # === Functional Model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}
        hidden_states = embeddings(inputs["token_ids"], inputs["segment_ids"])
        if embedding_projection is not None:
            hidden_states = embedding_projection(hidden_states)
        encoder_outputs = []
        first = hidden_states
        for index in range(num_layers):  # shared groups: the same block for consecutive layers
            block = blocks[index // layers_per_group]
            if index < num_layers - 1 or layers_per_group > 1 or causal:
                hidden_states = block(hidden_states, padding_mask=inputs["padding_mask"])
                first = hidden_states
            else:
                # The last block's [CLS] output computed apart: a model that uses only the pooled output (a
                # classifier) does not run the rest of the last block (`TransformerBlock._call_with_first`).
                # Not for a block shared by several layers: a Keras functional graph takes a layer's outputs
                # to be as many at every call.
                hidden_states, first = block(hidden_states, padding_mask=inputs["padding_mask"], with_first=True)
            encoder_outputs.append(hidden_states)
        if causal:
            pooled_output = pooler(_last_real_token(hidden_states, inputs["padding_mask"]))
        else:
            pooled_output = pooler(first[:, 0, :])  # (batch, hidden) from [CLS]
        outputs = {"sequence_output": hidden_states, "pooled_output": pooled_output,
                   "encoder_outputs": encoder_outputs}
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.fused_attention = bool(fused_attention)
        self.embedding_dim = embedding_dim
        self.num_groups = num_groups
        self.causal = bool(causal)
        self.embeddings = embeddings
        self.embedding_projection = embedding_projection
        self.transformer_layers = blocks
        self.pooler = pooler

    @property
    def token_embedding(self):
        """The token embedding layer (the MLM head ties its output to it)."""
        return self.embeddings.token_embedding

    def call(self, inputs, training=None, mask=None):
        _check_inputs(inputs, self.max_sequence_length, self.num_segments, self.vocabulary_size)
        return super().call(inputs, training=training, mask=mask)

    def get_config(self):
        config = {
            "vocabulary_size": self.vocabulary_size,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "hidden_dim": self.hidden_dim,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
            "max_sequence_length": self.max_sequence_length,
            "num_segments": self.num_segments,
            "activation": self.activation,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
            "fused_attention": self.fused_attention,
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
        }
        if self.embedding_dim is not None:  # absent by default: BERT configs stay as they were
            config["embedding_dim"] = self.embedding_dim
        if self.num_groups is not None:  # absent by default, as embedding_dim
            config["num_groups"] = self.num_groups
        if self.causal:  # absent by default, as embedding_dim
            config["causal"] = True
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Build the encoder of a built-in preset name or a preset folder.

        Args:
            preset: str. A name from `keras_bert_app.presets.names()`, or a
                folder: our preset (`config.json` + `model.weights.h5`), an HF
                checkpoint, a keras-hub preset or an original Google release.
                A built-in name with no local weights downloads and converts
                its checkpoint once (`convert.hub`); offline that fails with
                a message that says how to pass a local folder. Any of
                these is read by `convert.resolve.resolve_preset`.
            load_weights: bool. False builds the architecture with freshly
                initialised weights.
            **kwargs: overrides of the preset's config (e.g. `dropout=0.0`).
        """
        resolved = resolve.resolve_preset(preset, fetch_weights=load_weights)
        encoder = cls(**{**resolved.config["encoder"], **kwargs})
        if load_weights:
            resolved.load_weights(encoder)  # PresetError (with where to get weights) if there are none
        return encoder

    def save_to_preset(self, preset_dir):
        """Write `config.json` (encoder entry) and `model.weights.h5` to a folder.

        Other entries of an existing `config.json` (tokenizer, weights) are kept.
        """
        folder = presets.write_config_entry(
            preset_dir, "encoder", {k: v for k, v in self.get_config().items() if k in _CONFIG_KEYS}
        )
        self.save_weights(str(folder / presets.ENCODER_WEIGHTS_FILE))
        return folder


_CONFIG_KEYS = (
    "vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim", "dropout", "max_sequence_length",
    "num_segments", "activation", "layer_norm_epsilon", "initializer_range", "embedding_dim", "num_groups",
    "causal",
)


def _last_real_token(hidden_states, padding_mask):
    """The hidden state of each row's last real token: (batch, seq, H) -> (batch, H); rows padded on the right."""
    last = ops.maximum(ops.sum(ops.cast(padding_mask, "int32"), axis=1) - 1, 0)  # (batch,)
    return ops.take_along_axis(hidden_states, last[:, None, None], axis=1)[:, 0, :]


def _layers_per_group(num_layers, num_groups):
    """How many consecutive layers share one block; ArgumentError unless `num_groups` divides `num_layers`."""
    if num_groups is None:
        return 1
    errors.check_int("num_groups", num_groups, minimum=1)
    if num_layers % num_groups:
        raise errors.ArgumentError(
            "num_groups",
            f"num_groups must divide num_layers (each group is shared by num_layers / num_groups layers); "
            f"got num_groups={num_groups} with num_layers={num_layers}.",
        )
    return num_layers // num_groups


def _checked_shared_embeddings(embeddings, vocabulary_size, width, max_sequence_length, num_segments):
    """`shared_embeddings`, after checking that its tables have this encoder's sizes."""
    if not isinstance(embeddings, BertEmbeddings):
        raise errors.ArgumentTypeError(
            "shared_embeddings",
            f"shared_embeddings must be a BertEmbeddings layer (another encoder's `.embeddings`); "
            f"got {type(embeddings).__name__}.",
        )
    expected = {"vocabulary_size": vocabulary_size, "embedding_dim": width,
                "max_sequence_length": max_sequence_length, "num_segments": num_segments}
    found = {key: getattr(embeddings, "hidden_dim" if key == "embedding_dim" else key) for key in expected}
    differences = [f"{key} {found[key]} there, {expected[key]} here" for key in expected if found[key] != expected[key]]
    if differences:
        raise errors.ArgumentError(
            "shared_embeddings",
            "shared_embeddings do not fit this encoder: " + "; ".join(differences) + ".",
        )
    return embeddings


def _check_inputs(inputs, max_sequence_length, num_segments, vocabulary_size):
    """Clear errors for wrong keys, too-long sequences and out-of-range ids."""
    if not isinstance(inputs, dict) or set(inputs) != set(INPUT_NAMES):
        got = sorted(inputs) if isinstance(inputs, dict) else type(inputs).__name__
        raise ValueError(f"BertEncoder expects a dict with keys {list(INPUT_NAMES)}; got {got}.")
    for name in INPUT_NAMES:
        shape = inputs[name].shape
        if len(shape) != 2:
            raise ValueError(f"BertEncoder input {name!r} must be [batch, seq]; got shape {tuple(shape)}.")
        if shape[1] is not None and shape[1] > max_sequence_length:
            raise ValueError(
                f"BertEncoder input {name!r} has sequence length {shape[1]}, longer "
                f"than max_sequence_length={max_sequence_length}."
            )
    # Value checks only where the values are concrete (eager calls).
    for name, limit in (("segment_ids", num_segments), ("token_ids", vocabulary_size)):
        values = _concrete(inputs[name])
        if values is not None and values.size and (values.max() >= limit or values.min() < 0):
            raise ValueError(
                f"BertEncoder input {name!r} must be in [0, {limit}); got values in "
                f"[{values.min()}, {values.max()}]."
            )


def _concrete(tensor):
    """A NumPy copy of an eager tensor, or None for a symbolic/traced one."""
    if isinstance(tensor, np.ndarray):
        return tensor
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        if not tf.executing_eagerly() or not hasattr(tensor, "numpy"):
            return None
    try:
        return ops.convert_to_numpy(tensor)
    except Exception:  # traced (jax tracer, symbolic torch) values
        return None
