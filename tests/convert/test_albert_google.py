"""Original google-research/albert checkpoints (built here from an HF model's weights): `convert --from google`."""

import json
import re
import shutil

import keras
import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.models.bert_pretrainer import BertPretrainer
from tests.convert.electra_checkpoints import inputs, run_huggingface
from tests.convert.test_albert_huggingface import TINY, VOCABULARY, _huggingface
from tests.preprocessing.sentencepiece_models import train_model

TOLERANCE = 1e-4
# HF name (after `albert.`) -> the original `modeling.py` scope, for one group's layer.
LAYER_NAMES = {
    "attention.query": "attention_1/self/query", "attention.key": "attention_1/self/key",
    "attention.value": "attention_1/self/value", "attention.dense": "attention_1/output/dense",
    "attention.LayerNorm": "LayerNorm", "ffn": "ffn_1/intermediate/dense",
    "ffn_output": "ffn_1/intermediate/output/dense", "full_layer_layer_norm": "LayerNorm_1",
}


@pytest.fixture(scope="module")
def sentencepiece_path(tmp_path_factory, shared_data):
    lines = (shared_data / "corpus" / "enwiki_sample.txt").read_text(encoding="utf-8").split("\n")[:400]
    return train_model(tmp_path_factory.mktemp("spm") / "spiece.model", lines, vocabulary_size=VOCABULARY)


def original_name(name):
    """An HF `AlbertForPreTraining` tensor name -> the original checkpoint's variable name."""
    suffix = {"weight": "kernel", "bias": "bias"}
    module, kind = name.rsplit(".", 1)
    if "LayerNorm" in module or "layer_norm" in module:
        suffix = {"weight": "gamma", "bias": "beta"}
    if module.startswith("albert.embeddings.") and "LayerNorm" not in module:
        return f"bert/embeddings/{module.split('.')[-1]}"
    layer = re.fullmatch(r"albert\.encoder\.albert_layer_groups\.(\d+)\.albert_layers\.0\.(.+)", module)
    scope = {
        "albert.embeddings.LayerNorm": "bert/embeddings/LayerNorm",
        "albert.encoder.embedding_hidden_mapping_in": "bert/encoder/embedding_hidden_mapping_in",
        "albert.pooler": "bert/pooler/dense",
        "predictions.dense": "cls/predictions/transform/dense",
        "predictions.LayerNorm": "cls/predictions/transform/LayerNorm",
        "sop_classifier.classifier": "cls/seq_relationship",
    }.get(module)
    if layer:
        scope = f"bert/encoder/transformer/group_{layer[1]}/inner_group_0/{LAYER_NAMES[layer[2]]}"
    if module == "sop_classifier.classifier":
        return f"{scope}/output_{'weights' if kind == 'weight' else 'bias'}"
    return f"{scope}/{suffix[kind]}"


def write_original(reference, folder, sentencepiece_path):
    """An ALBERT v2 release folder: albert_config.json, 30k-clean.model, model.ckpt-best.* (SaveV2, with an Adam slot)."""
    import tensorflow as tf

    folder.mkdir()
    variables = {"cls/predictions/output_bias": reference.predictions.bias.detach().numpy()}
    for name, value in reference.state_dict().items():
        if name.startswith("predictions.decoder") or name == "predictions.bias":
            continue
        value = value.detach().numpy()
        if name.endswith(".weight") and value.ndim == 2 and "embeddings" not in name and "sop_classifier" not in name:
            value = value.T  # torch [out, in] -> TF [in, out]
        variables[original_name(name)] = value
    variables["bert/encoder/embedding_hidden_mapping_in/kernel/adam_m"] = np.zeros((16, 32), "float32")
    names = sorted(variables)
    tf.raw_ops.SaveV2(prefix=str(folder / "model.ckpt-best"), tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[variables[name] for name in names])
    config = {key: TINY[key] for key in ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                                         "num_hidden_groups", "num_attention_heads", "intermediate_size",
                                         "max_position_embeddings")}
    config.update(hidden_act="gelu", type_vocab_size=2, inner_group_num=1, hidden_dropout_prob=0,
                  attention_probs_dropout_prob=0, initializer_range=0.02, net_structure_type=0, gap_size=0,
                  num_memory_blocks=0, down_scale_factor=1)
    (folder / "albert_config.json").write_text(json.dumps(config))
    shutil.copyfile(sentencepiece_path, folder / "30k-clean.model")
    return folder


def test_original_checkpoint_converts_and_matches_transformers(tmp_path, sentencepiece_path, capsys):
    reference = _huggingface("AlbertForPreTraining", tmp_path / "hf", sentencepiece_path)
    source = write_original(reference, tmp_path / "albert_base", sentencepiece_path)
    assert cli.main(["convert", "--from", "google", str(source), "--output", str(tmp_path / "preset")]) == 0
    assert "with pretraining heads" in capsys.readouterr().out
    config = json.loads((tmp_path / "preset" / "config.json").read_text())
    assert config["encoder"]["activation"] == "gelu_approximate" and config["encoder"]["num_groups"] == 1
    assert (tmp_path / "preset" / "spiece.model").read_bytes() == sentencepiece_path.read_bytes()
    pretrainer = BertPretrainer.from_preset(tmp_path / "preset")
    batch = inputs()
    real = batch["padding_mask"].astype(bool)
    expected = run_huggingface(reference, batch)
    sequence = keras.ops.convert_to_numpy(pretrainer.encoder(batch)["sequence_output"])
    np.testing.assert_allclose(sequence[real], expected.hidden_states[-1].numpy()[real], atol=TOLERANCE)
    positions = np.array([[1, 2, 3], [4, 5, 1]], "int32")
    logits = pretrainer({**batch, "mask_positions": positions})
    gathered = np.take_along_axis(expected.prediction_logits.numpy(), positions[..., None], axis=1)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(logits["mlm"]), gathered, atol=TOLERANCE)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(logits["nsp"]), expected.sop_logits.numpy(), atol=TOLERANCE)
    # The release folder is a preset as it is (format detected), and a second SentencePiece model is one clear line.
    from keras_bert_app.models.bert_encoder import BertEncoder

    direct = keras.ops.convert_to_numpy(BertEncoder.from_preset(source)(batch)["sequence_output"])
    np.testing.assert_allclose(direct[real], sequence[real], atol=1e-6)
    shutil.copyfile(sentencepiece_path, source / "other.model")
    assert cli.main(["convert", "--from", "google", str(source), "--output", str(tmp_path / "again")]) == 2
    assert "expected one SentencePiece model" in capsys.readouterr().err
