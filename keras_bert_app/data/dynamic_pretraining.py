"""Dynamic pretraining data: corpus files straight to masked-pair batches.

Instead of writing `dupe_factor` masked copies of the corpus to disk, every
epoch draws fresh sentence pairs and fresh masks (dynamic masking, as RoBERTa
does) with the static data's code. The corpus is tokenized (and segmented)
once, when the dataset is built; each pass over the dataset is the next
epoch, with its own seeded draws.
"""

import numpy as np

from keras_bert_app import errors
from keras_bert_app.data.corpus import expand_input_files
from keras_bert_app.data.corpus import tokenize_corpus
from keras_bert_app.data.masking import masking_scheme
from keras_bert_app.data.pretraining_instances import InstanceMaker
from keras_bert_app.data.pretraining_instances import check_pairing_corpus
from keras_bert_app.data.pretraining_records import features_to_model_inputs
from keras_bert_app.data.segmentation import resolve_segmenter
from keras_bert_app.data.segmentation import summary_line

# Documents packed together by `full_sentences` (one generator call).
DOCUMENTS_PER_GROUP = 16
# Pairings packed once and masked after batching, in TensorFlow (`batch_masking`), with token masking.
PACKED_ONCE = ("segments", "full_sentences")


def dynamic_pretraining_dataset(input_files, tokenizer, batch_size, max_seq_length=128, max_predictions_per_seq=20,
                                masked_lm_prob=0.15, short_seq_prob=0.1, whole_word_masking=False, seed=12345,
                                shuffle_buffer_size=10000, drop_remainder=False, masking="token", max_ngram=3,
                                segmenter=None, entity_masking=False, log=None, pairing="nsp", corruption=(0.8, 0.1)):
    """A dataset of masked sentence-pair batches with fresh masks every epoch.

    Args:
        input_files: str or list of str. Corpus files or globs (one sentence
            per line, blank line between documents; `.gz` allowed).
        tokenizer: a `BertTokenizer` (called on a `tf.string` batch, returns
            ragged ids; has `get_vocabulary()`).
        batch_size: int.
        max_seq_length, max_predictions_per_seq, masked_lm_prob,
        short_seq_prob, whole_word_masking, seed: see `InstanceMaker`.
        shuffle_buffer_size: int. Instances in the shuffle buffer (documents
            are also visited in a new random order each epoch).
        drop_remainder: bool. Drop a last partial batch (needed on TPU).
        masking, max_ngram: see `InstanceMaker` (`token`, `whole_word` or
            `ngram`).
        segmenter: `"jieba"`, a callable `str -> list of str`, or None: cut
            CJK runs into words for whole-word and n-gram masking (once, when
            the dataset is built).
        entity_masking: bool. With `segmenter="jieba"`, named entities are
            units (see `segmentation.jieba_entity_segmenter`).
        log: optional callable taking a str: gets lines on the corpus, the
            segmentation and (`sop`) the one-sentence documents skipped.
        pairing: str. `nsp`, `sop`, `full_sentences` (see
            `InstanceMaker`) or `segments` (ELECTRA's plain two-segment
            examples, `electra_segments`; token masking only). With token
            masking, `full_sentences` and `segments` are packed once and
            masked anew at every batch (`batch_masking`).
        corruption: `(mask_probability, random_probability)` at the masked
            positions of packed-once pairings (BERT's 0.8/0.1; ELECTRA's
            0.85/0); the others use BERT's.

    Returns:
        A `tf.data.Dataset` of `(x, y, sample_weight)` as
        `pretraining_dataset` gives: `x` has `token_ids`, `segment_ids`,
        `padding_mask` `[batch, max_seq_length]` and `mask_positions`
        `[batch, max_predictions_per_seq]`; `y` has `mlm` and `nsp` (not
        for `full_sentences`);
        `sample_weight` has `mlm`. Iterating it again gives the next epoch.
    """
    import tensorflow as tf

    scheme = masking_scheme(masking, max_ngram, whole_word_masking, segmenter)
    segment = resolve_segmenter(segmenter, entities=entity_masking)
    files = expand_input_files(input_files)
    corpus = tokenize_corpus(files, tokenizer, segmenter=segment)
    log = log if log is not None else (lambda line: None)
    log(f"Corpus: {corpus.num_documents:,} documents, {corpus.num_sentences:,} sentences, "
        f"{len(corpus.token_ids):,} tokens from {len(files)} file(s).")
    if corpus.segmentation is not None:
        log(summary_line(corpus.segmentation))
    skipped = check_pairing_corpus(corpus, pairing, "The corpus")
    if skipped:
        log(f"Sentence-order pairs: {skipped} of {corpus.num_documents} documents hold one sentence and are skipped.")
    vocabulary = list(tokenizer.get_vocabulary())
    if scheme == "token" and corpus.word_starts is None and pairing in PACKED_ONCE:
        return _packed_once(corpus, vocabulary, pairing, batch_size, max_seq_length, max_predictions_per_seq,
                            masked_lm_prob, seed, drop_remainder, corruption, log)
    if pairing == "segments":
        raise ValueError("pairing 'segments' (ELECTRA's) takes token masking without a segmenter; got "
                         f"masking {scheme!r}" + (" with a segmenter." if corpus.word_starts is not None else "."))
    maker = InstanceMaker(vocabulary, max_seq_length=max_seq_length, max_predictions_per_seq=max_predictions_per_seq,
                          masked_lm_prob=masked_lm_prob, short_seq_prob=short_seq_prob, seed=seed,
                          masking=scheme, max_ngram=max_ngram, pairing=pairing)
    group_size = DOCUMENTS_PER_GROUP if pairing == "full_sentences" else 1
    epochs_started = [0]

    def documents_of_next_epoch():
        epoch = epochs_started[0]
        epochs_started[0] += 1
        order = np.random.default_rng([seed, epoch]).permutation(corpus.num_documents)
        for start in range(0, corpus.num_documents, group_size):
            features, _ = maker.group_instances(corpus, order[start : start + group_size].tolist(), epoch)
            yield features

    sequence = tf.TensorSpec([None, max_seq_length], tf.int32)
    predictions = tf.TensorSpec([None, max_predictions_per_seq], tf.int64)
    signature = {
        "input_ids": sequence,
        "input_mask": sequence,
        "segment_ids": sequence,
        "masked_lm_positions": predictions,
        "masked_lm_ids": predictions,
        "masked_lm_weights": tf.TensorSpec([None, max_predictions_per_seq], tf.float32),
    }
    if pairing != "full_sentences":
        signature["next_sentence_labels"] = tf.TensorSpec([None], tf.int64)
    dataset = tf.data.Dataset.from_generator(documents_of_next_epoch, output_signature=signature).unbatch()
    dataset = dataset.shuffle(shuffle_buffer_size, seed=seed).batch(batch_size, drop_remainder=drop_remainder)
    return dataset.map(features_to_model_inputs).prefetch(tf.data.AUTOTUNE)


def _packed_once(corpus, vocabulary, pairing, batch_size, max_seq_length, max_predictions_per_seq, masked_lm_prob,
                 seed, drop_remainder, corruption, log):
    """`segments` and `full_sentences` with token masking: packed here, once; shuffled and masked per epoch in TF."""
    from keras_bert_app.data.batch_masking import masked_batches
    from keras_bert_app.data.electra_segments import electra_segments
    from keras_bert_app.data.full_sentences import full_sentence_pieces, pack_pieces

    cls_token_id, sep_token_id = vocabulary.index("[CLS]"), vocabulary.index("[SEP]")
    rng = np.random.default_rng([seed, 0])
    if pairing == "segments":
        token_ids, segment_ids, num_tokens = electra_segments(corpus, max_seq_length, rng, cls_token_id, sep_token_id)
    else:
        pieces = full_sentence_pieces(corpus, rng.permutation(corpus.num_documents).tolist(), max_seq_length)
        token_ids, num_tokens = pack_pieces(corpus.token_ids, pieces, max_seq_length, cls_token_id, sep_token_id)
        segment_ids = np.zeros_like(token_ids)
    if not len(token_ids):
        raise errors.DataError("The corpus holds no tokens to pack into sequences.")
    log(f"Packed once into {len(token_ids):,} sequences ({pairing}); each epoch shuffles them and masks every "
        "batch anew.")
    return masked_batches(
        token_ids, segment_ids, num_tokens, batch_size, max_predictions_per_seq=max_predictions_per_seq,
        special_token_ids=(cls_token_id, sep_token_id), mask_token_id=vocabulary.index("[MASK]"),
        vocabulary_size=len(vocabulary), masked_lm_prob=masked_lm_prob, mask_probability=corruption[0],
        random_probability=corruption[1], seed=seed, drop_remainder=drop_remainder,
    )
