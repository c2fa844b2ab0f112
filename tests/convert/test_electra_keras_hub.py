"""keras-hub ElectraBackbone presets: in through the command line with equal outputs, and back out."""

import json

import keras
import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.convert import detect
from keras_bert_app.models.bert_encoder import BertEncoder
from tests.convert import electra_checkpoints as checkpoints
from tests.convert.checkpoints import write_vocabulary

# Tests of our models' outputs run on every backend (`all_backends`); reading and writing files, on TensorFlow.

hub = pytest.importorskip("keras_hub")


@pytest.fixture(scope="module")
def electra_preset(tmp_path_factory):
    """An ElectraBackbone with random weights (factorized: E=16, H=32), saved as a keras-hub preset."""
    folder = tmp_path_factory.mktemp("keras_hub_electra")
    vocabulary = write_vocabulary(tmp_path_factory.mktemp("vocabulary") / "vocab.txt", checkpoints.VOCABULARY)
    keras.utils.set_random_seed(0)
    backbone = hub.models.ElectraBackbone(
        vocab_size=checkpoints.VOCABULARY, num_layers=2, num_heads=2, hidden_dim=32, embedding_dim=16,
        intermediate_dim=64, max_sequence_length=64,
    )
    rng = np.random.default_rng(0)
    for variable in backbone.weights:  # wider than the default init, so every weight shows in the outputs
        variable.assign(keras.ops.convert_to_numpy(variable) + rng.normal(size=variable.shape).astype("float32") * 0.2)
    backbone.save_to_preset(str(folder))
    hub.models.ElectraTokenizer(vocabulary=str(vocabulary), lowercase=True).save_to_preset(str(folder))
    return backbone, folder


def _numpy(value):
    return np.asarray(keras.ops.convert_to_numpy(value))


@pytest.mark.all_backends
def test_converted_encoder_matches_keras_hub_and_goes_back(electra_preset, tmp_path):
    backbone, folder = electra_preset
    assert detect.detect_format(folder) == "keras_hub"
    assert cli.main(["convert", "--from", "keras-hub", str(folder), "--output", str(tmp_path / "preset")]) == 0
    config = json.loads((tmp_path / "preset" / "config.json").read_text())
    assert config["architecture"] == "electra" and config["encoder"]["embedding_dim"] == 16
    assert config["encoder"]["activation"] == "gelu_approximate"
    encoder = BertEncoder.from_preset(tmp_path / "preset")
    batch = checkpoints.inputs()
    expected, got = backbone(batch), encoder(batch)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(_numpy(got[key]), _numpy(expected[key]), atol=1e-5, err_msg=key)

    assert cli.main(["convert", "--to", "keras-hub", str(tmp_path / "preset"), "--output", str(tmp_path / "back")]) == 0
    reloaded = hub.models.ElectraBackbone.from_preset(str(tmp_path / "back"))
    before = {variable.path: _numpy(variable) for variable in backbone.weights}
    after = {variable.path: _numpy(variable) for variable in reloaded.weights}
    assert sorted(before) == sorted(after)
    for path in before:
        np.testing.assert_array_equal(after[path], before[path], err_msg=path)


def test_huggingface_electra_goes_out_to_keras_hub(tmp_path):
    """An HF discriminator converted to ours, then written for keras-hub: the same encoder outputs there."""
    pytest.importorskip("transformers")
    reference = checkpoints.huggingface_model("ElectraForPreTraining")
    source = checkpoints.save_huggingface(reference, tmp_path / "hf")
    assert cli.main(["convert", "--from", "huggingface", str(source), "--output", str(tmp_path / "preset")]) == 0
    with pytest.warns(UserWarning, match="gelu_approximate"):  # HF's exact GELU vs keras-hub's tanh
        assert cli.main(["convert", "--to", "keras-hub", str(tmp_path / "preset"), "--output", str(tmp_path / "kh")]) == 0
    backbone = hub.models.ElectraBackbone.from_preset(str(tmp_path / "kh"))
    assert backbone.embedding_dim == 16 and backbone.hidden_dim == 32
    encoder = BertEncoder.from_preset(tmp_path / "preset")
    np.testing.assert_array_equal(
        _numpy(backbone.get_layer("embeddings_projection").kernel), _numpy(encoder.embedding_projection.kernel)
    )
