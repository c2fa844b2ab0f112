"""Masked sentence-pair instances of a document, reproducibly seeded.

Each (seed, pass, document) gets its own random generator, so the instances
of a document do not depend on which worker process makes them or in which
order: same corpus, settings and seed give the same instances whatever the
number of workers.
"""

import numpy as np

from keras_bert_app.data.masking import continuation_flags
from keras_bert_app.data.masking import mask_batch
from keras_bert_app.data.pretraining_pairs import create_pairs
from keras_bert_app.data.pretraining_pairs import pack_pairs


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
        whole_word_masking: bool. Mask a word and its `##` pieces together.
        seed: int. Base seed.
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
        self.is_continuation = (
            continuation_flags(vocabulary) if whole_word_masking else None
        )

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
        pairs, is_short = create_pairs(
            corpus, document_index, rng, self.max_seq_length, self.short_seq_prob
        )
        token_ids, segment_ids, num_tokens = pack_pairs(
            pairs, self.max_seq_length, self.cls_token_id, self.sep_token_id
        )
        masked_token_ids, positions, labels, weights = mask_batch(
            token_ids,
            num_tokens,
            rng,
            (self.cls_token_id, self.sep_token_id),
            self.mask_token_id,
            self.vocabulary_size,
            self.masked_lm_prob,
            self.max_predictions_per_seq,
            self.is_continuation,
        )
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
