"""`sequence_length_for`: the tokens per packed example a run can use with a preset's encoder.

The encoder has `max_sequence_length` learned positions: a command's default
length (128; SQuAD 384) is cut to them, and an explicit length that does not
fit is refused in one line, before any data is read.
"""

from keras_bert_app import errors
from keras_bert_app.convert import resolve


def sequence_length_for(preset, sequence_length, default):
    """The sequence length to pack examples to for `preset`'s encoder.

    Args:
        preset: str or path. Any preset `resolve_preset` reads.
        sequence_length: int or None. The length asked for (None: `default`).
        default: int. The command's default length.

    Returns:
        int. `sequence_length`, or `default` cut to the encoder's positions.

    Raises:
        keras_bert_app.errors.ArgumentError: (argument "sequence_length")
            an explicit length longer than the encoder's positions.
    """
    positions = int(resolve.read_config(preset)["encoder"].get("max_sequence_length", 512))
    if sequence_length is None:
        return min(default, positions)
    if sequence_length > positions:
        raise errors.ArgumentError(
            "sequence_length",
            f"sequence_length {sequence_length} is longer than the preset's max_sequence_length {positions} "
            "(its learned positions); use at most that.",
        )
    return sequence_length
