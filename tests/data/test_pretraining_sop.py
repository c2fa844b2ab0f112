"""`--pairing sop`: ALBERT's sentence-order pairs on the Wikipedia sample, checked against the source documents."""

import collections
import json

import numpy as np
import pytest

from keras_bert_app import errors
from keras_bert_app.data.create_pretraining_data import create_pretraining_data
from tests.data.wiki_slice import uncased_tokenizer, write_wiki_slice

SEQUENCE_LENGTH = 64
PREDICTIONS = 10


@pytest.fixture(scope="module")
def wiki(shared_data, tmp_path_factory):
    """The first 32 articles of the Wikipedia sample, a tokenizer of the uncased vocabulary, and its file."""
    path, documents = write_wiki_slice(shared_data, tmp_path_factory.mktemp("wiki"), 32)
    vocab = shared_data / "vocab" / "bert_uncased_vocab.txt"
    return path, documents, uncased_tokenizer(vocab), str(vocab)


@pytest.fixture(scope="module")
def sop_records(wiki, tmp_path_factory):
    """Two passes of sentence-order pairs (about 4,700) and their summary."""
    path, _, tokenizer, _ = wiki
    output = tmp_path_factory.mktemp("sop")
    summary = create_pretraining_data(
        str(path), str(output), tokenizer, max_seq_length=SEQUENCE_LENGTH, max_predictions_per_seq=PREDICTIONS,
        dupe_factor=2, seed=7, pairing="sop", num_shards=2, progress=False,
    )
    return read_records(output), summary, output


def read_records(directory, pair_labels=True):
    """The records' features as NumPy arrays, the masked tokens put back (`tokens`)."""
    import tensorflow as tf

    from keras_bert_app.data.pretraining_records import parse_features

    files = sorted(str(path) for path in directory.glob("*.tfrecord"))
    spec = parse_features(SEQUENCE_LENGTH, PREDICTIONS, pair_labels)
    batches = [tf.io.parse_example(batch, spec) for batch in tf.data.TFRecordDataset(files).batch(10_000)]
    features = {name: np.concatenate([batch[name].numpy() for batch in batches]) for name in spec}
    tokens = features["input_ids"].copy()
    rows, slots = np.nonzero(features["masked_lm_weights"])
    tokens[rows, features["masked_lm_positions"][rows, slots]] = features["masked_lm_ids"][rows, slots]
    features["tokens"] = tokens
    return features


def test_half_the_pairs_are_swapped(sop_records):
    features, summary, output = sop_records
    labels = features["next_sentence_labels"][:, 0]
    assert len(labels) > 4000  # the standard error of the share is below 0.8%
    assert abs(labels.mean() - 0.5) <= 0.03
    assert summary["pairing"] == "sop" and summary["swapped_fraction"] == pytest.approx(labels.mean())
    assert summary["single_sentence_documents"] == 0 and "is_next_fraction" not in summary
    assert json.loads((output / "pretraining_data.json").read_text())["pairing"] == "sop"


def test_segments_come_in_order_from_one_document_before_the_swap(wiki, sop_records):
    import tensorflow as tf

    _, documents, tokenizer, _ = wiki
    features, _, _ = sop_records
    # The reference: each document tokenized on its own, and where each 3 tokens start.
    document_tokens = [tokenizer(tf.constant(d.strip().splitlines())).flat_values.numpy() for d in documents]
    starts = {}
    for index, ids in enumerate(document_tokens):
        for position, key in enumerate(zip(ids, ids[1:], ids[2:])):
            starts.setdefault(key, []).append((index, position))

    def found(sequence):
        """Where `sequence` stands as consecutive tokens: `(document, position)` pairs."""
        return [(index, position) for index, position in starts.get(tuple(sequence[:3]), ())
                if np.array_equal(document_tokens[index][position : position + len(sequence)], sequence)]

    sep = tokenizer.token_to_id("[SEP]")
    gaps, short = [], 0
    for tokens, segments, mask, label in zip(features["tokens"], features["segment_ids"], features["input_mask"],
                                             features["next_sentence_labels"][:, 0]):
        length = mask.sum()
        a_end = np.count_nonzero(segments[:length] == 0) - 1  # [CLS] A [SEP]
        segment_a, segment_b = tokens[1:a_end], tokens[a_end + 1 : length - 1]
        assert tokens[a_end] == sep and tokens[length - 1] == sep and len(segment_a) and len(segment_b)
        first, second = (segment_b, segment_a) if label == 1 else (segment_a, segment_b)
        if min(len(first), len(second)) < 3:
            short += 1
            continue
        # The earlier segment ends before the later one starts, in the same document; truncation may leave a gap.
        order = [second_at - first_at - len(first) for first_doc, first_at in found(first)
                 for second_doc, second_at in found(second)
                 if first_doc == second_doc and second_at >= first_at + len(first)]
        assert order, (label, tokenizer.detokenize(tokens[:length]))
        gaps.append(min(order))
    assert short < 0.02 * len(gaps)
    assert 0.05 < np.mean(np.array(gaps) > 0) < 0.95  # cut between the segments, or at their outer ends


def test_one_sentence_documents_are_skipped_and_counted(wiki, tmp_path):
    _, documents, tokenizer, _ = wiki
    corpus = tmp_path / "mixed.txt"
    corpus.write_text("\n\n".join([documents[0], "A document of one sentence.", documents[1], "Another one."]) + "\n")
    summary = create_pretraining_data(str(corpus), str(tmp_path / "out"), tokenizer, pairing="sop", dupe_factor=1,
                                      max_seq_length=64, progress=False)
    assert summary["documents"] == 4 and summary["single_sentence_documents"] == 2 and summary["instances"] > 0
    assert json.loads((tmp_path / "out" / "pretraining_data.json").read_text())["single_sentence_documents"] == 2

    single = tmp_path / "single.txt"
    single.write_text("Only one sentence here.\n\nAnother lonely one.\n\nA third.\n")
    with pytest.raises(errors.DataError, match=r"All 3 document\(s\) of the corpus .*single.txt.* hold a single sentence"):
        create_pretraining_data(str(single), str(tmp_path / "none"), tokenizer, pairing="sop", progress=False)
    assert not (tmp_path / "none").exists()
    from keras_bert_app.data.dynamic_pretraining import dynamic_pretraining_dataset

    with pytest.raises(errors.DataError, match="All 3 document"):
        dynamic_pretraining_dataset(str(single), tokenizer, 4, pairing="sop")


def test_spans_stay_in_order_in_their_document_whatever_the_truncation():
    """The span rule on a made-up corpus: long sentences force truncation, from either end of either segment."""
    from keras_bert_app.data.corpus import TokenizedCorpus
    from keras_bert_app.data.sentence_order import IN_ORDER, SWAPPED, create_sentence_order_spans

    rng = np.random.default_rng(0)
    sentence_lengths = rng.integers(1, 40, size=300)
    document_starts = np.concatenate([[0], np.sort(rng.choice(np.arange(1, 300), 30, replace=False)), [300]])
    corpus = TokenizedCorpus(np.arange(sentence_lengths.sum()), np.concatenate([[0], np.cumsum(sentence_lengths)]),
                             document_starts)
    sentence_starts = set(corpus.sentence_starts.tolist())
    labels, cut_ends = [], collections.Counter()
    for document in range(corpus.num_documents):
        first, end = corpus.document_sentence_range(document)
        low, high = corpus.sentence_starts[first], corpus.sentence_starts[end]
        spans, _ = create_sentence_order_spans(corpus, document, rng, 32, 0.3)
        assert (len(spans) == 0) == (end - first < 2)
        for span_a, span_b, label in spans:
            earlier, later = (span_b, span_a) if label == SWAPPED else (span_a, span_b)
            assert label in (IN_ORDER, SWAPPED)
            assert low <= earlier[0] < earlier[1] <= later[0] < later[1] <= high
            assert (span_a[1] - span_a[0]) + (span_b[1] - span_b[0]) <= 32 - 3
            # The segments meet at a sentence boundary, which truncation may have cut away from either side.
            assert any(earlier[1] <= start <= later[0] for start in sentence_starts)
            for name, (start, stop) in (("earlier", earlier), ("later", later)):
                cut_ends[name, "front"] += start not in sentence_starts
                cut_ends[name, "back"] += stop not in sentence_starts
            labels.append(label)
    assert 0.35 < np.mean(labels) < 0.65
    # Each end of each segment is cut sometimes (the old rule cut only the outer ends: "earlier front", "later back").
    assert all(cut_ends[name, end] > 0.05 * len(labels) for name in ("earlier", "later") for end in ("front", "back"))
