import json
import shlex

import keras
import numpy as np
import pytest

import keras_bert_app as kba
from keras_bert_app import cli, errors, presets
from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer


# The README's lines (its `/models/...` base is put under the test's folder).
README_EXPORT = "keras-bert-app export --model runs/topics/preset --output serving/topics"
README_SERVING = "keras-bert-app export --model RUN/preset --output /models/bert_topics"
README_SYNOPSIS = (
    "keras-bert-app export --model RUN_OR_PRESET_DIR --output EXPORT_BASE [--version N] [--sequence-length 128] [--text-pair]"
)


def readme_argv(line):
    return shlex.split(line)[1:]


def test_export_command_serves_a_finetuned_run(tmp_path, monkeypatch, capsys):
    import tensorflow as tf

    keras.utils.set_random_seed(4)
    encoder = BertEncoder(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=8,
                          intermediate_dim=16, max_sequence_length=32)
    model = BertClassifier(encoder, num_classes=2)
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "runs" / "topics" / "preset"
    model.save_to_preset(run, label_names=["ham", "spam"])
    tokenizer = BertTokenizer.from_preset("bert_tiny_uncased")
    tokenizer.save_to_preset(run)
    task = presets.read_config(run)["task"]
    task["data"] = {"reader": "classify", "sequence_length": 16, "text_pair_column": None}
    presets.write_config_entry(run, "task", task)

    assert cli.main(readme_argv(README_EXPORT)) == 0
    assert "exported BertClassifier" in capsys.readouterr().out
    target = tmp_path / "serving" / "topics" / "1"
    metadata = json.loads((target / "assets.extra" / "keras_bert_app.json").read_text())
    assert metadata["sequence_length"] == 16 and metadata["label_names"] == ["ham", "spam"]
    served = tf.saved_model.load(str(target)).signatures["serving_default"](text=tf.constant(["win money now"]))
    preprocessor = BertPreprocessor(tokenizer, sequence_length=16)
    expected = keras.ops.convert_to_numpy(keras.ops.softmax(model.predict(preprocessor(["win money now"]), verbose=0)))
    np.testing.assert_allclose(served["probabilities"].numpy(), expected, atol=1e-5)
    # A second export takes the next version; an existing one is refused.
    assert cli.main(readme_argv(README_EXPORT)) == 0
    assert (tmp_path / "serving" / "topics" / "2").is_dir()
    assert cli.main([*readme_argv(README_EXPORT), "--version", "1"]) == 2
    err = capsys.readouterr().err
    assert "exists" in err and len(err.strip().splitlines()) == 1


def _tiny_encoder(max_sequence_length=32):
    return BertEncoder(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=8,
                       intermediate_dim=16, max_sequence_length=max_sequence_length)


def _capture_exports(monkeypatch):
    """Replace the SavedModel writer by a recorder: the command's wiring without a SavedModel."""
    from keras_bert_app.export import serving

    calls = []

    def record(model, head, target, warmup_texts=serving.WARMUP_TEXTS):
        calls.append({"model": model, "head": head, "preprocessor": head.preprocessor, "target": target})
        return target

    monkeypatch.setattr(serving, "write_saved_model", record)
    return calls


def test_export_command_takes_squad_and_ner_settings_from_the_run(tmp_path, monkeypatch):
    from keras_bert_app.models.bert_question_answerer import BertQuestionAnswerer
    from keras_bert_app.models.bert_token_classifier import BertTokenClassifier

    keras.utils.set_random_seed(5)
    tokenizer = BertTokenizer.from_preset("bert_tiny_uncased")
    qa_run = tmp_path / "squad" / "preset"
    qa = BertQuestionAnswerer(_tiny_encoder())
    qa.save_to_preset(qa_run)
    tokenizer.save_to_preset(qa_run)
    task = presets.read_config(qa_run)["task"]
    task["data"] = {"reader": "squad", "sequence_length": 24, "max_query_length": 6, "max_answer_length": 4}
    presets.write_config_entry(qa_run, "task", task)
    ner_run = tmp_path / "ner" / "preset"
    tagger = BertTokenClassifier(_tiny_encoder(), num_classes=3)
    tagger.save_to_preset(ner_run, label_names=["O", "B-PER", "I-PER"])
    tokenizer.save_to_preset(ner_run)

    calls = _capture_exports(monkeypatch)
    assert cli.main(["export", "--model", str(qa_run), "--output", str(tmp_path / "qa")]) == 0
    assert cli.main(["export", "--model", str(ner_run), "--output", str(tmp_path / "ner")]) == 0
    (qa_call, ner_call) = calls
    assert type(qa_call["model"]).__name__ == "BertQuestionAnswerer"
    assert (qa_call["head"].max_query_length, qa_call["head"].max_answer_length) == (6, 4)
    assert qa_call["preprocessor"].sequence_length == 24
    assert type(ner_call["model"]).__name__ == "BertTokenClassifier"
    assert ner_call["head"].label_names == ["O", "B-PER", "I-PER"]
    assert ner_call["preprocessor"].sequence_length == 32  # no run settings: the default 128, cut to the 32 positions
    # The library takes the folder too, and the arguments override the run's settings.
    kba.export_for_serving(qa_run, tmp_path / "qa2", max_answer_length=7, sequence_length=20)
    assert (calls[-1]["head"].max_query_length, calls[-1]["head"].max_answer_length) == (6, 7)
    assert calls[-1]["preprocessor"].sequence_length == 20 and calls[-1]["target"] == tmp_path / "qa2" / "1"
    # The fine-tuned heads come back with their weights.
    features = BertPreprocessor(tokenizer, sequence_length=24)(["a question about it"])
    for original, call in ((qa, qa_call), (tagger, ner_call)):
        expected = keras.tree.map_structure(keras.ops.convert_to_numpy, original(features))
        got = keras.tree.map_structure(keras.ops.convert_to_numpy, call["model"](features))
        keras.tree.map_structure(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-6), expected, got)


def test_export_command_serves_masked_lm_from_a_pretrain_run(tmp_path, monkeypatch, capsys):
    from keras_bert_app.export.preset_loading import load_for_serving
    from keras_bert_app.models.bert_pretrainer import BertPretrainer

    keras.utils.set_random_seed(6)
    run = tmp_path / "pretrain" / "preset"
    pretrainer = BertPretrainer(_tiny_encoder())
    pretrainer.save_to_preset(run)  # what `pretrain` writes: encoder + pretrainer.weights.h5
    BertTokenizer.from_preset("bert_tiny_uncased").save_to_preset(run)

    calls = _capture_exports(monkeypatch)
    assert cli.main(["export", "--model", str(run), "--output", str(tmp_path / "mlm"), "--top-k", "3"]) == 0
    (call,) = calls
    assert type(call["model"]).__name__ == "BertPretrainer"
    assert (call["head"].top_k, call["head"].max_predictions) == (3, 20)
    features = BertPreprocessor(call["preprocessor"].tokenizer, sequence_length=16)(["the cat sat"])
    inputs = {name: np.asarray(value).astype("int32") for name, value in features.items()}
    inputs["mask_positions"] = np.array([[2, 0]], "int32")
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(call["model"](inputs)["mlm"]),
        keras.ops.convert_to_numpy(pretrainer(inputs)["mlm"]), atol=1e-6,
    )
    model, task = load_for_serving(run, head="features")
    assert type(model).__name__ == "BertEncoder" and task == {}
    finetuned = tmp_path / "classify" / "preset"
    BertClassifier(_tiny_encoder(), num_classes=2).save_to_preset(finetuned)
    BertTokenizer.from_preset("bert_tiny_uncased").save_to_preset(finetuned)
    capsys.readouterr()
    assert cli.main(["export", "--model", str(finetuned), "--output", str(tmp_path / "y"), "--head", "masked_lm"]) == 2
    assert "--head applies to encoder presets only" in capsys.readouterr().err


def test_export_refuses_what_would_serve_fresh_weights_in_one_line(tmp_path, capsys):
    # Each used to export (exit 0) a SavedModel of freshly initialised weights, or fail with h5py's own message.
    tokenizer = BertTokenizer.from_preset("bert_tiny_uncased")
    encoder_only = tmp_path / "encoder"
    _tiny_encoder().save_to_preset(encoder_only)
    tokenizer.save_to_preset(encoder_only)
    no_weights = tmp_path / "no_weights"
    no_weights.mkdir()
    for name in ("config.json", "vocab.txt"):
        (no_weights / name).write_bytes((encoder_only / name).read_bytes())
    no_head = tmp_path / "no_head"
    BertClassifier(_tiny_encoder(), num_classes=2).save_to_preset(no_head)
    tokenizer.save_to_preset(no_head)
    (no_head / "task.weights.h5").unlink()
    (tmp_path / "a_file").write_text("")
    cases = [
        (["--model", str(no_weights)], "has no weights here (no model.weights.h5): the SavedModel would serve freshly"),
        (["--model", "bert_tiny_uncased"], "bert_tiny_uncased has no weights here"),
        (["--model", str(encoder_only), "--head", "masked_lm"], "has no pretrainer.weights.h5 (the masked-LM head"),
        (["--model", str(no_head)], "holds a fine-tuned BertClassifier (config.json's 'task' entry) but not its head's "
                                    "weights, task.weights.h5"),
    ]
    for argv, message in cases:
        assert cli.main(["export", *argv, "--output", str(tmp_path / "out")]) == 2, argv
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / "out").exists()
    assert cli.main(["export", "--model", str(encoder_only), "--output", str(tmp_path / "a_file")]) == 2
    assert "--output " + str(tmp_path / "a_file") + " is a file" in capsys.readouterr().err


def test_readme_export_lines_and_bad_input(tmp_path, monkeypatch, capsys):
    from keras_bert_app.models.bert_multiple_choice import BertMultipleChoice

    keras.utils.set_random_seed(8)
    monkeypatch.chdir(tmp_path)
    tokenizer = BertTokenizer.from_preset("bert_tiny_uncased")
    for folder in ("RUN/preset", "RUN_OR_PRESET_DIR"):
        BertClassifier(_tiny_encoder(128), num_classes=2).save_to_preset(tmp_path / folder, label_names=["a", "b"])
        tokenizer.save_to_preset(tmp_path / folder)
    calls = _capture_exports(monkeypatch)
    serving_line = README_SERVING.replace("/models/", f"{tmp_path}/models/")
    assert cli.main(readme_argv(serving_line)) == 0
    assert calls[-1]["target"] == tmp_path / "models" / "bert_topics" / "1"
    synopsis = README_SYNOPSIS.replace("[", "").replace("]", "").replace("--version N", "--version 3")
    assert cli.main(readme_argv(synopsis)) == 0
    head = calls[-1]["head"]
    assert calls[-1]["target"].resolve() == tmp_path / "EXPORT_BASE" / "3"
    assert (head.sequence_length, head.text_pair) == (128, True)
    assert (head.input_names, head.label_names) == (("text_a", "text_b"), ["a", "b"])
    capsys.readouterr()
    # Bad input: one line on stderr, exit code 2; in Python one typed error naming the argument.
    assert cli.main(["export", "--model", "no/such/run", "--output", "x"]) == 2
    err = capsys.readouterr().err
    assert "model: no/such/run: no such preset folder" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(errors.MissingFileError) as caught:
        kba.export_for_serving(tmp_path / "no_run", tmp_path / "x")
    assert caught.value.argument == "model"
    with pytest.raises(errors.ArgumentError) as caught:
        kba.export_for_serving(_tiny_encoder(), tmp_path / "x")
    assert caught.value.argument == "preprocessor"
    preprocessor = BertPreprocessor(tokenizer, sequence_length=16)
    with pytest.raises(errors.ArgumentError, match="cannot export a BertMultipleChoice; expected one of") as caught:
        kba.export_for_serving(BertMultipleChoice(_tiny_encoder(), num_choices=2), tmp_path / "x", preprocessor)
    assert caught.value.argument == "model"
    assert not calls[2:]
