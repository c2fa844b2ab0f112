"""SQuAD reading and windowing: structure errors, answers mapped back to the exact document text."""

import json

import numpy as np
import pytest

from keras_bert_app.data.squad import SquadExample
from keras_bert_app.data.squad import check_answers
from keras_bert_app.data.squad import parse_squad
from keras_bert_app.data.squad import read_squad
from keras_bert_app.data.squad_features import featurize_squad
from keras_bert_app.evaluation.squad_postprocessing import squad_predictions

WORDS = [
    "The", "Café", "naïve", "ÉCOLE", "東京", "tower's", "1990s", "e.g.", "(built)", "JOHN", "Smith",
    "Ω-3", "co-operate", "river", "Zürich", "señor", "résumé", "x²", "---", "über", "New", "York",
]
SPACES = [" ", " ", " ", "  ", "\t", "\n", "\u00a0", "\u3000", " \u2009 ", "\r\n"]


@pytest.fixture(scope="module")
def tokenizer(shared_data):
    """Uncased: the answers must still come back with their case and accents."""
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    return BertTokenizer(shared_data / "vocab" / "bert_uncased_vocab.txt", lowercase=True)


def make_examples(num_examples=12, seed=0):
    """Long paragraphs of odd words and whitespace; answers are runs of whole words."""
    rng = np.random.default_rng(seed)
    examples = []
    for index in range(num_examples):
        words = [WORDS[i] for i in rng.integers(0, len(WORDS), size=int(rng.integers(20, 90)))]
        spaces = [SPACES[i] for i in rng.integers(0, len(SPACES), size=len(words))]
        starts, context = [], ""
        for word, space in zip(words, spaces):
            starts.append(len(context))
            context += word + space
        first = int(rng.integers(0, len(words)))
        last = min(len(words) - 1, first + int(rng.integers(0, 4)))
        start, end = starts[first], starts[last] + len(words[last])
        answer = context[start:end]
        examples.append(SquadExample(f"q{index}", "Where is the Café tower?", context, [(answer, start)]))
    return examples


def test_round_trip_every_window_with_the_answer(tokenizer):
    examples = make_examples()
    features = featurize_squad(
        examples, tokenizer, max_seq_length=32, doc_stride=7, max_query_length=6, training=True
    )
    assert not features.skipped
    assert len(features) > 3 * len(examples)  # several windows per paragraph
    # An independent tokenization of each answer on its own.
    answer_ids = tokenizer.tokenize([example.answers[0][0] for example in examples]).to_list()
    with_answer = border = 0
    for feature in range(len(features)):
        example_index = features.example_index[feature]
        answer = examples[example_index].answers[0][0]
        expected_ids = answer_ids[example_index]
        start, end = features.start_positions[feature], features.end_positions[feature]
        if start == 0:
            assert end == 0
            window = features.inputs["token_ids"][feature].tolist()
            border += any(window[i : i + len(expected_ids)] == expected_ids for i in range(len(window)))
            continue
        with_answer += 1
        # The label covers exactly the answer's pieces ...
        assert features.inputs["token_ids"][feature][start : end + 1].tolist() == expected_ids
        assert np.all(features.inputs["segment_ids"][feature][start : end + 1] == 1)
        # ... and maps back to the answer's exact characters (case, accents, whitespace).
        assert features.piece_span_text(feature, start, end) == answer
    assert with_answer >= len(examples)
    assert border > 0  # some windows hold only part of the answer (or a copy of it): labelled [CLS]


def test_post_processing_gold_logits_give_the_answer(tokenizer):
    examples = make_examples(seed=1)
    features = featurize_squad(
        examples, tokenizer, max_seq_length=32, doc_stride=7, max_query_length=6, training=True
    )
    start_logits = np.zeros(features.max_context.shape)
    end_logits = np.zeros(features.max_context.shape)
    for feature in range(len(features)):
        start, end = features.start_positions[feature], features.end_positions[feature]
        if start and features.max_context[feature, start]:
            start_logits[feature, start] = end_logits[feature, end] = 10.0
    result = squad_predictions(features, start_logits, end_logits, max_answer_length=64)
    assert result.predictions == {example.qas_id: example.answers[0][0] for example in examples}


def test_partial_word_answer_gets_the_covering_pieces(tokenizer):
    context = "In the 1990s and earlier."
    example = SquadExample("q", "When?", context, [("199", context.index("1990s"))])
    features = featurize_squad([example], tokenizer, max_seq_length=32, training=True)
    start, end = features.start_positions[0], features.end_positions[0]
    text = features.piece_span_text(0, start, end)
    assert "199" in text and text in "1990s"


def test_windows_and_max_context_against_brute_force(tokenizer):
    examples = make_examples(num_examples=3, seed=2)
    features = featurize_squad(examples, tokenizer, max_seq_length=24, doc_stride=5, max_query_length=4)
    for example_index in range(len(examples)):
        rows = np.nonzero(features.example_index == example_index)[0]
        num_pieces = len(features.piece_offsets[example_index])
        # Windows start every 5 pieces, hold 24 - 4 - 3 = 17 pieces, the last reaches the end.
        assert features.window_start[rows].tolist() == list(range(0, 5 * len(rows), 5))
        assert features.window_start[rows[-1]] + features.context_length[rows[-1]] == num_pieces
        owners = np.zeros(num_pieces, int)
        for piece in range(num_pieces):
            best = max(
                (min(piece - s, s + n - 1 - piece) + 0.01 * n, -k)
                for k, (s, n) in enumerate(zip(features.window_start[rows], features.context_length[rows]))
                if s <= piece < s + n
            )
            owner = rows[-best[1]]
            position = features.context_start[owner] + piece - features.window_start[owner]
            assert features.max_context[owner, position]
            owners[piece] += 1
        assert features.max_context[rows].sum() == num_pieces  # each piece has exactly one owner
        assert np.all(owners == 1)


def test_question_truncated_and_layout(tokenizer):
    question = " ".join(["question"] * 100)
    example = SquadExample("q", question, "A short context.", [])
    features = featurize_squad([example], tokenizer, max_seq_length=32, max_query_length=5)
    ids = features.inputs["token_ids"][0]
    assert ids[0] == tokenizer.cls_token_id and ids[6] == tokenizer.sep_token_id
    assert features.context_start[0] == 7
    assert features.inputs["segment_ids"][0].tolist()[:7] == [0] * 7
    assert features.inputs["padding_mask"][0].sum() == 7 + features.context_length[0] + 1
    with pytest.raises(ValueError, match="no room is left"):
        featurize_squad([example], tokenizer, max_seq_length=8, max_query_length=5)
    short = SquadExample("s", "Who?", "A short context.", [])
    assert len(featurize_squad([short], tokenizer, max_seq_length=8, max_query_length=5)) > 1


def test_impossible_and_unlocatable_answers(tokenizer):
    context = "Paris is in France."
    examples = [
        SquadExample("impossible", "Why?", context, [], is_impossible=True),
        SquadExample("shifted", "Where?", context, [("France", 3)]),
        SquadExample("good", "Where?", context, [("France", context.index("France"))]),
    ]
    assert "points at" in check_answers(examples[1])
    features = featurize_squad(examples, tokenizer, max_seq_length=32, training=True)
    assert features.skipped == [("shifted", check_answers(examples[1]))]
    assert features.example_index.tolist() == [0, 2]
    assert (features.start_positions[0], features.end_positions[0]) == (0, 0)
    assert features.piece_span_text(1, features.start_positions[1], features.end_positions[1]) == "France"


def squad_json(**paragraph):
    paragraph = {"context": "Some text.", "qas": [{"id": "a", "question": "q?", "answers": []}], **paragraph}
    return {"version": "1.1", "data": [{"title": "T", "paragraphs": [paragraph]}]}


@pytest.mark.parametrize(
    "dataset, message",
    [
        ({"articles": []}, "has no 'data'"),
        ({"data": [{"title": "T"}]}, r"data\[0\] has no 'paragraphs'"),
        ({"data": [{"paragraphs": [{"context": "x"}]}]}, r"paragraphs\[0\] has no 'qas'"),
        (squad_json(context="  \n"), "context is empty"),
        (squad_json(qas=[{"id": "a", "question": "q", "answers": [{"text": "t", "answer_start": 99}]}]),
         "outside the context"),
        (squad_json(qas=[{"id": "a", "question": "q"}, {"id": "a", "question": "r"}]), "appears twice"),
        ([1, 2], "must be a JSON object"),
    ],
)
def test_not_squad(dataset, message):
    with pytest.raises(ValueError, match=message):
        parse_squad(dataset)


def test_read_and_detect_version(tmp_path):
    v2 = squad_json(qas=[{"id": "a", "question": "q?", "answers": [], "is_impossible": True}])
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(v2))
    data = read_squad(path)
    assert data.version == "2.0" and data.examples[0].is_impossible
    with pytest.raises(ValueError, match="pass version 2.0"):
        read_squad(path, version="1.1")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a JSON file"):
        read_squad(tmp_path / "bad.json")
    with pytest.raises(FileNotFoundError):
        read_squad(tmp_path / "missing.json")
