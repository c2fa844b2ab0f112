"""HF BERT task checkpoints through `convert`: transformers task classes with random weights and odd sizes (hidden
48, 3 heads, 40 positions) become the fine-tuned task presets `finetune` writes (heads, label names, "data"), which
`predict` and `export` take as they are; our fine-tuned presets go back out as the matching transformers class."""

import csv
import json

import keras
import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_question_answerer import BertQuestionAnswerer
from keras_bert_app.models.bert_token_classifier import BertTokenClassifier
from tests.convert.heldout_checkpoints import TEXTS, WORDS, huggingface_checkpoint

TOLERANCE = 1e-5
NAMES = ["negative", "positive", "mixed", "neutral", "off topic"]
CASES = {  # id: (transformers class, our class, config)
    "2_labels": ("BertForSequenceClassification", BertClassifier, dict(id2label=dict(enumerate(NAMES[:2])))),
    "5_labels": ("BertForSequenceClassification", BertClassifier, dict(id2label=dict(enumerate(NAMES)))),
    "regression": ("BertForSequenceClassification", BertClassifier, dict(num_labels=1, problem_type="regression")),
    "tags": ("BertForTokenClassification", BertTokenClassifier, dict(id2label={0: "O", 1: "B-LOC", 2: "I-LOC"})),
    "spans": ("BertForQuestionAnswering", BertQuestionAnswerer, {}),
}


def _main(*argv):
    return cli.main([str(argument) for argument in argv])


def _batch():
    """Token ids, two segments and a padded row."""
    token_ids = np.random.default_rng(0).integers(5, 100, size=(3, 16)).astype("int32")
    token_ids[:, 0], token_ids[:, -1] = 2, 3
    segment_ids = np.zeros_like(token_ids)
    segment_ids[:, 9:] = 1
    padding_mask = np.ones_like(token_ids)
    padding_mask[1, 11:] = 0
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def _transformers(model, batch):
    torch = pytest.importorskip("torch")
    with torch.no_grad():
        outputs = model(input_ids=torch.tensor(batch["token_ids"]), token_type_ids=torch.tensor(batch["segment_ids"]),
                        attention_mask=torch.tensor(batch["padding_mask"]))
    if hasattr(outputs, "start_logits"):
        return {"start_logits": outputs.start_logits.numpy(), "end_logits": outputs.end_logits.numpy()}
    return outputs.logits.numpy()


def _ours(model, batch):
    return keras.tree.map_structure(keras.ops.convert_to_numpy, model(batch))


def _assert_close(ours, theirs, batch):
    """Equal logits; per-position ones at the real positions."""
    real = batch["padding_mask"].astype(bool)
    for name in (ours if isinstance(ours, dict) else [None]):
        got, expected = (ours[name], theirs[name]) if name else (ours, theirs)
        if got.ndim > 1 and got.shape[1] == real.shape[1]:
            got, expected = got[real], expected[real]
        np.testing.assert_allclose(got, expected, atol=TOLERANCE, err_msg=name)


def _convert(architecture, tmp_path, **config):
    reference = huggingface_checkpoint(architecture, tmp_path / "hf", **config)
    assert _main("convert", "--from", "huggingface", tmp_path / "hf", "--output", tmp_path / "preset") == 0
    return reference, tmp_path / "preset"


# Every model class on every backend; "2_labels" and "regression" differ from "5_labels" only in what the
# conversion reads and writes (label names, problem type: JSON, no backend code), and run the same BertClassifier
# forward pass, so they run on TensorFlow alone.
BACKEND_CASES = {"5_labels", "tags", "spans"}


@pytest.mark.filterwarnings("ignore:.*no tensors for our pooler")
@pytest.mark.parametrize(
    "case", [pytest.param(case, marks=[pytest.mark.all_backends] if case in BACKEND_CASES else []) for case in sorted(CASES)]
)
def test_task_checkpoint_becomes_a_fine_tuned_preset_with_transformers_logits_and_goes_back(tmp_path, case, capsys):
    transformers = pytest.importorskip("transformers")
    architecture, model_class, config = CASES[case]
    reference, preset = _convert(architecture, tmp_path, **config)
    assert "encoder only" not in capsys.readouterr().out
    entry = json.loads((preset / "config.json").read_text())["task"]
    assert entry["class_name"] == model_class.__name__ and entry["data"]["sequence_length"] == 40
    names = [config["id2label"][index] for index in sorted(config["id2label"])] if "id2label" in config else None
    assert entry.get("label_names") == names
    batch = _batch()
    expected = _transformers(reference, batch)
    _assert_close(_ours(model_class.from_preset(preset), batch), expected, batch)

    assert _main("convert", "--to", "huggingface", preset, "--output", tmp_path / "back") == 0
    back, info = getattr(transformers, architecture).from_pretrained(str(tmp_path / "back"), output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    assert back.config.num_labels == reference.config.num_labels
    assert back.config.problem_type == reference.config.problem_type
    if names:
        assert [back.config.id2label[index] for index in range(len(names))] == names
    _assert_close(_transformers(back.eval(), batch), expected, batch)


def test_default_label_names_are_kept_with_a_warning_and_one_label_tagger_is_refused(tmp_path, capsys):
    with pytest.warns(UserWarning, match="default names LABEL_0..LABEL_2"):
        _convert("BertForSequenceClassification", tmp_path / "default", num_labels=3)
    entry = json.loads((tmp_path / "default" / "preset" / "config.json").read_text())["task"]
    assert entry["label_names"] == ["LABEL_0", "LABEL_1", "LABEL_2"]
    huggingface_checkpoint("BertForTokenClassification", tmp_path / "one" / "hf", num_labels=1)
    capsys.readouterr()
    assert _main("convert", "--from", "huggingface", tmp_path / "one" / "hf", "--output", tmp_path / "one" / "p") == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "with one label" in error, error


def _hf_argmax_labels(reference, tmp_path, texts):
    """transformers' labels for raw texts, tokenized by its own BertTokenizer at the 40 positions."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.BertTokenizer(vocab=str(tmp_path / "hf" / "vocab.txt"), do_lower_case=True)
    inputs = tokenizer(texts, padding="max_length", max_length=40, truncation=True, return_tensors="pt")
    with torch.no_grad():
        logits = reference(**inputs).logits.numpy()
    return logits, [reference.config.id2label[index] for index in logits.argmax(-1)]


def _softmax(logits):
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    return probabilities / probabilities.sum(-1, keepdims=True)


def test_predict_a_converted_classifier_as_transformers_labels_it(tmp_path):
    """`predict` reads a CSV's `text` column (the default the conversion records). (The export of the same
    checkpoint, converted, serving its label names and transformers' softmax: the next test, which exports it
    from the checkpoint folder and from a run folder holding the converted preset.)"""
    reference, preset = _convert("BertForSequenceClassification", tmp_path, id2label=dict(enumerate(NAMES)))
    texts = [text for text in TEXTS if text.strip()]
    logits, labels = _hf_argmax_labels(reference, tmp_path, texts)
    with open(tmp_path / "input.csv", "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows([["text"], *[[text] for text in texts]])
    assert _main("predict", "--preset", preset, "--input", tmp_path / "input.csv",
                 "--output", tmp_path / "predictions.jsonl") == 0
    rows = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert [row["prediction"] for row in rows] == labels
    np.testing.assert_allclose([row["logits"] for row in rows], logits, atol=1e-5)


def test_predict_evaluate_and_export_take_the_checkpoint_folder_or_a_run_folder_as_it_is(tmp_path, monkeypatch, capsys):
    """`--preset`/`--model` of an HF task checkpoint folder: converted once into the cache, then used as the
    converted preset is; a run folder (its `preset/` inside) is taken too. Both exports serve the checkpoint's
    label names and transformers' softmax."""
    import shutil

    import tensorflow as tf

    monkeypatch.setenv("KERAS_BERT_APP_CACHE", str(tmp_path / "cache"))
    reference = huggingface_checkpoint("BertForSequenceClassification", tmp_path / "hf", id2label=dict(enumerate(NAMES)))
    texts = [text for text in TEXTS if text.strip()]
    logits, labels = _hf_argmax_labels(reference, tmp_path, texts)
    with open(tmp_path / "input.csv", "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows([["text", "label"], *[[text, label] for text, label in zip(texts, labels)]])
    capsys.readouterr()
    for attempt in range(2):
        assert _main("predict", "--preset", tmp_path / "hf", "--input", tmp_path / "input.csv",
                     "--output", tmp_path / f"predictions{attempt}.jsonl") == 0
        rows = [json.loads(line) for line in (tmp_path / f"predictions{attempt}.jsonl").read_text().splitlines()]
        assert [row["prediction"] for row in rows] == labels
        np.testing.assert_allclose([row["logits"] for row in rows], logits, atol=1e-5)
        said = capsys.readouterr().out
        assert ("converted to our preset format once" in said) == (attempt == 0)  # the second run reads the cache
    assert _main("evaluate", "--preset", tmp_path / "hf", "--input", tmp_path / "input.csv") == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("{"):])["accuracy"] == 1.0  # its own labels
    [converted] = (tmp_path / "cache" / "converted").iterdir()
    shutil.copytree(converted, tmp_path / "run" / "preset")
    for model in (tmp_path / "hf", tmp_path / "run"):
        assert _main("export", "--model", model, "--output", tmp_path / "served" / model.name) == 0
        serving = tf.saved_model.load(str(tmp_path / "served" / model.name / "1")).signatures["serving_default"]
        outputs = serving(text=tf.constant(texts))
        np.testing.assert_allclose(outputs["probabilities"].numpy(), _softmax(logits), atol=TOLERANCE)
        assert [label.decode() for label in outputs["label"].numpy()] == labels
    # An encoder checkpoint has nothing to predict with: said in one line, before any conversion.
    huggingface_checkpoint("BertModel", tmp_path / "encoder")
    capsys.readouterr()
    assert _main("predict", "--preset", tmp_path / "encoder", "--input", tmp_path / "input.csv",
                 "--output", tmp_path / "none.jsonl") == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "without a BERT, ELECTRA or ALBERT task head that we read" in error, error
    assert "fine-tune it first" in error
    assert len(list((tmp_path / "cache" / "converted").iterdir())) == 1  # the classifier's alone


def test_predict_with_converted_tagger_and_multiple_choice(tmp_path):
    """A token classifier tags CoNLL words with the checkpoint's tag names; a multiple-choice checkpoint predicts
    SWAG rows (4 endings, the default) as transformers' argmax."""
    torch = pytest.importorskip("torch")
    reference, preset = _convert("BertForTokenClassification", tmp_path / "ner",
                                 id2label={0: "O", 1: "B-LOC", 2: "I-LOC"})
    words = ["paris", "is", "a", "big", "city", "."]
    (tmp_path / "words.txt").write_text("".join(f"{word} O\n" for word in words), encoding="utf-8")
    assert _main("predict", "--preset", preset, "--input", tmp_path / "words.txt",
                 "--output", tmp_path / "tags.jsonl") == 0
    tags = json.loads((tmp_path / "tags.jsonl").read_text().splitlines()[0])["tags"]
    ids = [2, *[5 + WORDS.index(word) for word in words], 3]  # [CLS] words [SEP]: vocab.txt has 5 specials first
    with torch.no_grad():
        logits = reference(input_ids=torch.tensor([ids])).logits.numpy()[0, 1:-1]
    assert tags == [reference.config.id2label[index] for index in logits.argmax(-1)]

    reference, preset = _convert("BertForMultipleChoice", tmp_path / "swag")
    header = ["video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source", *[f"ending{i}" for i in range(4)]]
    rows = [["v", "0", "", "the cat sat", "on the", "gen", "mat", "dog", "red city", "river ."],
            ["v", "1", "", "paris is", "a", "gen", "city", "day", "night", "big fox"]]
    with open(tmp_path / "swag.csv", "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows([header, *rows])
    assert _main("predict", "--preset", preset, "--input", tmp_path / "swag.csv",
                 "--output", tmp_path / "choices.jsonl") == 0
    predicted = [json.loads(line) for line in (tmp_path / "choices.jsonl").read_text().splitlines()]
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.BertTokenizer(vocab=str(tmp_path / "swag" / "hf" / "vocab.txt"))
    first = [row[3] for row in rows for _ in range(4)]
    second = [f"{row[4]} {row[6 + index]}" for row in rows for index in range(4)]
    inputs = tokenizer(first, second, padding="max_length", max_length=40, return_tensors="pt")
    with torch.no_grad():
        logits = reference(**{name: value.view(2, 4, -1) for name, value in inputs.items()}).logits.numpy()
    assert [row["prediction"] for row in predicted] == logits.argmax(-1).tolist()
    np.testing.assert_allclose([row["logits"] for row in predicted], logits, atol=TOLERANCE)


def test_fine_tuned_classifier_goes_out_as_transformers_sequence_classifier(tmp_path):
    """A `finetune classify` run's preset -> `BertForSequenceClassification` with its label names; transformers
    loads every tensor and computes our logits."""
    transformers = pytest.importorskip("transformers")
    huggingface_checkpoint("BertModel", tmp_path / "hf")
    rows = [["text", "label"], *[[text, ("sports", "politics", "tech")[index % 3]] for index, text in enumerate(TEXTS)]]
    with open(tmp_path / "train.csv", "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows(rows)
    assert _main("finetune", "classify", "--preset", tmp_path / "hf", "--output", tmp_path / "run",
                 "--train", tmp_path / "train.csv", "--dev", tmp_path / "train.csv", "--text-column", "text",
                 "--label-column", "label", "--epochs", "1", "--batch-size", "4") == 0
    assert _main("convert", "--to", "huggingface", tmp_path / "run" / "preset", "--output", tmp_path / "back") == 0
    back, info = transformers.AutoModelForSequenceClassification.from_pretrained(str(tmp_path / "back"),
                                                                                 output_loading_info=True)
    assert type(back).__name__ == "BertForSequenceClassification"
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert [back.config.id2label[index] for index in range(3)] == ["politics", "sports", "tech"]
    assert back.config.label2id == {"politics": 0, "sports": 1, "tech": 2}
    batch = _batch()
    _assert_close(_ours(BertClassifier.from_preset(tmp_path / "run" / "preset"), batch),
                  _transformers(back.eval(), batch), batch)

