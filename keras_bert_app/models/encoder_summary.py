"""`summarize_encoder`: an encoder built from a preset, its size and one timed forward pass."""

import dataclasses
import time

import keras
import numpy as np

from keras_bert_app import errors
from keras_bert_app.convert import resolve
from keras_bert_app.models.bert_encoder import BertEncoder


DEFAULT_SEQUENCE_LENGTH = 128


@dataclasses.dataclass(frozen=True)
class EncoderSummary:
    """What `summarize_encoder` found.

    Attributes:
        encoder: BertEncoder. The model (call `.summary()` for its layers).
        parameters: int. Number of weights.
        weights_loaded: bool. False: the preset has no weights here, so they are freshly initialised.
        backend: str. The Keras backend.
        forward_seconds: float. One forward pass (after a first, compiling one).
        output_shapes: dict. Shape of `sequence_output` and `pooled_output`, and the number of `encoder_outputs`.
        sequence_length: int. Tokens per sequence of the timed batch.
    """

    encoder: BertEncoder
    parameters: int
    weights_loaded: bool
    backend: str
    forward_seconds: float
    output_shapes: dict
    sequence_length: int = DEFAULT_SEQUENCE_LENGTH


def summarize_encoder(preset="bert_tiny_uncased", sequence_length=None, batch_size=8):
    """Build the encoder of a preset (its weights when it has some here) and time a forward pass.

    Args:
        preset: str or path. Any preset `BertEncoder.from_preset` reads; a
            built-in name without local weights gets fresh weights (nothing
            is downloaded).
        sequence_length: int. Tokens per sequence of the random batch
            (default: 128, or the preset's `max_sequence_length` if fewer).
        batch_size: int. Sequences in the batch.

    Returns:
        `EncoderSummary`.

    Raises:
        keras_bert_app.errors.ArgumentError: a bad preset, length or batch size.
    """
    if sequence_length is not None:
        errors.check_int("sequence_length", sequence_length, minimum=1)
    errors.check_int("batch_size", batch_size, minimum=1)
    preset = resolve.resolve_preset(preset)  # read once: the encoder takes it as it is
    weights_loaded = preset.has_weights
    encoder = BertEncoder.from_preset(preset, load_weights=weights_loaded)
    if sequence_length is None:
        sequence_length = min(DEFAULT_SEQUENCE_LENGTH, encoder.max_sequence_length)
    if sequence_length > encoder.max_sequence_length:
        raise errors.ArgumentError(
            "sequence_length",
            f"sequence_length {sequence_length} is longer than the preset's max_sequence_length "
            f"{encoder.max_sequence_length}.",
        )
    rng = np.random.default_rng(0)
    shape = (batch_size, sequence_length)
    inputs = {
        "token_ids": rng.integers(1, encoder.vocabulary_size, shape).astype("int32"),
        "segment_ids": np.zeros(shape, "int32"),
        "padding_mask": np.ones(shape, "int32"),
    }
    encoder.predict(inputs, verbose=0)  # build/compile once
    started = time.perf_counter()
    outputs = encoder.predict(inputs, verbose=0)
    elapsed = time.perf_counter() - started
    return EncoderSummary(
        encoder=encoder,
        parameters=encoder.count_params(),
        weights_loaded=weights_loaded,
        backend=keras.config.backend(),
        forward_seconds=elapsed,
        output_shapes={
            "sequence_output": tuple(outputs["sequence_output"].shape),
            "pooled_output": tuple(outputs["pooled_output"].shape),
            "encoder_outputs": len(outputs["encoder_outputs"]),
        },
        sequence_length=sequence_length,
    )
