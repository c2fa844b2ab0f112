"""HF BERT checkpoints beyond `BertModel`/`BertForPreTraining`: masked-LM and task classes (no pooler, no NSP head),
untied output layers, transformers' other `hidden_act` names, and configs our encoder cannot be."""

import json

import keras
import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.convert import huggingface
from keras_bert_app.convert.weight_map import ConversionError
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_pretrainer import BertPretrainer
from tests.convert.checkpoints import TINY, huggingface_tensors, write_huggingface, write_vocabulary
from tests.convert.electra_checkpoints import inputs, run_huggingface

TOLERANCE = 1e-4
POSITIONS = np.array([[1, 2, 3], [4, 5, 1]], "int32")
# Odd sizes: 3 heads of 8, an intermediate width that is no multiple of H.
ODD = dict(vocab_size=30, hidden_size=24, num_hidden_layers=2, num_attention_heads=3, intermediate_size=40,
           max_position_embeddings=20)


def _huggingface(architecture, folder, **config):
    """A transformers BERT model with random weights drawn wide (every parameter shows), saved with a vocab.txt."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = getattr(transformers, architecture)(transformers.BertConfig(**{**ODD, **config})).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.2)
    model.save_pretrained(str(folder))
    write_vocabulary(folder / "vocab.txt", model.config.vocab_size)
    return model


def _numpy(value):
    return np.asarray(keras.ops.convert_to_numpy(value))


def _convert(*argv):
    return cli.main(["convert", *map(str, argv)])


def test_masked_lm_checkpoint_converts_without_pooler_and_goes_back(tmp_path):
    """`BertForMaskedLM` has neither pooler nor NSP head: a masked-LM-only pretrainer, written back as BertForMaskedLM."""
    transformers = pytest.importorskip("transformers")
    reference = _huggingface("BertForMaskedLM", tmp_path / "hf", hidden_act="gelu_new")
    with pytest.warns(UserWarning, match="no tensors for our pooler"):
        assert _convert("--from", "huggingface", tmp_path / "hf", "--output", tmp_path / "preset") == 0
    pretrainer = BertPretrainer.from_preset(tmp_path / "preset")
    assert pretrainer.next_sentence_head is None
    batch = inputs()
    real = batch["padding_mask"].astype(bool)
    expected = run_huggingface(reference, batch)
    np.testing.assert_allclose(_numpy(pretrainer.encoder(batch)["sequence_output"])[real],
                               expected.hidden_states[-1].numpy()[real], atol=TOLERANCE)
    logits = np.take_along_axis(expected.logits.numpy(), POSITIONS[..., None], axis=1)
    np.testing.assert_allclose(_numpy(pretrainer({**batch, "mask_positions": POSITIONS})["mlm"]), logits,
                               atol=TOLERANCE)

    assert _convert("--to", "huggingface", tmp_path / "preset", "--output", tmp_path / "back") == 0
    assert json.loads((tmp_path / "back" / "config.json").read_text())["architectures"] == ["BertForMaskedLM"]
    reloaded, info = transformers.BertForMaskedLM.from_pretrained(str(tmp_path / "back"), output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info  # no pooler written: the class has none
    np.testing.assert_allclose(run_huggingface(reloaded.eval(), batch).logits.numpy(), expected.logits.numpy(),
                               atol=1e-5)


def test_masked_lm_folder_as_a_preset_keeps_a_fresh_nsp_head_with_a_warning(tmp_path):
    source = write_huggingface(tmp_path / "hf", tensors=_without_pooler_and_nsp(), architecture="BertForMaskedLM")
    with pytest.warns(UserWarning, match="next_sentence_head and pooler"):
        pretrainer = BertPretrainer.from_preset(source)
    assert pretrainer.next_sentence_head is not None  # asked for by default; the checkpoint has none


def test_token_classifier_without_pooler_gives_its_encoder(tmp_path):
    reference = _huggingface("BertForTokenClassification", tmp_path / "hf", type_vocab_size=3, layer_norm_eps=1e-5)
    with pytest.warns(UserWarning, match="pooler"):
        assert _convert("--from", "huggingface", tmp_path / "hf", "--output", tmp_path / "preset") == 0
    batch = inputs()
    batch["segment_ids"][1, 5:] = 2
    real = batch["padding_mask"].astype(bool)
    expected = run_huggingface(reference.bert, batch).last_hidden_state.numpy()
    np.testing.assert_allclose(_numpy(BertEncoder.from_preset(tmp_path / "preset")(batch)["sequence_output"])[real],
                               expected[real], atol=TOLERANCE)


def test_untied_output_layer_is_refused_in_one_line(tmp_path, capsys):
    """With `tie_word_embeddings: false` the MLM scores against `cls.predictions.decoder.weight`, not the embeddings."""
    tensors = huggingface_tensors(TINY, prefix="bert.", heads=True)
    tensors["cls.predictions.decoder.weight"] = tensors["bert.embeddings.word_embeddings.weight"] + 1
    source = write_huggingface(tmp_path / "hf", tensors=tensors, architecture="BertForPreTraining",
                               tie_word_embeddings=False)
    capsys.readouterr()
    assert _convert("--from", "huggingface", source, "--output", tmp_path / "preset") == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0
    assert "'cls.predictions.decoder.weight' differs" in error and "tie_word_embeddings" in error
    with pytest.raises(ConversionError, match="tie_word_embeddings"):
        BertPretrainer.from_preset(source)
    encoder = BertEncoder.from_preset(source)  # the encoder alone is fine
    np.testing.assert_array_equal(encoder.token_embedding.embeddings.numpy(), tensors["bert.embeddings.word_embeddings.weight"])


@pytest.mark.all_backends
@pytest.mark.parametrize("hidden_act", ["silu", "quick_gelu", "gelu_fast"])
def test_other_transformers_activations_match(tmp_path, hidden_act):
    reference = _huggingface("BertForPreTraining", tmp_path / "hf", hidden_act=hidden_act)
    pretrainer = BertPretrainer.from_preset(tmp_path / "hf")
    batch = inputs()
    expected = run_huggingface(reference, batch)
    logits = np.take_along_axis(expected.prediction_logits.numpy(), POSITIONS[..., None], axis=1)
    outputs = pretrainer({**batch, "mask_positions": POSITIONS})
    np.testing.assert_allclose(_numpy(outputs["mlm"]), logits, atol=TOLERANCE)
    np.testing.assert_allclose(_numpy(outputs["nsp"]), expected.seq_relationship_logits.numpy(), atol=TOLERANCE)
    assert huggingface.hf_config(pretrainer.encoder, "BertModel")["hidden_act"] in (hidden_act, "gelu_new")


def test_activation_names_and_refusals(tmp_path):
    for hidden_act, ours in (("swish", "silu"), ("gelu_python", "gelu"), ("gelu_accurate", "gelu_approximate")):
        folder = write_huggingface(tmp_path / hidden_act, hidden_act=hidden_act)
        assert huggingface.read_config(folder)["encoder"]["activation"] == ours
    folder = write_huggingface(tmp_path / "gelu_10", hidden_act="gelu_10")
    with pytest.raises(ConversionError, match=r"field 'hidden_act' is 'gelu_10'; expected one of"):
        huggingface.read_config(folder)


def test_decoder_and_incomplete_configs_are_one_clear_line(tmp_path, capsys):
    """`is_decoder: true` makes transformers' attention causal; a config without its sizes is no checkpoint."""
    decoder = write_huggingface(tmp_path / "decoder", is_decoder=True)
    assert _convert("--from", "huggingface", decoder, "--output", tmp_path / "a") == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "field 'is_decoder' is True; expected False" in error
    incomplete = write_huggingface(tmp_path / "incomplete")
    config = json.loads((incomplete / "config.json").read_text())
    del config["num_hidden_layers"]
    (incomplete / "config.json").write_text(json.dumps(config))
    assert _convert("--from", "huggingface", incomplete, "--output", tmp_path / "b") == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "missing field(s) ['num_hidden_layers']" in error


def test_vocabulary_from_tokenizer_json_when_there_is_no_vocab_txt(tmp_path, capsys):
    """transformers 5 saves a tokenizer as tokenizer.json (+ tokenizer_config.json) only: its WordPiece vocabulary."""
    transformers = pytest.importorskip("transformers")
    vocabulary = write_vocabulary(tmp_path / "vocab.txt", TINY["vocab_size"])
    source = write_huggingface(tmp_path / "hf")
    (source / "vocab.txt").unlink()
    transformers.BertTokenizer(vocab=str(vocabulary), do_lower_case=False).save_pretrained(str(source))
    assert _convert("--from", "huggingface", source, "--output", tmp_path / "preset") == 0
    assert (tmp_path / "preset" / "vocab.txt").read_text() == vocabulary.read_text()
    assert json.loads((tmp_path / "preset" / "config.json").read_text())["tokenizer"] == {
        "vocabulary": "vocab.txt", "lowercase": False}
    tokenizer = json.loads((source / "tokenizer.json").read_text())
    tokenizer["model"]["vocab"] = dict(list(tokenizer["model"]["vocab"].items())[:-1])  # one row short
    (source / "tokenizer.json").write_text(json.dumps(tokenizer))
    capsys.readouterr()
    assert _convert("--from", "huggingface", source, "--output", tmp_path / "short") == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "tokenizer.json: vocabulary has 29 tokens" in error


def _without_pooler_and_nsp():
    tensors = huggingface_tensors(TINY, prefix="bert.", heads=True)
    return {name: value for name, value in tensors.items() if "pooler" not in name and "seq_relationship" not in name}


def test_a_transformers_5_folder_without_vocab_txt_is_a_preset(tmp_path, monkeypatch):
    """README: `from_preset` and `--preset` read HF folders; transformers 5 saves the tokenizer as tokenizer.json only.

    The vocabulary comes from tokenizer.json, written once as a vocab.txt into the cache (the checkpoint's folder
    is left as it is), so the tokenizer, fine-tuning and its preset work as with a vocab.txt.
    """
    transformers = pytest.importorskip("transformers")
    from keras_bert_app import BertPreprocessor

    monkeypatch.setenv("KERAS_BERT_APP_CACHE", str(tmp_path / "cache"))
    vocabulary = write_vocabulary(tmp_path / "vocab.txt", TINY["vocab_size"])
    source = write_huggingface(tmp_path / "hf")
    (source / "vocab.txt").unlink()
    reference = transformers.BertTokenizer(vocab=str(vocabulary), do_lower_case=True)
    reference.save_pretrained(str(source))
    files = sorted(path.name for path in source.iterdir())
    assert "vocab.txt" not in files and "tokenizer.json" in files
    texts = ["word3 Word7 word12", "word20 unknown word1 word2 word3"]
    ours = BertPreprocessor.from_preset(source, sequence_length=12)(texts)
    expected = reference(texts, padding="max_length", max_length=12, truncation=True)
    np.testing.assert_array_equal(np.asarray(ours["token_ids"]), expected["input_ids"])
    np.testing.assert_array_equal(np.asarray(ours["padding_mask"]), expected["attention_mask"])
    # Fine-tuning from the folder through the command line; its preset carries the vocabulary.
    data = tmp_path / "train.csv"
    data.write_text("text,label\nword1 word2,a\nword3 word4,b\nword5,a\nword6 word7,b\n", encoding="utf-8")
    argv = ["finetune", "classify", "--preset", source, "--train", data, "--dev", data, "--text-column", "text",
            "--label-column", "label", "--output", tmp_path / "run", "--epochs", "1", "--batch-size", "2"]
    assert cli.main([str(argument) for argument in argv]) == 0
    assert (tmp_path / "run" / "preset" / "vocab.txt").read_text() == vocabulary.read_text()
    assert sorted(path.name for path in source.iterdir()) == files  # nothing written beside the checkpoint
    # A tokenizer.json whose vocabulary does not fit the embeddings is named, in one line.
    tokenizer = json.loads((source / "tokenizer.json").read_text())
    tokenizer["model"]["vocab"] = dict(list(tokenizer["model"]["vocab"].items())[:-1])
    (source / "tokenizer.json").write_text(json.dumps(tokenizer))
    with pytest.raises(ConversionError, match="tokenizer.json: vocabulary has 29 tokens"):
        BertPreprocessor.from_preset(source)


def _with_special_tokens_only(source, architecture):
    """An HF `architecture` folder whose tokenizer.json (saved by transformers 5, no vocab.txt) holds the 5 specials."""
    transformers = pytest.importorskip("transformers")
    _huggingface(architecture, source, vocab_size=5)
    (source / "vocab.txt").unlink()
    specials = source.parent / "specials.txt"
    specials.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", encoding="utf-8")
    transformers.BertTokenizer(vocab=str(specials)).save_pretrained(str(source))
    return source


def test_a_tokenizer_json_of_special_tokens_only_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    """`BertTokenizerFast(vocab_file=...)` in transformers 5 keeps only the special tokens (it wants `vocab=`); a
    checkpoint saved with one has no word pieces, which tensorflow-text refuses deep inside: named here instead."""
    monkeypatch.setenv("KERAS_BERT_APP_CACHE", str(tmp_path / "cache"))
    source = _with_special_tokens_only(tmp_path / "hf", "BertModel")
    data = tmp_path / "train.csv"
    data.write_text("text,label\nword1 word2,a\nword3,b\n", encoding="utf-8")
    capsys.readouterr()
    argv = ["finetune", "classify", "--preset", source, "--train", data, "--dev", data, "--text-column", "text",
            "--label-column", "label", "--output", tmp_path / "run", "--epochs", "1", "--sequence-length", "16"]
    assert cli.main([str(argument) for argument in argv]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0
    assert f"{source / 'tokenizer.json'} (its WordPiece vocabulary): all 5 tokens are bracketed special tokens" in error
    assert not (tmp_path / "cache" / "vocabularies").exists() or not any((tmp_path / "cache" / "vocabularies").rglob("vocab.txt"))


def test_a_transformers_5_chinese_bert_folder_keeps_every_id(tmp_path, monkeypatch, shared_data):
    """Chinese BERT's vocabulary holds U+2028 (line 344) and "##" + U+2028 (line 13503): transformers strips them to
    "" and "##" in tokenizer.json. Each becomes a placeholder that no text gives, so every other id stays the same
    and the folder converts and tokenizes as transformers does."""
    transformers = pytest.importorskip("transformers")
    from keras_bert_app import BertPreprocessor

    monkeypatch.setenv("KERAS_BERT_APP_CACHE", str(tmp_path / "cache"))
    vocabulary = shared_data / "vocab" / "bert_chinese_vocab.txt"
    lines = vocabulary.read_text(encoding="utf-8").split("\n")[:-1]  # "\n"-separated: U+2028 is a token here
    source = write_huggingface(tmp_path / "hf", config={"vocab_size": len(lines)})
    (source / "vocab.txt").unlink()
    reference = transformers.BertTokenizer(vocab=str(vocabulary))
    reference.save_pretrained(str(source))
    assert "vocab.txt" not in {path.name for path in source.iterdir()}
    assert cli.main(["convert", "--from", "huggingface", str(source), "--output", str(tmp_path / "preset")]) == 0
    written = (tmp_path / "preset" / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(written) == len(lines)
    changed = {index: token for index, (token, line) in enumerate(zip(written, lines)) if token != line}
    assert changed == {343: "[EMPTY_343]", 13502: "[EMPTY_13502]"}
    texts = ["今天天气很好，我们去公园散步吧。", "这部手机的电池\u2028续航太差了！", "BERT模型在２０１８年发布 😀 ok"]
    ours = BertPreprocessor.from_preset(tmp_path / "preset", sequence_length=32)(texts)
    expected = reference(texts, padding="max_length", max_length=32, truncation=True)
    np.testing.assert_array_equal(np.asarray(ours["token_ids"]), expected["input_ids"])
    assert BertPreprocessor.from_preset(source, sequence_length=32)(texts)["token_ids"].numpy().tolist() == \
        expected["input_ids"]  # the folder itself as a preset (its vocab.txt made in the cache)


def test_a_failed_convert_leaves_no_half_written_preset(tmp_path, monkeypatch, capsys):
    """A task checkpoint whose tokenizer.json cannot be our vocabulary: `convert` fails after the weights would be
    written; the output folder is not left holding weights without a vocabulary (which a rerun would refuse
    to overwrite and `predict` would fail on)."""
    monkeypatch.setenv("KERAS_BERT_APP_CACHE", str(tmp_path / "cache"))
    source = _with_special_tokens_only(tmp_path / "hf", "BertForSequenceClassification")
    output = tmp_path / "out"
    argv = ["convert", "--from", "huggingface", str(source), "--output", str(output)]
    assert cli.main(argv) == 2
    assert "all 5 tokens are bracketed special tokens" in capsys.readouterr().err
    assert not output.exists()
    output.mkdir()  # a folder the user made: kept, empty
    (output / "notes.txt").write_text("mine")
    assert cli.main([*argv, "--overwrite"]) == 2
    assert sorted(path.name for path in output.iterdir()) == ["notes.txt"]
    # With a usable vocabulary the same command works, no --overwrite needed.
    (source / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", encoding="utf-8")
    (output / "notes.txt").unlink()
    assert cli.main(argv) == 0
    assert {"config.json", "model.weights.h5", "task.weights.h5", "vocab.txt"} <= {p.name for p in output.iterdir()}
