"""Sentence pairs: the original algorithm's guarantees on a synthetic corpus
whose token ids say where they come from (document, sentence, position)."""

import numpy as np
import pytest

from keras_bert_app.data.corpus import TokenizedCorpus
from keras_bert_app.data.pretraining_pairs import IS_NEXT
from keras_bert_app.data.pretraining_pairs import RANDOM_NEXT
from keras_bert_app.data.pretraining_pairs import create_pairs
from keras_bert_app.data.pretraining_pairs import pack_pairs
from keras_bert_app.data.pretraining_pairs import truncated_lengths


def synthetic_corpus(num_documents, seed=0, max_sentences=12, max_length=30):
    """Token id = document * 1_000_000 + sentence * 1_000 + position."""
    rng = np.random.default_rng(seed)
    tokens, sentence_lengths, document_sizes = [], [], []
    for document in range(num_documents):
        num_sentences = int(rng.integers(1, max_sentences + 1))
        document_sizes.append(num_sentences)
        for sentence in range(num_sentences):
            length = int(rng.integers(1, max_length + 1))
            sentence_lengths.append(length)
            tokens += [document * 1_000_000 + sentence * 1_000 + i for i in range(length)]
    return TokenizedCorpus(
        np.array(tokens),
        np.concatenate([[0], np.cumsum(sentence_lengths)]),
        np.concatenate([[0], np.cumsum(document_sizes)]),
    )


def origin(tokens):
    tokens = np.asarray(tokens, dtype=np.int64)
    return tokens // 1_000_000, tokens // 1_000 % 1_000, tokens % 1_000


def simulate_truncation(length_a, length_b, max_num_tokens):
    """The original loop, one token at a time."""
    while length_a + length_b > max_num_tokens:
        if length_a > length_b:
            length_a -= 1
        else:
            length_b -= 1
    return length_a, length_b


def test_truncated_lengths_match_the_original_loop():
    for length_a in range(1, 40):
        for length_b in range(1, 40):
            for max_num_tokens in (2, 5, 17, 40):
                assert truncated_lengths(length_a, length_b, max_num_tokens) == simulate_truncation(
                    length_a, length_b, max_num_tokens
                )


@pytest.mark.parametrize("max_seq_length", [8, 32, 128])
def test_pairs_respect_the_algorithm(max_seq_length):
    corpus = synthetic_corpus(60)
    for document_index in range(corpus.num_documents):
        rng = np.random.default_rng(document_index)
        pairs, _ = create_pairs(corpus, document_index, rng, max_seq_length, 0.1)
        for tokens_a, tokens_b, label in pairs:
            assert len(tokens_a) >= 1 and len(tokens_b) >= 1
            assert len(tokens_a) + len(tokens_b) <= max_seq_length - 3
            doc_a, sentence_a, _ = origin(tokens_a)
            doc_b, sentence_b, _ = origin(tokens_b)
            assert (doc_a == document_index).all()
            # Both segments are contiguous runs of the corpus.
            for segment in (tokens_a, tokens_b):
                position = np.searchsorted(corpus.token_ids, segment[0])
                assert np.array_equal(corpus.token_ids[position : position + len(segment)], segment)
            if label == IS_NEXT:
                assert (doc_b == document_index).all()
                assert sentence_b[0] > sentence_a[-1]
            else:
                assert label == RANDOM_NEXT
                assert (doc_b != document_index).all()
                assert len(set(doc_b.tolist())) == 1


def test_chunks_cover_the_document_when_nothing_is_truncated():
    # Without truncation, the A's and IsNext B's of a document are its
    # sentences, each exactly once: unused chunk sentences are put back.
    corpus = synthetic_corpus(40, max_length=10)
    for document_index in range(corpus.num_documents):
        rng = np.random.default_rng(document_index)
        pairs, _ = create_pairs(corpus, document_index, rng, 10_000, 0.5)
        used = []
        for tokens_a, tokens_b, label in pairs:
            used += tokens_a.tolist() + (tokens_b.tolist() if label == IS_NEXT else [])
        first, end = corpus.document_sentence_range(document_index)
        expected = corpus.token_ids[corpus.sentence_starts[first] : corpus.sentence_starts[end]]
        assert used == expected.tolist()


def test_one_sentence_chunks_are_random_next_and_the_coin_is_fair():
    one_sentence_documents = synthetic_corpus(50, max_sentences=1)
    for d in range(50):
        pairs, _ = create_pairs(one_sentence_documents, d, np.random.default_rng(d), 128, 0.1)
        assert [label for _, _, label in pairs] == [RANDOM_NEXT]
    # Whole documents of 2+ sentences form one chunk each: a fair coin.
    corpus = synthetic_corpus(2000, max_sentences=5, max_length=5)
    labels = []
    for d in range(corpus.num_documents):
        first, end = corpus.document_sentence_range(d)
        if end - first >= 2:
            pairs, _ = create_pairs(corpus, d, np.random.default_rng(d), 10_000, 0.0)
            labels.append(pairs[0][2])
    assert abs(np.mean(np.array(labels) == IS_NEXT) - 0.5) < 0.04


def test_short_target_fraction():
    corpus = synthetic_corpus(3000, max_sentences=2, max_length=3)
    shorts = [
        create_pairs(corpus, d, np.random.default_rng(d), 128, 0.1)[1]
        for d in range(corpus.num_documents)
    ]
    assert abs(np.mean(shorts) - 0.1) < 0.02


def test_single_document_corpus_is_refused():
    corpus = synthetic_corpus(1)
    with pytest.raises(ValueError, match="at least 2 documents"):
        create_pairs(corpus, 0, np.random.default_rng(0), 128, 0.1)


def test_pack_pairs():
    pairs = [(np.array([5, 6]), np.array([7]), 0), (np.array([8]), np.array([9, 10, 11]), 1)]
    token_ids, segment_ids, num_tokens = pack_pairs(pairs, 8, cls_token_id=101, sep_token_id=102)
    assert token_ids.tolist() == [[101, 5, 6, 102, 7, 102, 0, 0], [101, 8, 102, 9, 10, 11, 102, 0]]
    assert segment_ids.tolist() == [[0, 0, 0, 0, 1, 1, 0, 0], [0, 0, 0, 1, 1, 1, 1, 0]]
    assert num_tokens.tolist() == [6, 7]
