"""HF ALBERT folders saved by transformers 5: `tokenizer.json` and no `spiece.model`.

The fixture is made as a user would: a SentencePiece unigram model trained on the Wikipedia sample with ALBERT's
specials, transformers' `AlbertTokenizer` made from it (`from_pretrained` of its folder) and a tiny random
`AlbertModel`, both saved with `save_pretrained`. Our spiece.model is rebuilt from the tokenizer.json; the ids of
our tokenizer then equal transformers' on held-out text, and the converted (or directly used) model its outputs.
"""

import io
import json
import shutil

import keras
import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.convert import tokenizer_json
from keras_bert_app.convert.weight_map import ConversionError
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_app.preprocessing.sentencepiece_tokenizer import SentencePieceTokenizer
from tests.preprocessing.sentencepiece_models import SPECIAL, preprocess_text

TOLERANCE = 1e-5
VOCABULARY = 800
TRAINING_LINES = 3000
TINY = dict(vocab_size=VOCABULARY, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_hidden_groups=1,
            num_attention_heads=2, intermediate_size=64, max_position_embeddings=64, hidden_act="gelu_new")
# Text beyond the Wikipedia lines: accents, full-width forms, digits, runs of whitespace, Chinese, emoji, quotes.
EDGE_TEXTS = [
    "", "   ", "Café naïve résumé Ångström Dvořák São Paulo", "ＡＢＣ ｆｕｌｌ－ｗｉｄｔｈ　１２３！", "1,234.56 in 2019; 3/4 ½ ²",
    "a   lot\tof \t spaces\nand\r\nlines  ", "北京是中国的首都。", "I ❤️ 🍕 and 😀👍🏽", "``Quoted'' text, it's ''fine``",
    "HeLLo WoRLD: ÉCOLE Straße ﬁne Ⅻ ℌ", "x\u00a0y\u2003z\u3000w", "don't   stop-believing...!!",
]


def _train(path, lines, lowercase):
    """A unigram SentencePiece model as ALBERT's: <pad> 0, <unk> 1, [CLS] [SEP] [MASK] as control symbols."""
    spm = pytest.importorskip("sentencepiece")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter([preprocess_text(line, lowercase, lowercase) for line in lines if line.strip()]),
        model_writer=model, vocab_size=VOCABULARY, model_type="unigram", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        control_symbols=SPECIAL, character_coverage=0.9995, num_threads=1, minloglevel=2,
    )
    path.write_bytes(model.getvalue())
    return path


def _albert_folder(folder, sentencepiece_path, lowercase):
    """What transformers 5 saves of an AlbertModel and the AlbertTokenizer of `sentencepiece_path`: no spiece.model."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    original = folder.parent / f"{folder.name}_spm"
    original.mkdir()
    shutil.copyfile(sentencepiece_path, original / "spiece.model")
    options = {} if lowercase else {"do_lower_case": False, "keep_accents": True}
    transformers.AlbertTokenizer.from_pretrained(str(original), **options).save_pretrained(str(folder))
    torch.manual_seed(0)
    model = transformers.AlbertModel(transformers.AlbertConfig(**TINY)).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.05)
    model.save_pretrained(str(folder))
    assert not (folder / "spiece.model").exists() and (folder / "tokenizer.json").is_file()
    return transformers.AlbertTokenizer.from_pretrained(str(folder)), model


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory, enwiki_lines):
    """{"uncased": (folder, HF tokenizer, HF model, spm path), "cased": ...}, with held-out Wikipedia lines."""
    root = tmp_path_factory.mktemp("albert_tokenizer_json")
    training = enwiki_lines[:TRAINING_LINES]
    made = {}
    for name, lowercase in (("uncased", True), ("cased", False)):
        spm_path = _train(root / f"{name}.model", training, lowercase)
        made[name] = (root / name, *_albert_folder(root / name, spm_path, lowercase), spm_path)
    held_out = [line for line in enwiki_lines[TRAINING_LINES:TRAINING_LINES + 400] if line.strip()][:150]
    return made, held_out


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_BERT_APP_CACHE", str(tmp_path / "cache"))


def _numpy(value):
    return np.asarray(keras.ops.convert_to_numpy(value))


@pytest.mark.parametrize("name", ["uncased", "cased"])
def test_the_rebuilt_spiece_model_is_the_trained_one_and_tokenizes_as_transformers(checkpoints, name, tmp_path):
    from sentencepiece import sentencepiece_model_pb2

    made, held_out = checkpoints
    folder, reference, _, spm_path = made[name]
    files = sorted(path.name for path in folder.iterdir())
    tokenizer = SentencePieceTokenizer.from_preset(folder)
    assert (tokenizer.lowercase, tokenizer.strip_accents) == ((True, True) if name == "uncased" else (False, False))
    # The model proto: the trained one's pieces, scores, types, charsmap and whitespace settings.
    ours, trained = sentencepiece_model_pb2.ModelProto(), sentencepiece_model_pb2.ModelProto()
    ours.ParseFromString(tokenizer._proto)
    trained.ParseFromString(spm_path.read_bytes())
    assert [(p.piece, p.score, p.type) for p in ours.pieces] == [(p.piece, p.score, p.type) for p in trained.pieces]
    for field in ("precompiled_charsmap", "add_dummy_prefix", "remove_extra_whitespaces", "escape_whitespaces"):
        assert getattr(ours.normalizer_spec, field) == getattr(trained.normalizer_spec, field), field
    for field in ("model_type", "unk_id", "pad_id", "bos_id", "eos_id", "control_symbols"):
        assert getattr(ours.trainer_spec, field) == getattr(trained.trainer_spec, field), field
    # The ids: transformers' AlbertTokenizer of the saved folder (its tokenizer.json) on text not trained on.
    texts = held_out + EDGE_TEXTS
    expected = reference(texts, add_special_tokens=False)["input_ids"]
    assert tokenizer(texts).to_list() == expected
    assert sum(len(ids) for ids in expected) > 5000 and sum(ids.count(1) for ids in expected) > 0  # unknowns too
    assert sorted(path.name for path in folder.iterdir()) == files  # written to the cache, not beside the checkpoint
    assert [path.name for path in (tmp_path / "cache" / "vocabularies").glob("*/*")] == ["spiece.model"]


def test_convert_writes_spiece_model_and_the_model_matches_albert_model(checkpoints, tmp_path):
    made, held_out = checkpoints
    folder, reference_tokenizer, reference, _ = made["uncased"]
    assert cli.main(["convert", "--from", "huggingface", str(folder), "--output", str(tmp_path / "preset")]) == 0
    preset = tmp_path / "preset"
    assert (preset / "spiece.model").read_bytes() == tokenizer_json.sentencepiece_model(folder / "tokenizer.json")
    config = json.loads((preset / "config.json").read_text())
    assert config["tokenizer"] == {"type": "sentencepiece", "sentencepiece_model": "spiece.model", "lowercase": True,
                                   "strip_accents": True}
    pairs = ([line[:100] for line in held_out[:4]], [line[:100] for line in held_out[4:8]])
    expected = reference_tokenizer(*pairs, padding="max_length", max_length=64, return_tensors="pt",
                                  return_token_type_ids=True)
    assert expected["input_ids"].shape == (4, 64) and (expected["attention_mask"][:, -1] == 0).all()  # none cut
    torch = pytest.importorskip("torch")
    with torch.no_grad():
        hidden = reference(**expected, output_hidden_states=True)
    real = expected["attention_mask"].numpy().astype(bool)
    for source in (preset, folder):  # the converted preset, and the HF folder used directly as one
        batch = BertPreprocessor.from_preset(source, sequence_length=64)(pairs)
        np.testing.assert_array_equal(np.asarray(batch["token_ids"]), expected["input_ids"].numpy())
        np.testing.assert_array_equal(np.asarray(batch["segment_ids"]), expected["token_type_ids"].numpy())
        outputs = BertEncoder.from_preset(source)(batch)
        np.testing.assert_allclose(_numpy(outputs["sequence_output"])[real], hidden.last_hidden_state.numpy()[real],
                                   atol=TOLERANCE, rtol=0)
        np.testing.assert_allclose(_numpy(outputs["pooled_output"]), hidden.pooler_output.numpy(), atol=TOLERANCE,
                                   rtol=0)
        for ours, theirs in zip(outputs["encoder_outputs"], hidden.hidden_states[1:], strict=True):
            np.testing.assert_allclose(_numpy(ours)[real], theirs.numpy()[real], atol=TOLERANCE, rtol=0)


def test_finetune_uses_the_folder_as_preset(checkpoints, tmp_path):
    made, held_out = checkpoints
    folder = made["cased"][0]
    files = sorted(path.name for path in folder.iterdir())
    data = tmp_path / "train.csv"
    rows = [f'"{line[:80].replace(chr(34), "")}",{"ab"[index % 2]}' for index, line in enumerate(held_out[:20])]
    data.write_text("text,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    argv = ["finetune", "classify", "--preset", folder, "--train", data, "--dev", data, "--text-column", "text",
            "--label-column", "label", "--output", tmp_path / "run", "--epochs", "1", "--batch-size", "4",
            "--sequence-length", "32"]
    assert cli.main([str(argument) for argument in argv]) == 0
    run_preset = tmp_path / "run" / "preset"
    assert (run_preset / "spiece.model").read_bytes() == tokenizer_json.sentencepiece_model(folder / "tokenizer.json")
    assert json.loads((run_preset / "config.json").read_text())["tokenizer"]["lowercase"] is False
    assert sorted(path.name for path in folder.iterdir()) == files


@pytest.mark.parametrize("change, named", [
    (lambda steps: steps + [{"type": "NFC"}], "holds 'NFC'"),
    (lambda steps: [step for step in steps if step["type"] != "StripAccents"], "has NFKD alone"),
    (lambda steps: steps[:4] + [steps[5], steps[4]], "has 'Lowercase' after 'Precompiled'"),
    (lambda steps: steps[2:], "no Replace of `` and ''"),
])
def test_a_normalizer_we_cannot_reproduce_is_refused_in_one_line(checkpoints, tmp_path, capsys, change, named):
    folder = tmp_path / "hf"
    shutil.copytree(checkpoints[0]["uncased"][0], folder)
    tokenizer = json.loads((folder / "tokenizer.json").read_text())
    steps = tokenizer["normalizer"]["normalizers"]
    kinds = ["Replace", "Replace", "NFKD", "StripAccents", "Lowercase", "Precompiled"]
    assert [step["type"] for step in steps] == kinds
    tokenizer["normalizer"]["normalizers"] = change(steps)
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer))
    capsys.readouterr()
    assert cli.main(["convert", "--from", "huggingface", str(folder), "--output", str(tmp_path / "preset")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "tokenizer.json: field 'normalizer'" in error and named in error, error
    with pytest.raises(ConversionError, match="field 'normalizer'"):
        SentencePieceTokenizer.from_preset(folder)


def test_other_tokenizer_json_faults_are_named(checkpoints, tmp_path, monkeypatch):
    folder = tmp_path / "hf"
    shutil.copytree(checkpoints[0]["uncased"][0], folder)
    original = json.loads((folder / "tokenizer.json").read_text())

    def write(**changes):
        (folder / "tokenizer.json").write_text(json.dumps({**original, **changes}))

    write(model={**original["model"], "vocab": original["model"]["vocab"][:-1]})
    with pytest.raises(ConversionError, match=f"Unigram vocabulary has {VOCABULARY - 1} pieces but the token "
                                              f"embedding has {VOCABULARY} rows"):
        SentencePieceTokenizer.from_preset(folder)
    write(pre_tokenizer={"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True})
    with pytest.raises(ConversionError, match="field 'pre_tokenizer' is Metaspace\\(prepend_scheme 'first'\\)"):
        SentencePieceTokenizer.from_preset(folder)
    # transformers 4's layout (Metaspace alone, runs of spaces replaced last) gives the same SentencePiece model.
    spaces = {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}
    normalizer = {"type": "Sequence", "normalizers": [*original["normalizer"]["normalizers"], spaces]}
    write(normalizer=normalizer, pre_tokenizer=original["pre_tokenizer"]["pretokenizers"][1])
    assert tokenizer_json.sentencepiece_model(folder / "tokenizer.json") == tokenizer_json.sentencepiece_model(
        checkpoints[0]["uncased"][0] / "tokenizer.json")
    write()
    monkeypatch.setitem(__import__("sys").modules, "sentencepiece", None)  # not installed
    with pytest.raises(ConversionError, match="needs the sentencepiece package: pip install sentencepiece"):
        SentencePieceTokenizer.from_preset(folder)
