"""Statistics of the generated pretraining data on real text (the Wikipedia
sample), against the original algorithm's formulas and against a plain Python
port of the original script (tools/reference_create_pretraining_data.py)."""

import sys

import numpy as np
import pytest

from keras_bert_app.data.corpus import tokenize_corpus
from keras_bert_app.data.pretraining_instances import InstanceMaker
from keras_bert_app.data.pretraining_pairs import IS_NEXT
from keras_bert_app.data.pretraining_pairs import create_pairs

MAX_SEQ_LENGTH, MAX_PREDICTIONS = 128, 20


@pytest.fixture(scope="module")
def tokenizer(shared_data):
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    return BertTokenizer(vocabulary=shared_data / "vocab" / "bert_uncased_vocab.txt")


@pytest.fixture(scope="module")
def corpus_path(shared_data):
    return shared_data / "corpus" / "enwiki_sample.txt"


@pytest.fixture(scope="module")
def corpus(tokenizer, corpus_path):
    return tokenize_corpus([str(corpus_path)], tokenizer)


def generate(corpus, tokenizer, passes, **kwargs):
    maker = InstanceMaker(tokenizer.get_vocabulary(), MAX_SEQ_LENGTH, MAX_PREDICTIONS, seed=7, **kwargs)
    per_document = [
        maker.document_instances(corpus, d, p)[0] for p in range(passes) for d in range(corpus.num_documents)
    ]
    return {name: np.concatenate([f[name] for f in per_document]) for name in per_document[0]}


@pytest.fixture(scope="module")
def instances(corpus, tokenizer):
    return generate(corpus, tokenizer, passes=2)


def original_tokens(features):
    """The token ids before masking."""
    token_ids = features["input_ids"].copy()
    rows, slots = np.nonzero(features["masked_lm_weights"])
    token_ids[rows, features["masked_lm_positions"][rows, slots]] = features["masked_lm_ids"][rows, slots]
    return token_ids


def test_every_instance_masks_the_original_count(instances):
    lengths = instances["input_mask"].sum(axis=1)
    expected = [min(MAX_PREDICTIONS, max(1, int(round(n * 0.15)))) for n in lengths.tolist()]
    np.testing.assert_array_equal(instances["masked_lm_weights"].sum(axis=1), expected)
    assert len(lengths) > 10_000


def test_shapes_lengths_and_no_masked_special_tokens(instances, tokenizer):
    lengths = instances["input_mask"].sum(axis=1)
    assert instances["input_ids"].shape[1] == MAX_SEQ_LENGTH and lengths.max() <= MAX_SEQ_LENGTH
    tokens = original_tokens(instances)
    rows = np.arange(len(tokens))
    assert (tokens[:, 0] == tokenizer.cls_token_id).all()
    assert (tokens[rows, lengths - 1] == tokenizer.sep_token_id).all()
    assert ((tokens == tokenizer.sep_token_id).sum(axis=1) == 2).all()
    assert (instances["input_ids"][instances["input_mask"] == 0] == 0).all()
    valid = instances["masked_lm_weights"] > 0
    positions = instances["masked_lm_positions"]
    assert (positions[valid] < np.broadcast_to(lengths[:, None], positions.shape)[valid]).all()
    labels = instances["masked_lm_ids"][valid]
    special = [tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id]
    assert not np.isin(labels, special).any()


def test_replacement_split(instances, tokenizer):
    valid = instances["masked_lm_weights"] > 0
    rows = np.broadcast_to(np.arange(len(valid))[:, None], valid.shape)
    replaced = instances["input_ids"][rows[valid], instances["masked_lm_positions"][valid]]
    labels = instances["masked_lm_ids"][valid]
    is_mask = replaced == tokenizer.mask_token_id
    is_kept = ~is_mask & (replaced == labels)
    assert abs(is_mask.mean() - 0.8) < 0.02
    assert abs(is_kept.mean() - 0.1) < 0.02
    assert abs((~is_mask & ~is_kept).mean() - 0.1) < 0.02


def test_is_next_fraction_matches_the_original_algorithm(corpus, tokenizer):
    # NSP labels do not depend on masking: compare pair generation alone,
    # over enough passes that the per-pass spread (~2%) averages out.
    ours = [
        label
        for p in range(30)
        for d in range(corpus.num_documents)
        for _, _, label in create_pairs(corpus, d, np.random.default_rng([11, p, d]), MAX_SEQ_LENGTH, 0.1)[0]
    ]
    sys.path.insert(0, "tools")
    try:
        import reference_create_pretraining_data as reference
    finally:
        sys.path.remove("tools")
    documents = [[s.tolist() for s in document] for document in corpus.documents()]
    reference_instances = reference.create_instances(
        documents, tokenizer.get_vocabulary(), MAX_SEQ_LENGTH, dupe_factor=16, seed=3,
        masked_lm_prob=1e-9,  # masking is not under test here
    )
    ours_fraction = np.mean(np.array(ours) == IS_NEXT)
    reference_fraction = np.mean([not i.is_random_next for i in reference_instances])
    assert abs(ours_fraction - reference_fraction) < 0.02, (ours_fraction, reference_fraction)
    assert 0.40 < ours_fraction < 0.49  # not 50%: one-sentence chunks are always random


def test_random_next_never_from_the_same_document(corpus):
    base = corpus.token_ids.ctypes.data
    item = corpus.token_ids.itemsize
    token_document = np.repeat(np.arange(corpus.num_documents), np.diff(corpus.sentence_starts[corpus.document_starts]))
    num_random = 0
    for d in range(corpus.num_documents):
        pairs, _ = create_pairs(corpus, d, np.random.default_rng([1, d]), MAX_SEQ_LENGTH, 0.1)
        for tokens_a, tokens_b, label in pairs:
            # The segments are views of the corpus: their offsets say where
            # they come from.
            a_doc = token_document[(tokens_a.ctypes.data - base) // item]
            b_doc = token_document[(tokens_b.ctypes.data - base) // item]
            assert a_doc == d
            assert (b_doc == d) == (label == IS_NEXT)
            num_random += label != IS_NEXT
    assert num_random > 1000


def test_about_a_tenth_of_documents_get_a_short_target(corpus, tokenizer):
    maker = InstanceMaker(tokenizer.get_vocabulary(), MAX_SEQ_LENGTH, MAX_PREDICTIONS, seed=5)
    shorts = [
        create_pairs(corpus, d, maker.document_rng(p, d), MAX_SEQ_LENGTH, 0.1)[1]
        for p in range(20)
        for d in range(corpus.num_documents)
    ]
    assert abs(np.mean(shorts) - 0.1) < 0.02


def test_whole_word_masking_never_splits_a_word(corpus, tokenizer):
    features = generate(corpus, tokenizer, passes=1, whole_word_masking=True)
    is_piece = np.array([t.startswith("##") for t in tokenizer.get_vocabulary()])
    tokens = original_tokens(features)
    masked = np.zeros(tokens.shape, bool)
    rows, slots = np.nonzero(features["masked_lm_weights"])
    masked[rows, features["masked_lm_positions"][rows, slots]] = True
    special = np.isin(tokens, [tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id])
    # A ## piece is joined to the token before it (unless that is special).
    joined = is_piece[tokens[:, 1:]] & ~special[:, :-1] & ~special[:, 1:]
    assert joined.sum() > 10_000
    assert (masked[:, 1:][joined] == masked[:, :-1][joined]).all()
    lengths = features["input_mask"].sum(axis=1)
    counts = features["masked_lm_weights"].sum(axis=1)
    assert (counts <= np.minimum(MAX_PREDICTIONS, np.maximum(1, np.round(lengths * 0.15)))).all()
    assert counts.mean() > 0.9 * np.minimum(MAX_PREDICTIONS, np.round(lengths * 0.15)).mean()


def test_round_trip_is_next_pairs_are_consecutive_sentences(instances, tokenizer, corpus_path):
    # Raw documents, read and tokenized line by line, independently.
    documents, current = [], []
    for line in corpus_path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            current.append(line.strip())
        elif current:
            documents.append(current)
            current = []
    if current:
        documents.append(current)
    document_ids = [tokenizer(document).to_list() for document in documents]
    sentence_index = {}
    for d, ids in enumerate(document_ids):
        for s, sentence in enumerate(ids):
            sentence_index.setdefault(tuple(sentence), []).append((d, s))

    def decompositions(tokens):
        """Every (doc, first, last) whose consecutive raw sentences are `tokens`."""
        found = set()
        for length in range(1, len(tokens) + 1):
            for d, s in sentence_index.get(tuple(tokens[:length]), []):
                ids, position, last = document_ids[d], length, s
                while position < len(tokens) and last + 1 < len(ids):
                    following = ids[last + 1]
                    if tokens[position : position + len(following)] != following:
                        break
                    position, last = position + len(following), last + 1
                if position == len(tokens):
                    found.add((d, s, last))
        return found

    tokens = original_tokens(instances)
    lengths = instances["input_mask"].sum(axis=1)
    checked = 0
    # Pairs shorter than the limit were not truncated: whole sentences.
    for row in np.flatnonzero((instances["next_sentence_labels"] == IS_NEXT) & (lengths < MAX_SEQ_LENGTH))[:300]:
        sequence = tokens[row, : lengths[row]].tolist()
        split = sequence.index(tokenizer.sep_token_id)
        a_ends = {(d, last + 1) for d, _, last in decompositions(sequence[1:split])}
        b_starts = {(d, first) for d, first, _ in decompositions(sequence[split + 1 : -1])}
        assert a_ends & b_starts, tokenizer.detokenize([sequence])
        checked += 1
    assert checked >= 100
