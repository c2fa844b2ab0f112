"""The built-in ALBERT presets: official v2 configs, parameter counts (backend-insensitive: TensorFlow only)."""

import pytest

import keras_bert_app as kba
from tests.models.test_albert_encoder import albert_parameters


@pytest.mark.parametrize("name", ["albert_base", pytest.param("albert_large", marks=pytest.mark.large),
                                  pytest.param("albert_xlarge", marks=pytest.mark.large)])
def test_preset_parameter_counts(name):
    """Official v2 configs; 11.7M / 17.7M / 58.7M (the paper rounds to 12M / 18M / 60M)."""
    encoder = kba.BertEncoder.from_preset(name, load_weights=False)
    config = kba.presets.read_config(name)["encoder"]
    hidden, intermediate = config["hidden_dim"], config["intermediate_dim"]
    assert (config["vocabulary_size"], config["embedding_dim"], config["num_groups"]) == (30000, 128, 1)
    assert intermediate == 4 * hidden and config["activation"] == "gelu_approximate"
    expected = {"albert_base": 11_683_584, "albert_large": 17_683_968, "albert_xlarge": 58_724_864}[name]
    assert encoder.count_params() == albert_parameters(30000, 512, 128, hidden, intermediate, groups=1) == expected


@pytest.mark.parametrize("name", ["albert_base", "albert_large", "albert_xlarge"])
def test_preset_says_where_weights_and_sentencepiece_model_come_from(name):
    config = kba.presets.read_config(name)
    handle = {"albert_base": "albert-base-v2", "albert_large": "albert-large-v2", "albert_xlarge": "albert-xlarge-v2"}[name]
    assert config["weights"] == {"huggingface": f"hf://albert/{handle}"}
    assert config["tokenizer"] == {"type": "sentencepiece", "sentencepiece_model": "spiece.model", "lowercase": True,
                                   "strip_accents": True}
    assert config["architecture"] == "albert" and f"hf://albert/{handle}" in config["description"]
