"""`--pairing full_sentences`: RoBERTa's packing, in records and in the dynamic pipeline."""

import json

import numpy as np
import pytest

from keras_bert_app.data.corpus import TokenizedCorpus
from keras_bert_app.data.create_pretraining_data import create_pretraining_data
from keras_bert_app.data.full_sentences import full_sentence_pieces
from tests.data.wiki_slice import uncased_tokenizer, write_wiki_slice


@pytest.fixture(scope="module")
def wiki(shared_data, tmp_path_factory):
    """The first 32 articles of the Wikipedia sample and a tokenizer of the uncased vocabulary."""
    path, _ = write_wiki_slice(shared_data, tmp_path_factory.mktemp("wiki"), 32)
    return path, uncased_tokenizer(shared_data / "vocab" / "bert_uncased_vocab.txt")


def test_records_are_95_percent_real_tokens_and_hold_no_pair_label(wiki, tmp_path):
    """At RoBERTa's length, 512; at 128 a sequence ends on average half a sentence short (about 86% here)."""
    import tensorflow as tf

    from keras_bert_app.data.pretraining_records import parse_features, records_pairing

    corpus, tokenizer = wiki
    output = tmp_path / "full"
    create_pretraining_data(str(corpus), str(output), tokenizer, pairing="full_sentences", max_seq_length=512,
                            max_predictions_per_seq=20, dupe_factor=1, progress=False)
    files = [str(path) for path in output.glob("*.tfrecord")]
    raw = next(iter(tf.data.TFRecordDataset(files)))
    assert "next_sentence_labels" not in tf.train.Example.FromString(raw.numpy()).features.feature
    spec = parse_features(512, 20, pair_labels=False)
    mask = np.concatenate([tf.io.parse_example(batch, spec)["input_mask"].numpy()
                           for batch in tf.data.TFRecordDataset(files).batch(1000)])
    summary = json.loads((output / "pretraining_data.json").read_text())
    assert len(mask) > 300 and mask.mean() >= 0.95
    assert summary["pairing"] == "full_sentences" and summary["real_token_fraction"] == pytest.approx(mask.mean())
    assert records_pairing(files, pair_labels=False)[0] == "full_sentences"


def _corpus(sentence_lengths, sentences_per_document):
    return TokenizedCorpus(
        np.arange(sum(sentence_lengths)), np.concatenate([[0], np.cumsum(sentence_lengths)]),
        np.concatenate([[0], np.cumsum(sentences_per_document)]),
    )


def test_packing_keeps_sentences_whole_and_crosses_documents_with_a_separator():
    rng = np.random.default_rng(0)
    sentences_per_document = rng.integers(1, 8, size=40)
    sentence_lengths = rng.integers(1, 30, size=sentences_per_document.sum())
    sentence_lengths[5] = 70  # longer than a sequence: the only sentence cut
    corpus = _corpus(sentence_lengths, sentences_per_document)
    sequences = full_sentence_pieces(corpus, range(corpus.num_documents), 32)
    pieces = [piece for sequence in sequences for piece in sequence]
    # Every token once, in order.
    assert np.array_equal(np.concatenate([np.arange(start, end) for start, end in pieces]), corpus.token_ids)
    document_ends = set(corpus.sentence_starts[corpus.document_starts[1:]].tolist())
    sentence_starts = set(corpus.sentence_starts.tolist())
    long_sentence = set(range(int(corpus.sentence_starts[5]), int(corpus.sentence_starts[6]) + 1))
    for sequence in sequences:
        assert 1 + sum(end - start + 1 for start, end in sequence) <= 32  # [CLS] (piece [SEP])...
        for start, end in sequence[:-1]:
            assert end in document_ends  # two pieces in a sequence: a document boundary between them
        assert sequence[0][0] in sentence_starts or sequence[0][0] in long_sentence
        assert sequence[-1][1] in sentence_starts or sequence[-1][1] in long_sentence
    # Whole sentences as long as the next one fits: a sequence ends short only by less than the next piece.
    for sequence, following in zip(sequences, sequences[1:]):
        used = 1 + sum(end - start + 1 for start, end in sequence)
        next_start, next_end = following[0]
        assert used + (next_end - next_start) + 1 > 32 or next_end - next_start == 30


def test_dynamic_pipeline_packs_once_and_masks_each_epoch_anew_without_a_pair_label(wiki):
    """Packed once, as fairseq packs its blocks; every epoch a new order and new masks (`data.batch_masking`)."""
    from keras_bert_app.data.dynamic_pretraining import dynamic_pretraining_dataset

    corpus, tokenizer = wiki
    dataset = dynamic_pretraining_dataset(str(corpus), tokenizer, 64, max_seq_length=128,
                                          pairing="full_sentences", seed=1)
    epochs = []
    for _ in range(2):
        batches = list(dataset.take(8))
        x, y, _ = batches[0]
        assert set(y) == {"mlm"} and not np.any(x["segment_ids"].numpy())
        epochs.append(np.concatenate([x["token_ids"].numpy() for x, _, _ in batches]))
    padding = np.concatenate([x["padding_mask"].numpy() for x, _, _ in batches])
    assert padding.mean() > 0.8  # about 0.86 at 128 tokens
    assert not np.array_equal(epochs[0], epochs[1])  # new order, new masks
