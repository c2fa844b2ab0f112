"""Masked sentence-pair instances of a document, reproducibly seeded.

Each (seed, pass, document) gets its own random generator, so the instances
of a document do not depend on which worker process makes them or in which
order: same corpus, settings and seed give the same instances whatever the
number of workers.
"""

import numpy as np

from keras_bert_app.data.masking import MASKING_SCHEMES
from keras_bert_app.data.masking import continuation_flags
from keras_bert_app.data.masking import mask_batch
from keras_bert_app.data.masking import mask_units_batch
from keras_bert_app.data.pretraining_pairs import create_pair_spans
from keras_bert_app.data.pretraining_pairs import pack_pairs
from keras_bert_app.data.pretraining_pairs import pack_span_values


class InstanceMaker:
    """Make the masked pairs of a document, as the original algorithm does.

    Args:
        vocabulary: list of str. The tokenizer's vocabulary (ids are
            positions); `[CLS]`, `[SEP]` and `[MASK]` must be in it.
        max_seq_length: int. Length of `[CLS] A [SEP] B [SEP]` at most.
        max_predictions_per_seq: int. Most masked positions per instance.
        masked_lm_prob: float. Fraction of tokens to mask.
        short_seq_prob: float. Probability of a short target length per
            document.
        whole_word_masking: bool. Mask a word's tokens together (the same
            as `masking="whole_word"`).
        seed: int. Base seed.
        masking: str. `token`, `whole_word` or `ngram` (n-grams of whole
            words). Words are the corpus' segmenter words where it has them
            (`TokenizedCorpus.word_starts`: Chinese), otherwise a token and
            its `##` pieces. Whole words without a segmenter follow the
            original script exactly (80/10/10 drawn per token); with a
            segmenter, and for n-grams, the 80/10/10 is drawn per unit.
        max_ngram: int. Longest n-gram in words, for `masking="ngram"`.
    """

    def __init__(
        self,
        vocabulary,
        max_seq_length=128,
        max_predictions_per_seq=20,
        masked_lm_prob=0.15,
        short_seq_prob=0.1,
        whole_word_masking=False,
        seed=12345,
        masking="token",
        max_ngram=3,
    ):
        if max_seq_length < 5:
            raise ValueError(
                f"max_seq_length must be at least 5 ([CLS] A [SEP] B [SEP]), "
                f"got {max_seq_length}."
            )
        if not 0.0 < masked_lm_prob < 1.0:
            raise ValueError(f"masked_lm_prob must be in (0, 1), got {masked_lm_prob}.")
        if not 0.0 <= short_seq_prob <= 1.0:
            raise ValueError(f"short_seq_prob must be in [0, 1], got {short_seq_prob}.")
        if max_predictions_per_seq < 1:
            raise ValueError(
                f"max_predictions_per_seq must be at least 1, got "
                f"{max_predictions_per_seq}."
            )
        if masking not in MASKING_SCHEMES:
            raise ValueError(f"masking must be one of {list(MASKING_SCHEMES)}, got {masking!r}.")
        if max_ngram < 1:
            raise ValueError(f"max_ngram must be at least 1, got {max_ngram}.")
        token_ids = {token: index for index, token in enumerate(vocabulary)}
        missing = [t for t in ("[CLS]", "[SEP]", "[MASK]") if t not in token_ids]
        if missing:
            raise ValueError(f"The vocabulary lacks the special tokens {missing}.")
        self.cls_token_id = token_ids["[CLS]"]
        self.sep_token_id = token_ids["[SEP]"]
        self.mask_token_id = token_ids["[MASK]"]
        self.vocabulary_size = len(vocabulary)
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        self.masked_lm_prob = masked_lm_prob
        self.short_seq_prob = short_seq_prob
        self.seed = seed
        self.masking = "whole_word" if whole_word_masking and masking == "token" else masking
        self.max_ngram = max_ngram
        self.is_continuation = continuation_flags(vocabulary)

    def document_rng(self, pass_index, document_index):
        """The generator of one document in one pass (dupe or epoch)."""
        return np.random.default_rng([self.seed, pass_index, document_index])

    def document_instances(self, corpus, document_index, pass_index):
        """The instances of one document in one pass, as padded arrays.

        Returns:
            `(features, is_short)`. `features` maps the original TFRecord
            feature names to arrays over the document's instances:
            `input_ids`, `input_mask`, `segment_ids` int32 `[num_instances,
            max_seq_length]`; `masked_lm_positions`, `masked_lm_ids` int64
            and `masked_lm_weights` float32 `[num_instances,
            max_predictions_per_seq]`; `next_sentence_labels` int64
            `[num_instances]` (0 = IsNext, 1 = random). `is_short` says
            whether the document drew a short target length.
        """
        rng = self.document_rng(pass_index, document_index)
        spans, is_short = create_pair_spans(
            corpus, document_index, rng, self.max_seq_length, self.short_seq_prob
        )
        pairs = [(corpus.token_ids[a[0] : a[1]], corpus.token_ids[b[0] : b[1]], label) for a, b, label in spans]
        token_ids, segment_ids, num_tokens = pack_pairs(
            pairs, self.max_seq_length, self.cls_token_id, self.sep_token_id
        )
        masked_token_ids, positions, labels, weights = self._mask(corpus, spans, token_ids, num_tokens, rng)
        input_mask = np.arange(self.max_seq_length) < num_tokens[:, None]
        features = {
            "input_ids": masked_token_ids,
            "input_mask": input_mask.astype(np.int32),
            "segment_ids": segment_ids,
            "masked_lm_positions": positions,
            "masked_lm_ids": labels.astype(np.int64),
            "masked_lm_weights": weights,
            "next_sentence_labels": np.array(
                [label for _, _, label in pairs], dtype=np.int64
            ),
        }
        return features, is_short

    def _mask(self, corpus, spans, token_ids, num_tokens, rng):
        """`mask_batch` (token masking; `##` whole words as the original) or `mask_units_batch`."""
        special_token_ids = (self.cls_token_id, self.sep_token_id)
        settings = (self.mask_token_id, self.vocabulary_size, self.masked_lm_prob, self.max_predictions_per_seq)
        segmented = corpus.word_starts is not None
        if self.masking == "token" or (self.masking == "whole_word" and not segmented):
            is_continuation = self.is_continuation if self.masking == "whole_word" else None
            return mask_batch(token_ids, num_tokens, rng, special_token_ids, *settings, is_continuation)
        if segmented:
            word_starts = pack_span_values(corpus.word_starts, spans, self.max_seq_length)
        else:
            word_starts = ~self.is_continuation[token_ids]
        max_ngram = self.max_ngram if self.masking == "ngram" else 1
        return mask_units_batch(
            token_ids, num_tokens, word_starts, rng, special_token_ids, *settings, max_ngram=max_ngram
        )
