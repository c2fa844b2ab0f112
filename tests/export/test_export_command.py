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
