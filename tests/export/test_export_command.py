import json

import keras
import numpy as np

from keras_bert_app import cli, presets
from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer


def test_export_command_serves_a_finetuned_run(tmp_path, capsys):
    import tensorflow as tf

    keras.utils.set_random_seed(4)
    encoder = BertEncoder(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=8,
                          intermediate_dim=16, max_sequence_length=32)
    model = BertClassifier(encoder, num_classes=2)
    run = tmp_path / "run" / "preset"
    model.save_to_preset(run, label_names=["ham", "spam"])
    tokenizer = BertTokenizer.from_preset("bert_tiny_uncased")
    tokenizer.save_to_preset(run)
    task = presets.read_config(run)["task"]
    task["data"] = {"reader": "classify", "sequence_length": 16, "text_pair_column": None}
    presets.write_config_entry(run, "task", task)

    assert cli.main(["export", "--model", str(run), "--output", str(tmp_path / "serving")]) == 0
    assert "exported BertClassifier" in capsys.readouterr().out
    target = tmp_path / "serving" / "1"
    metadata = json.loads((target / "assets.extra" / "keras_bert_app.json").read_text())
    assert metadata["sequence_length"] == 16 and metadata["label_names"] == ["ham", "spam"]
    served = tf.saved_model.load(str(target)).signatures["serving_default"](text=tf.constant(["win money now"]))
    preprocessor = BertPreprocessor(tokenizer, sequence_length=16)
    expected = keras.ops.convert_to_numpy(keras.ops.softmax(model.predict(preprocessor(["win money now"]), verbose=0)))
    np.testing.assert_allclose(served["probabilities"].numpy(), expected, atol=1e-5)
    # A second export takes the next version; an existing one is refused.
    assert cli.main(["export", "--model", str(run), "--output", str(tmp_path / "serving")]) == 0
    assert (tmp_path / "serving" / "2").is_dir()
    assert cli.main(["export", "--model", str(run), "--output", str(tmp_path / "serving"), "--version", "1"]) == 1
    assert "exists" in capsys.readouterr().err


def _tiny_encoder():
    return BertEncoder(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=8,
                       intermediate_dim=16, max_sequence_length=32)


def _capture_exports(monkeypatch):
    """Replace export_for_serving by a recorder: the command's wiring without a SavedModel."""
    from keras_bert_app.export import serving

    calls = []

    def record(model, export_base, preprocessor, **kwargs):
        calls.append({"model": model, "preprocessor": preprocessor, **kwargs})
        return export_base

    monkeypatch.setattr(serving, "export_for_serving", record)
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
    assert (qa_call["max_query_length"], qa_call["max_answer_length"]) == (6, 4)
    assert qa_call["preprocessor"].sequence_length == 24
    assert type(ner_call["model"]).__name__ == "BertTokenClassifier"
    assert ner_call["label_names"] == ["O", "B-PER", "I-PER"]
    # The fine-tuned heads come back with their weights.
    features = BertPreprocessor(tokenizer, sequence_length=24)(["a question about it"])
    for original, call in ((qa, qa_call), (tagger, ner_call)):
        expected = keras.tree.map_structure(keras.ops.convert_to_numpy, original(features))
        got = keras.tree.map_structure(keras.ops.convert_to_numpy, call["model"](features))
        keras.tree.map_structure(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-6), expected, got)


def test_export_command_serves_masked_lm_from_a_pretrain_run(tmp_path, monkeypatch, capsys):
    from keras_bert_app.export.export_command import load_for_serving
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
    assert (call["top_k"], call["max_predictions"]) == (3, 20)
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
    assert cli.main(["export", "--model", str(finetuned), "--output", str(tmp_path / "y"), "--head", "masked_lm"]) == 1
    assert "--head applies to encoder presets only" in capsys.readouterr().err
