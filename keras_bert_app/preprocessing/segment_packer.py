"""`SegmentPacker`: one or two token segments -> BERT encoder inputs."""

import keras
import tensorflow as tf

from keras_bert_app.preprocessing.preprocessing_layer import PreprocessingLayer

TRUNCATE_MODES = ("round_robin", "longest_first", "waterfall")


@keras.saving.register_keras_serializable(package="keras_bert_app")
class SegmentPacker(PreprocessingLayer):
    """Pack one or two token segments the way the original BERT does.

    `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, padded with `[PAD]` to
    `sequence_length`. Segment ids are 0 through the first `[SEP]`, 1 after.
    A second segment with no tokens is left out (the original's `if tokens_b:`),
    so that row is packed as a single segment.

    Truncation keeps the packed row within `sequence_length`:
    - "round_robin" (the default; "longest_first" is the same): the original
      `_truncate_seq_pair`: drop the last token of the longer segment (of the
      second on a tie) until the pair fits. With both long, A keeps
      ceil(budget / 2) tokens and B floor(budget / 2).
    - "waterfall": A keeps as much as fits, B gets what is left.

    Args:
        sequence_length: int. The packed length (>= 3).
        start_value: int. The `[CLS]` id.
        end_value: int. The `[SEP]` id.
        pad_value: int. The `[PAD]` id.
        truncate: str. "round_robin", "longest_first" or "waterfall".

    Call args:
        inputs: a ragged (or dense) int tensor `[batch, (tokens)]`, or a tuple
            of one or two of them; unbatched `[(tokens)]` works too.

    Returns:
        dict of `token_ids` and `segment_ids` (int32) and `padding_mask`
        (bool), each `[batch, sequence_length]` (`[sequence_length]` unbatched).

    Example:
    ```python
    packer = SegmentPacker(8, start_value=101, end_value=102, pad_value=0)
    packer((tf.ragged.constant([[7, 8, 9]]), tf.ragged.constant([[4, 5]])))
    # token_ids [[101, 7, 8, 9, 102, 4, 5, 102]], segment_ids [[0, 0, 0, 0, 0, 1, 1, 1]]
    ```
    """

    def __init__(
        self,
        sequence_length,
        start_value,
        end_value,
        pad_value,
        truncate="round_robin",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if int(sequence_length) < 3:
            raise ValueError(f"SegmentPacker: sequence_length must be >= 3, got {sequence_length}")
        if truncate not in TRUNCATE_MODES:
            raise ValueError(
                f"SegmentPacker: truncate must be one of {TRUNCATE_MODES}, got {truncate!r}"
            )
        self.sequence_length = int(sequence_length)
        self.start_value = int(start_value)
        self.end_value = int(end_value)
        self.pad_value = int(pad_value)
        self.truncate = truncate
        # In a graph, packing calls a function traced once per input type (one or two segments),
        # not its ops traced anew into each tf.data map and serving function.
        self._pack_graph = tf.function(self._pack, reduce_retracing=True, autograph=False)

    def call(self, inputs):
        segments = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
        if not 1 <= len(segments) <= 2:
            raise ValueError(f"SegmentPacker: expected 1 or 2 segments, got {len(segments)}")
        with tf.device("cpu"):
            segments = [_as_ragged(segment) for segment in segments]
            unbatched = not isinstance(segments[0], tf.RaggedTensor)
            if unbatched:  # [(tokens)] -> [1, (tokens)]
                segments = [
                    tf.RaggedTensor.from_tensor(segment[tf.newaxis]) for segment in segments
                ]
            packed = self._pack(*segments) if tf.executing_eagerly() else self._pack_graph(*segments)
            if unbatched:
                packed = {name: value[0] for name, value in packed.items()}
            return packed

    def _pack(self, first, second=None):
        # first, second: int32 ragged [batch, (tokens)]
        batch = first.nrows()
        if second is None:
            second = tf.RaggedTensor.from_row_lengths(
                tf.zeros([0], tf.int32), tf.zeros([batch], tf.int64), validate=False
            )
        first_length = first.row_lengths()
        second_length = second.row_lengths()
        has_second = second_length > 0
        # [CLS], [SEP], and a second [SEP] when there is a second segment.
        budget = self.sequence_length - 2 - tf.cast(has_second, tf.int64)
        first_keep, second_keep = self._lengths_to_keep(first_length, second_length, budget)
        first = _keep_first(first, first_keep)
        second = _keep_first(second, second_keep)

        def fill(value, count):  # ragged [batch, (count)] of `value`
            return tf.RaggedTensor.from_row_lengths(
                tf.fill([tf.reduce_sum(count)], tf.constant(value, tf.int32)), count, validate=False
            )

        ones = tf.ones([batch], tf.int64)
        # A second segment truncated to nothing gets no [SEP] either (the
        # original tests `if tokens_b:` after truncating).
        second_end = tf.cast(second_keep > 0, tf.int64)
        token_ids = tf.concat(
            [fill(self.start_value, ones), first, fill(self.end_value, ones), second,
             fill(self.end_value, second_end)],
            axis=1,
        )
        segment_ids = tf.concat(
            [fill(0, 2 + first_keep), fill(1, second_keep + second_end)], axis=1
        )
        shape = [None, self.sequence_length]
        return {
            "token_ids": token_ids.to_tensor(self.pad_value, shape=shape),
            "segment_ids": segment_ids.to_tensor(0, shape=shape),
            "padding_mask": tf.ones_like(token_ids, tf.bool).to_tensor(False, shape=shape),
        }

    def _lengths_to_keep(self, first_length, second_length, budget):
        """How many tokens of each segment fit in `budget` (int64 [batch] each)."""
        if self.truncate == "waterfall":
            first_keep = tf.minimum(first_length, budget)
            return first_keep, tf.minimum(second_length, budget - first_keep)
        # The original _truncate_seq_pair: pop from the longer (the second on
        # a tie) until the pair fits, i.e. the second keeps at least half the
        # budget (rounded down) if it has that much.
        second_keep = tf.minimum(second_length, tf.maximum(budget // 2, budget - first_length))
        return tf.minimum(first_length, budget - second_keep), second_keep

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "start_value": self.start_value,
                "end_value": self.end_value,
                "pad_value": self.pad_value,
                "truncate": self.truncate,
            }
        )
        return config


def _as_ragged(segment):
    """int32 ragged [batch, (tokens)], or a dense [tokens] for an unbatched segment."""
    if isinstance(segment, tf.RaggedTensor):
        return tf.cast(segment, tf.int32)
    if isinstance(segment, (list, tuple)) and segment and isinstance(segment[0], (list, tuple)):
        return tf.ragged.constant(segment, dtype=tf.int32)
    segment = tf.cast(tf.convert_to_tensor(segment), tf.int32)
    if segment.shape.rank == 2:
        return tf.RaggedTensor.from_tensor(segment)
    return segment


def _keep_first(segment, keep):
    # segment: ragged [batch, (tokens)]; keep: int64 [batch], at most each row's length. The kept tokens gathered
    # by their flat positions: a few plain ops (a ragged comparison and mask run op by op in Python when eager).
    starts = segment.row_starts()
    positions = tf.ragged.range(starts, starts + keep).flat_values
    return tf.RaggedTensor.from_row_lengths(tf.gather(segment.flat_values, positions), keep, validate=False)
