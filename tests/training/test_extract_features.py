import argparse
import json

import numpy as np
import pytest

from keras_bert_app.training import extract_features


def run_command(argv):
    # Called directly: cli.py maps `extract-features` to this module once the lead wires it.
    parser = argparse.ArgumentParser()
    extract_features.add_arguments(parser)
    return extract_features.run(parser.parse_args(argv))


def test_extract_features_layout_and_values(tmp_path, shared_data):
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    tokenizer = BertTokenizer(shared_data / "vocab" / "bert_uncased_vocab.txt", lowercase=True)
    tokenizer.save_to_preset(tmp_path / "preset")
    encoder = BertEncoder(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=2, num_heads=2,
        hidden_dim=8, intermediate_dim=16, max_sequence_length=32, dropout=0.0,
    )
    encoder.save_to_preset(tmp_path / "preset")
    (tmp_path / "in.txt").write_text("Hello world.\nThe cat sat ||| on the mat\n", encoding="utf-8")
    (tmp_path / "pair.txt").write_text("The cat sat ||| on the mat\n", encoding="utf-8")
    for name in ("in", "pair"):
        argv = [
            "--input", str(tmp_path / f"{name}.txt"), "--preset", str(tmp_path / "preset"),
            "--layers", "-1,0", "--output", str(tmp_path / f"{name}.jsonl"), "--sequence-length", "16",
        ]
        if name == "in":
            with pytest.raises(ValueError, match="mixes single texts"):
                run_command(argv)
        else:
            assert run_command(argv) == 0
    [record] = [json.loads(line) for line in (tmp_path / "pair.jsonl").read_text().splitlines()]
    tokens = [feature["token"] for feature in record["features"]]
    assert tokens == ["[CLS]", "the", "cat", "sat", "[SEP]", "on", "the", "mat", "[SEP]"]
    assert [layer["index"] for layer in record["features"][0]["layers"]] == [-1, 0]
    inputs = BertPreprocessor(tokenizer, sequence_length=16)((["The cat sat"], ["on the mat"]))
    inputs = {k: np.asarray(v).astype("int32") for k, v in inputs.items()}
    outputs = encoder(inputs)["encoder_outputs"]
    for position, feature in enumerate(record["features"]):
        np.testing.assert_allclose(feature["layers"][0]["values"], np.asarray(outputs[-1])[0, position], atol=1e-5)
        np.testing.assert_allclose(feature["layers"][1]["values"], np.asarray(outputs[0])[0, position], atol=1e-5)
