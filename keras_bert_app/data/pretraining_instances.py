"""Masked pretraining instances of a document or a group of documents, reproducibly seeded.

Each (seed, pass, document) gets its own random generator, so the same
corpus, settings and seed give the same instances whatever the number of
workers. The pairing chooses the sequences: `nsp` (`pretraining_pairs`),
`sop` (`sentence_order`) or `full_sentences` (`full_sentences`, no pair
label).
"""

import numpy as np

from keras_bert_app import errors
from keras_bert_app.data.masking import MASKING_SCHEMES
from keras_bert_app.data.masking import continuation_flags
from keras_bert_app.data.masking import mask_batch
from keras_bert_app.data.masking import mask_units_batch
from keras_bert_app.data.full_sentences import full_sentence_pieces
from keras_bert_app.data.full_sentences import pack_pieces
from keras_bert_app.data.pretraining_pairs import create_pair_spans
from keras_bert_app.data.pretraining_pairs import pack_pairs
from keras_bert_app.data.pretraining_pairs import pack_span_values
from keras_bert_app.data.sentence_order import count_single_sentence_documents
from keras_bert_app.data.sentence_order import create_sentence_order_spans

# How sequences are made: next-sentence pairs, sentence-order pairs, or full sentences packed across documents.
PAIRINGS = ("nsp", "sop", "full_sentences")


def check_pairing_corpus(corpus, pairing, corpus_name):
    """`DataError` for a corpus the pairing cannot use; returns the documents `sop` skips (one sentence).

    `nsp` needs 2 documents (random next sentences come from another one),
    `sop` a document of 2 sentences; `corpus_name` starts the messages.
    """
    if pairing == "nsp" and corpus.num_documents < 2:
        raise errors.DataError(
            f"{corpus_name} holds 1 document: next-sentence prediction draws random next sentences "
            "from other documents, so at least 2 are needed. Separate documents with a blank line."
        )
    if pairing != "sop":
        return 0
    skipped = count_single_sentence_documents(corpus)
    if skipped == corpus.num_documents:
        raise errors.DataError(
            f"All {skipped} document(s) of {corpus_name[0].lower() + corpus_name[1:]} hold a single sentence: "
            "sentence-order pairs are two consecutive segments of one document, so none can be made, and "
            "one-sentence documents are skipped. Put one sentence per line (a blank line between documents), "
            "or use pairing nsp or full_sentences."
        )
    return skipped


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
            words). Words are the corpus' segmenter words where it has them,
            otherwise a token and its `##` pieces (then whole words follow
            the original script exactly).
        max_ngram: int. Longest n-gram in words, for `masking="ngram"`.
        pairing: str. `nsp` (the original: label 0 = IsNext, 1 = random),
            `sop` (label 0 = in order, 1 = swapped) or `full_sentences`
            (sequences of whole sentences across documents, no label).
    """

    def __init__(self, vocabulary, max_seq_length=128, max_predictions_per_seq=20, masked_lm_prob=0.15,
                 short_seq_prob=0.1, whole_word_masking=False, seed=12345, masking="token", max_ngram=3,
                 pairing="nsp"):
        if pairing not in PAIRINGS:
            raise ValueError(f"pairing must be one of {list(PAIRINGS)}, got {pairing!r}.")
        if max_seq_length < 5:
            raise ValueError(f"max_seq_length must be at least 5 ([CLS] A [SEP] B [SEP]), got {max_seq_length}.")
        if not 0.0 < masked_lm_prob < 1.0:
            raise ValueError(f"masked_lm_prob must be in (0, 1), got {masked_lm_prob}.")
        if not 0.0 <= short_seq_prob <= 1.0:
            raise ValueError(f"short_seq_prob must be in [0, 1], got {short_seq_prob}.")
        if max_predictions_per_seq < 1:
            raise ValueError(f"max_predictions_per_seq must be at least 1, got {max_predictions_per_seq}.")
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
        self.pairing = pairing
        self.is_continuation = continuation_flags(vocabulary)

    def document_rng(self, pass_index, document_index):
        """The generator of one document in one pass (dupe or epoch)."""
        return np.random.default_rng([self.seed, pass_index, document_index])

    def document_instances(self, corpus, document_index, pass_index):
        """The pairs of one document in one pass (`nsp`, `sop`), as padded arrays.

        Returns:
            `(features, is_short)`. `features` maps the original TFRecord
            feature names to arrays over the document's instances:
            `input_ids`, `input_mask`, `segment_ids` int32 `[num_instances,
            max_seq_length]`; `masked_lm_positions`, `masked_lm_ids` int64
            and `masked_lm_weights` float32 `[num_instances,
            max_predictions_per_seq]`; `next_sentence_labels` int64
            `[num_instances]` (nsp: 0 = IsNext, 1 = random; sop: 0 = in
            order, 1 = swapped; a one-sentence document has no sop pair).
            `is_short` says whether the document drew a short target length.
        """
        if self.pairing == "full_sentences":
            raise ValueError("full_sentences packs groups of documents: use group_instances.")
        rng = self.document_rng(pass_index, document_index)
        make_spans = create_sentence_order_spans if self.pairing == "sop" else create_pair_spans
        spans, is_short = make_spans(corpus, document_index, rng, self.max_seq_length, self.short_seq_prob)
        labels = np.array([label for _, _, label in spans], dtype=np.int64)
        if not spans:
            return self._features(*self._no_instances()), is_short
        pairs = [(corpus.token_ids[a[0] : a[1]], corpus.token_ids[b[0] : b[1]], label) for a, b, label in spans]
        token_ids, segment_ids, num_tokens = pack_pairs(pairs, self.max_seq_length, self.cls_token_id,
                                                        self.sep_token_id)
        word_starts = None
        if corpus.word_starts is not None:
            word_starts = pack_span_values(corpus.word_starts, spans, self.max_seq_length)
        masked = self._mask(token_ids, num_tokens, word_starts, rng)
        return self._features(segment_ids, num_tokens, labels, *masked), is_short

    def group_instances(self, corpus, document_indices, pass_index):
        """The instances of some documents in one pass, concatenated.

        `nsp`, `sop`: each document's `document_instances`, in the given
        order. `full_sentences`: the documents packed back to back in the
        given order (`full_sentences.full_sentence_pieces`), masked with the
        generator of the first document; no `next_sentence_labels`.

        Returns:
            `(features, num_short)`: `features` as `document_instances`
            gives; `num_short` counts the documents that drew a short target
            length (0 for `full_sentences`, which has no target length).
        """
        document_indices = list(document_indices)
        if self.pairing != "full_sentences":
            parts, num_short = [], 0
            for document_index in document_indices:
                features, is_short = self.document_instances(corpus, document_index, pass_index)
                parts.append(features)
                num_short += is_short
            return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}, num_short
        rng = self.document_rng(pass_index, document_indices[0])
        pieces = full_sentence_pieces(corpus, document_indices, self.max_seq_length)
        token_ids, num_tokens = pack_pieces(corpus.token_ids, pieces, self.max_seq_length, self.cls_token_id,
                                            self.sep_token_id)
        word_starts = None
        if corpus.word_starts is not None:
            word_starts, _ = pack_pieces(corpus.word_starts, pieces, self.max_seq_length)
        masked = self._mask(token_ids, num_tokens, word_starts, rng)
        return self._features(np.zeros_like(token_ids), num_tokens, None, *masked), 0

    def _no_instances(self):
        """`_features` arguments of no instance (a document without pairs)."""
        sequences = np.zeros((0, self.max_seq_length), np.int32)
        predictions = np.zeros((0, self.max_predictions_per_seq), np.int64)
        return (sequences, np.zeros(0, np.int64), np.zeros(0, np.int64),
                sequences, predictions, predictions, predictions.astype(np.float32))

    def _features(self, segment_ids, num_tokens, labels, masked_token_ids, positions, masked_ids, weights):
        """The original feature names; no `next_sentence_labels` when `labels` is None."""
        input_mask = np.arange(self.max_seq_length) < num_tokens[:, None]
        features = {
            "input_ids": masked_token_ids,
            "input_mask": input_mask.astype(np.int32),
            "segment_ids": segment_ids,
            "masked_lm_positions": positions,
            "masked_lm_ids": masked_ids.astype(np.int64),
            "masked_lm_weights": weights,
        }
        if labels is not None:
            features["next_sentence_labels"] = labels
        return features

    def _mask(self, token_ids, num_tokens, word_starts, rng):
        """`mask_batch` (token masking; `##` whole words as the original) or `mask_units_batch`.

        `word_starts`: the segmenter's word starts laid out as the tokens, or
        None (words are a token and its `##` pieces).
        """
        special_token_ids = (self.cls_token_id, self.sep_token_id)
        settings = (self.mask_token_id, self.vocabulary_size, self.masked_lm_prob, self.max_predictions_per_seq)
        segmented = word_starts is not None
        if self.masking == "token" or (self.masking == "whole_word" and not segmented):
            is_continuation = self.is_continuation if self.masking == "whole_word" else None
            return mask_batch(token_ids, num_tokens, rng, special_token_ids, *settings, is_continuation)
        if not segmented:
            word_starts = ~self.is_continuation[token_ids]
        max_ngram = self.max_ngram if self.masking == "ngram" else 1
        return mask_units_batch(token_ids, num_tokens, word_starts, rng, special_token_ids, *settings,
                                max_ngram=max_ngram)
