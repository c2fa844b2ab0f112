"""`QuestionAnsweringHead`: serving a `BertQuestionAnswerer` on raw question + context."""

import tensorflow as tf

from keras_bert_app.export import graph_ops
from keras_bert_app.export.serving_head import ServingHead
from keras_bert_app.preprocessing import bert_normalization
from keras_bert_app.preprocessing.segment_packer import SegmentPacker

WARMUP_QUESTIONS = (
    ("Who wrote the paper?", "The BERT paper was written by Devlin, Chang, Lee and Toutanova in 2018."),
    ("", ""),
    ("Where?", "Zürich, Switzerland  —  naïve café."),
)


class QuestionAnsweringHead(ServingHead):
    """Extractive QA in one window, with the best span's text and offsets.

    `serving_default(question, context)` (batched tf.string) packs
    `[CLS] question [SEP] context [SEP]` as the SQuAD featurizer does, in one
    window (no doc-stride windows): answers must lie in the context pieces
    that fit in the sequence.

    The best span is searched exhaustively among the context pieces: start
    <= end, at most `max_answer_length` pieces, highest start + end logit.

    Outputs: `start_logits`, `end_logits` float32 [batch, seq] (with length
    buckets, 0 at padding positions);
    `answer_start`, `answer_end` int64 [batch], code point offsets into
    `context` (end exclusive) of the span from its first piece's first
    character to its last piece's last character; `answer_text` [batch],
    that substring of the raw context (its own case, accents, whitespace);
    `score` float32 [batch], start + end logit of the span; `null_score`
    float32 [batch], the `[CLS]` start + end logit (SQuAD v2.0 clients answer
    "" when `null_score - score` exceeds their threshold). A context without
    pieces gives "", offsets 0 and `score` 0; offsets index the context after
    invalid UTF-8 is replaced by U+FFFD.

    `serve_token_ids` returns the logits, `score`, `null_score` and the
    span's sequence positions `answer_start_position`, `answer_end_position`
    (inclusive); the context is where `segment_ids` is 1, less `[SEP]`.

    Args:
        preprocessor: `BertPreprocessor`.
        max_query_length: int. Question pieces kept.
        max_answer_length: int. Longest answer, in pieces.
    """

    input_names = ("question", "context")
    sequence_outputs = ("start_logits", "end_logits")

    def __init__(self, preprocessor, max_query_length=64, max_answer_length=30):
        super().__init__("question_answering", preprocessor)
        if not 0 <= int(max_query_length) <= self.sequence_length - 4:
            raise ValueError(
                f"export_for_serving: max_query_length must be between 0 and sequence_length - 4 "
                f"= {self.sequence_length - 4} (room for [CLS], two [SEP] and a context piece); "
                f"got {max_query_length}."
            )
        if int(max_answer_length) < 1:
            raise ValueError(f"export_for_serving: max_answer_length must be >= 1; got {max_answer_length}.")
        self.max_query_length = int(max_query_length)
        self.max_answer_length = int(max_answer_length)
        self.packer = SegmentPacker(
            self.sequence_length,
            start_value=self.tokenizer.cls_token_id,
            end_value=self.tokenizer.sep_token_id,
            pad_value=self.tokenizer.pad_token_id,
            truncate="waterfall",
        )

    def serve_text(self, question, context):
        tf.debugging.assert_equal(
            tf.shape(question), tf.shape(context), message="question and context must have the same batch size"
        )
        seq = self.sequence_length
        context = bert_normalization.valid_utf8(context)
        # (The offsets path for both: one tokenizer graph in the SavedModel.)
        question_ids = self.tokenizer.tokenize_with_offsets(question)[0][:, : self.max_query_length]
        context_ids, byte_starts, byte_ends = self.tokenizer.tokenize_with_offsets(context)
        features = self.packer((question_ids, context_ids))
        context_start = question_ids.row_lengths() + 2  # (batch,)
        context_length = tf.minimum(context_ids.row_lengths(), seq - 1 - context_start)
        positions = tf.range(seq, dtype=tf.int64)[tf.newaxis, :]  # (1, seq)
        candidates = (positions >= context_start[:, tf.newaxis]) & (
            positions < (context_start + context_length)[:, tf.newaxis]
        )  # (batch, seq)
        features = {name: tf.cast(value, tf.int32) for name, value in features.items()}
        logits = self._logits(self.run_core(features))
        start, end, score, found = graph_ops.best_spans(*logits, candidates, self.max_answer_length)
        # Sequence positions -> context piece indices -> offsets.
        first = tf.maximum(tf.cast(start, tf.int64) - context_start, 0)[:, tf.newaxis]
        last = tf.maximum(tf.cast(end, tf.int64) - context_start, 0)[:, tf.newaxis]
        byte_starts = graph_ops.pad_rows(byte_starts, seq, value=0)  # (batch, seq)
        byte_ends = graph_ops.pad_rows(byte_ends, seq, value=0)
        byte_start = tf.gather(byte_starts, first, batch_dims=1)[:, 0]
        byte_end = tf.gather(byte_ends, last, batch_dims=1)[:, 0]
        char_span = graph_ops.char_offsets(
            context, tf.RaggedTensor.from_tensor(tf.stack([byte_start, byte_end], axis=1)), 2
        ).to_tensor(shape=[None, 2])  # (batch, 2)
        text = tf.strings.substr(context, byte_start, byte_end - byte_start, unit="BYTE")
        return {
            "start_logits": logits[0],
            "end_logits": logits[1],
            "answer_start": tf.where(found, char_span[:, 0], 0),
            "answer_end": tf.where(found, char_span[:, 1], 0),
            "answer_text": tf.where(found, text, ""),
            "score": score,
            "null_score": logits[0][:, 0] + logits[1][:, 0],
        }

    def outputs(self, raw, features):
        start_logits, end_logits = self._logits(raw)
        candidates = (
            tf.equal(features["segment_ids"], 1)
            & tf.not_equal(features["padding_mask"], 0)
            & tf.not_equal(features["token_ids"], self.tokenizer.sep_token_id)
        )
        start, end, score, _ = graph_ops.best_spans(start_logits, end_logits, candidates, self.max_answer_length)
        return {
            "start_logits": start_logits,
            "end_logits": end_logits,
            "answer_start_position": start,
            "answer_end_position": end,
            "score": score,
            "null_score": start_logits[:, 0] + end_logits[:, 0],
        }

    @staticmethod
    def _logits(raw):
        return tf.cast(raw["start_logits"], tf.float32), tf.cast(raw["end_logits"], tf.float32)

    def metadata(self):
        return {"max_query_length": self.max_query_length, "max_answer_length": self.max_answer_length}

    def length_warmup_input(self, text):
        return {"question": [""], "context": [text]}

    def warmup_inputs(self, texts):
        questions = [question for question, _ in WARMUP_QUESTIONS]
        contexts = [context for _, context in WARMUP_QUESTIONS]
        return [{"question": questions[:1], "context": contexts[:1]}, {"question": questions, "context": contexts}]
