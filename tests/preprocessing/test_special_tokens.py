"""Literal special tokens in text: `BertTokenizer(special_tokens_in_strings=...)`.

False (the default) gives the original `FullTokenizer`'s ids (the pure-Python
port in tools/reference_create_pretraining_data.py); True gives HF
`tokenizers.BertWordPieceTokenizer`'s, whose five special tokens are matched
in the raw text. Both on the Wikipedia sample plus lines with literal special
tokens in every position, for the uncased, cased and Chinese vocabularies.
"""

import importlib.util
import json
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_app.errors import ArgumentTypeError
from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer
from keras_bert_app.preprocessing.offsets import byte_to_char_offsets
from keras_bert_app.preprocessing.vocabulary import SPECIAL_TOKENS
from keras_bert_app.preprocessing.vocabulary import VocabularyError
from tests.conftest import REPO_ROOT
from tests.preprocessing.test_hf_equality import MIXED_CHINESE
from tests.preprocessing.test_hf_equality import hf_tokenizer

tokenizers = pytest.importorskip("tokenizers")
checked_once = pytest.mark.skipif(
    keras.config.backend() != "tensorflow", reason="TF ops on every backend: checked once, under TensorFlow"
)

# (vocabulary file, lowercase as in its preset)
VOCABULARIES = {
    "uncased": ("bert_uncased_vocab.txt", True),
    "cased": ("bert_cased_vocab.txt", False),
    "chinese": ("bert_chinese_vocab.txt", False),
}
SPECIAL_LINES = [
    "[CLS] at the start",
    "at the end [SEP]",
    "[MASK]",
    "inside a word: foo[SEP]bar and un[MASK]able, x[PAD]",
    "lower case stays text: [cls] [sep] [mask] [pad] [unk] [Mask]",
    "doubled [[MASK]] and [[CLS]]",
    "adjacent [CLS][SEP][MASK][PAD][UNK]",
    "the [CLS] token of BERT is pooled; [SEP] ends a segment.",
    "near misses: [ CLS] [CLS [MASK ] [MASKS] ［MASK］ CLS] [SEP]]",
    "before normalisation: naïve[MASK]café Émile [UNK] ZÜRICH [MASK]\u0301x",
    "controls\x00[MASK]\x07 and\u200b[SEP]\u200b zero-width",
    "中文[MASK]汉字 [SEP]北京",
    "  [PAD]  \t[PAD]\n",
    "emoji 😀[MASK]🎉",
    "[SEP]" * 5,
    "",
]


def reference_port():
    """The original FullTokenizer, ported to plain Python (tools/)."""
    path = REPO_ROOT / "tools" / "reference_create_pretraining_data.py"
    spec = importlib.util.spec_from_file_location("reference_create_pretraining_data", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PythonBertTokenizer


@pytest.fixture(scope="module")
def lines(enwiki_lines):
    return enwiki_lines[::20] + SPECIAL_LINES + MIXED_CHINESE  # ~1,000 lines


@checked_once
@pytest.mark.parametrize("name", sorted(VOCABULARIES))
def test_default_gives_the_original_ids(shared_data, lines, name):
    vocabulary, lowercase = VOCABULARIES[name]
    path = shared_data / "vocab" / vocabulary
    original = reference_port()(path, lowercase)
    expected = [[original.token_ids[token] for token in original.tokenize(line)] for line in lines]
    tokenizer = BertTokenizer(path, lowercase=lowercase)
    assert tokenizer.special_tokens_in_strings is False
    fast = tokenizer(lines).to_list()
    exact = tokenizer.tokenize_with_offsets(lines)[0].to_list()
    for i, line in enumerate(lines):
        assert fast[i] == expected[i], f"line {i}: {line[:200]!r}"
        assert exact[i] == expected[i], f"line {i}: {line[:200]!r}"
    # A literal special token is text: "[", pieces, "]"; never its id ([UNK]
    # is also what unknown words give).
    special_ids = {tokenizer.token_to_id(token) for token in SPECIAL_TOKENS if token != "[UNK]"}
    assert not special_ids & {i for row in fast for i in row}


@checked_once
@pytest.mark.parametrize("name", sorted(VOCABULARIES))
def test_special_tokens_in_strings_gives_hf_ids_and_offsets(shared_data, lines, name):
    vocabulary, lowercase = VOCABULARIES[name]
    path = shared_data / "vocab" / vocabulary
    hf = hf_tokenizer(path, lowercase)
    # HF matches exactly its special tokens, raw (not normalised) text: the five.
    added = hf._tokenizer.get_added_tokens_decoder().values()
    assert sorted((t.content, t.special, t.normalized) for t in added) == sorted(
        (token, True, False) for token in SPECIAL_TOKENS
    )
    encodings = hf.encode_batch(lines, add_special_tokens=False)
    tokenizer = BertTokenizer(path, lowercase=lowercase, special_tokens_in_strings=True)
    fast = tokenizer(lines).to_list()
    ids, starts, ends = tokenizer.tokenize_with_offsets(lines)
    ids = ids.to_list()
    char_starts = byte_to_char_offsets(lines, starts).to_list()
    char_ends = byte_to_char_offsets(lines, ends).to_list()
    literals = "|".join(re.escape(token) for token in SPECIAL_TOKENS)
    matched = 0
    for i, (line, encoding) in enumerate(zip(lines, encodings)):
        assert fast[i] == encoding.ids, f"line {i}: {line[:200]!r}"
        assert ids[i] == encoding.ids, f"line {i}: {line[:200]!r}"
        spans = list(zip(char_starts[i], char_ends[i]))
        assert spans == encoding.offsets, f"line {i}: {line[:200]!r}"
        # Each literal is one token whose offsets span exactly the literal.
        tokens_by_span = dict(zip(spans, fast[i]))
        for literal in re.finditer(literals, line):
            token = tokens_by_span.get(literal.span())
            assert token == tokenizer.token_to_id(literal.group()), (i, line, literal)
            matched += 1
    assert matched > 25
    # The special lines are where the two rules differ.
    default = BertTokenizer(path, lowercase=lowercase)(SPECIAL_LINES).to_list()
    first = len(lines) - len(SPECIAL_LINES) - len(MIXED_CHINESE)
    differ = [a != b for a, b in zip(default, fast[first:])]
    assert sum(differ) == len(SPECIAL_LINES) - 2  # all but "" and lower case


def test_byte_offsets_of_special_tokens(uncased_tokenizer):
    tokenizer = BertTokenizer(uncased_tokenizer.get_vocabulary(), special_tokens_in_strings=True)
    text = "é[MASK]ü foo[SEP]bar [[CLS]]"
    ids, starts, ends = tokenizer.tokenize_with_offsets(text)
    raw = text.encode()
    pieces = [raw[a:b].decode() for a, b in zip(starts.numpy(), ends.numpy())]
    assert pieces == ["é", "[MASK]", "ü", "foo", "[SEP]", "bar", "[", "[CLS]", "]"]
    assert ids.numpy().tolist()[1::3] == [tokenizer.mask_token_id, tokenizer.sep_token_id, tokenizer.cls_token_id]
    # Text without literals: the same ids under both rules.
    texts = np.array(["good movie [SEP] bad movie", "good movie bad movie", ""])
    default_ids, hf_ids = uncased_tokenizer(texts).to_list(), tokenizer(texts).to_list()
    assert default_ids[1:] == hf_ids[1:]
    assert hf_ids[0] == [2204, 3185, tokenizer.sep_token_id, 2919, 3185]
    assert default_ids[0] == [2204, 3185, 1031, 19802, 1033, 2919, 3185]  # "[", "sep", "]"
    # The compiled graph's shards (>= 256 strings) splice the same ids as op by op.
    batch = tf.constant([text, "plain"] * 200)
    assert tokenizer._tokenize_graph(batch).to_list() == tokenizer.tokenize_with_offsets(batch)[0].to_list()


def test_config_and_preset_carry_the_rule(tmp_path, tiny_vocabulary):
    tokenizer = BertTokenizer(tiny_vocabulary, special_tokens_in_strings=True)
    config = tokenizer.get_config()
    assert config["special_tokens_in_strings"] is True
    assert BertTokenizer.from_config(config).special_tokens_in_strings is True
    assert BertTokenizer(tiny_vocabulary).get_config()["special_tokens_in_strings"] is False
    again = keras.layers.deserialize(keras.layers.serialize(tokenizer))
    assert again("a [SEP] b").numpy().tolist() == [15, 3, 16]

    folder = tmp_path / "preset"
    folder.mkdir()
    encoder = {"vocabulary_size": 36, "num_layers": 1, "num_heads": 1, "hidden_dim": 2, "intermediate_dim": 4}
    (folder / "config.json").write_text(json.dumps({"encoder": encoder}))
    tokenizer.save_to_preset(folder)
    written = json.loads((folder / "config.json").read_text())["tokenizer"]
    assert written == {"vocabulary": "vocab.txt", "lowercase": True, "special_tokens_in_strings": True}
    assert BertTokenizer.from_preset(folder).special_tokens_in_strings is True
    assert BertTokenizer.from_preset(folder, special_tokens_in_strings=False).special_tokens_in_strings is False
    preprocessor = BertPreprocessor.from_preset(folder, sequence_length=8)
    assert preprocessor.tokenizer.special_tokens_in_strings is True
    restored = BertPreprocessor.from_config(preprocessor.get_config())
    assert restored.tokenizer.special_tokens_in_strings is True
    # Built-in presets keep the original's rule unless asked.
    assert BertTokenizer.from_preset("bert_tiny_uncased").special_tokens_in_strings is False
    hf_rule = BertPreprocessor.from_preset("bert_tiny_uncased", special_tokens_in_strings=True)
    assert hf_rule.tokenizer.special_tokens_in_strings is True


@pytest.mark.parametrize("special_tokens_in_strings", [False, True])
def test_preprocessor_in_tf_data_and_eagerly(  # TF only: test_bert_preprocessor.py runs the eager path on every backend
tiny_vocabulary, special_tokens_in_strings):
    tokenizer = BertTokenizer(tiny_vocabulary, special_tokens_in_strings=special_tokens_in_strings)
    preprocessor = BertPreprocessor(tokenizer, sequence_length=10)
    texts = ["the fox [SEP] a dog", "[MASK]", "no literal", ""]
    sep, mask = tokenizer.sep_token_id, tokenizer.mask_token_id
    if special_tokens_in_strings:
        expected_first = [2, 5, 8, sep, 15, 14, sep]  # [CLS] the fox [SEP] a dog [SEP]
        expected_second = [2, mask, sep]
    else:
        unk = tokenizer.unk_token_id  # "[", "sep"/"mask", "]" are not in the tiny vocabulary
        expected_first = [2, 5, 8, unk, unk, unk, 15, 14, sep]
        expected_second = [2, unk, unk, unk, sep]
    eager = keras.ops.convert_to_numpy(preprocessor(texts)["token_ids"]).tolist()
    assert eager[0] == expected_first + [0] * (10 - len(expected_first))
    assert eager[1] == expected_second + [0] * (10 - len(expected_second))
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(2).map(preprocessor)
    batched = [row for batch in dataset for row in batch["token_ids"].numpy().tolist()]
    assert batched == eager
    unbatched = tf.data.Dataset.from_tensor_slices(texts).map(tokenizer.tokenize_with_offsets)
    assert [ids.numpy().tolist() for ids, _, _ in unbatched] == tokenizer(texts).to_list()
    # A pair: the segments come from the inputs, not from a literal [SEP].
    pair = preprocessor((["the [SEP] fox"], ["a"]))
    segments = keras.ops.convert_to_numpy(pair["segment_ids"])[0].tolist()
    first_segment = 5 if special_tokens_in_strings else 7  # [CLS] the ... fox [SEP]
    assert segments == [0] * first_segment + [1, 1] + [0] * (10 - first_segment - 2)


def test_in_a_saved_model(tmp_path, tiny_vocabulary):
    tokenizer = BertTokenizer(tiny_vocabulary, special_tokens_in_strings=True)

    class Serving(tf.Module):
        def __init__(self):
            super().__init__()
            self.tokenizer = tokenizer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def __call__(self, text):
            ids, starts, _ = self.tokenizer.tokenize_with_offsets(text)
            return {"ids": ids.to_tensor(-1), "starts": starts.to_tensor(-1)}

    tf.saved_model.save(Serving(), str(tmp_path / "saved"))
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    texts = ["a[MASK] b", "the fox"]
    output = loaded(tf.constant(texts))
    assert output["ids"].numpy().tolist() == tokenizer(texts).to_tensor(-1).numpy().tolist()
    assert output["ids"].numpy()[0, :3].tolist() == [15, tokenizer.mask_token_id, 16]
    assert output["starts"].numpy()[0, :3].tolist() == [0, 1, 8]


@pytest.mark.parametrize("renamed", [
    ["<pad>", "<unk>", "<s>", "</s>", "<mask>", "a"],  # RoBERTa-style names
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "<mask>", "a"],  # one renamed
])
def test_vocabulary_without_the_special_tokens_is_one_clear_error(tmp_path, renamed):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(renamed) + "\n", encoding="utf-8")
    with pytest.raises(VocabularyError, match=rf"{path}: missing special token\(s\) .*\[MASK\]") as error:
        BertTokenizer(path, special_tokens_in_strings=True)
    if "<s>" in renamed:
        assert "[CLS], [SEP]" in str(error.value)


def test_the_option_must_be_a_bool(tiny_vocabulary):
    with pytest.raises(ArgumentTypeError, match="special_tokens_in_strings must be bool; got str 'false'"):
        BertTokenizer(tiny_vocabulary, special_tokens_in_strings="false")
