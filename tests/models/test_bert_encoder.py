import json

import keras
import numpy as np
import pytest

import keras_bert_app as kba
from keras_bert_app import presets
from tests.model_battery import assert_close, run_model_battery

pytestmark = pytest.mark.all_backends

TINY = dict(vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=64)


# The tests reuse a few input shapes ((4, 12) and (4, 5) of the battery, (3, 9)): JAX compiles each eager op
# once per shape, a few seconds for a new one.
def make_inputs(batch=4, seq=12, vocabulary_size=100, seed=0):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1, vocabulary_size, size=(batch, seq)).astype("int32")
    lengths = rng.integers(3, seq + 1, size=batch)
    padding_mask = (np.arange(seq)[None, :] < lengths[:, None]).astype("int32")
    token_ids = token_ids * padding_mask
    segment_ids = ((np.arange(seq)[None, :] >= lengths[:, None] // 2) * padding_mask).astype("int32")
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def test_battery(tmp_path):
    run_model_battery(
        lambda: kba.BertEncoder(**TINY),
        make_inputs(),
        loss_output="pooled_output",
        tmp_path=tmp_path,
        variable_length_inputs=[make_inputs(seq=5), make_inputs(seq=64)],
    )


def test_output_structure():
    encoder = kba.BertEncoder(**TINY)
    outputs = encoder(make_inputs(batch=3, seq=9, seed=2))
    assert tuple(outputs["sequence_output"].shape) == (3, 9, 16)
    assert tuple(outputs["pooled_output"].shape) == (3, 16)
    assert len(outputs["encoder_outputs"]) == 2
    assert_close(outputs["encoder_outputs"][-1], outputs["sequence_output"], atol=0)


def test_padding_does_not_change_real_tokens():
    """Padded keys are masked: adding padding leaves the real positions unchanged."""
    encoder = kba.BertEncoder(**TINY)
    short = make_inputs(batch=4, seq=5, seed=3)
    short = {k: np.ones_like(v) if k == "padding_mask" else v for k, v in short.items()}
    short["token_ids"] = np.maximum(short["token_ids"], 1)
    padded = {k: np.pad(v, ((0, 0), (0, 7))) for k, v in short.items()}
    out_short = encoder(short)
    out_padded = encoder(padded)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(out_padded["sequence_output"])[:, :5],
        keras.ops.convert_to_numpy(out_short["sequence_output"]),
        atol=1e-5,
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(out_padded["pooled_output"]),
        keras.ops.convert_to_numpy(out_short["pooled_output"]),
        atol=1e-5,
    )


def numpy_bert_forward(encoder, inputs, approximate_gelu=False):
    """The BERT equations in NumPy, reading the encoder's own weights."""
    from math import erf, sqrt, pi

    w = {v.path: keras.ops.convert_to_numpy(v) for v in encoder.weights}

    def layer_norm(x, prefix):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * w[prefix + "/gamma"] + w[prefix + "/beta"]

    def gelu(x):
        if approximate_gelu:
            return 0.5 * x * (1 + np.tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))
        return 0.5 * x * (1 + np.vectorize(erf)(x / sqrt(2)))

    ids, seg, mask = (inputs[k] for k in ("token_ids", "segment_ids", "padding_mask"))
    seq = ids.shape[1]
    x = (
        w["embeddings/token_embedding/embeddings"][ids]
        + w["embeddings/segment_embedding/embeddings"][seg]
        + w["embeddings/position_embeddings"][:seq][None]
    )
    x = layer_norm(x, "embeddings/layer_norm")
    layers = []
    for i in range(encoder.num_layers):
        p = f"transformer_layer_{i}/"
        H = x.shape[-1]
        heads = encoder.num_heads
        d = H // heads

        def proj(name):
            kernel = w[p + f"attention/{name}/kernel"].reshape(H, H)
            bias = w[p + f"attention/{name}/bias"].reshape(H)
            return (x @ kernel + bias).reshape(x.shape[0], seq, heads, d).transpose(0, 2, 1, 3)

        q, k, v = proj("query"), proj("key"), proj("value")
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + (1 - mask[:, None, None, :]) * -1e9
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(x.shape[0], seq, H)
        attended = context @ w[p + "attention/attention_output/kernel"].reshape(H, H) + w[p + "attention/attention_output/bias"]
        x = layer_norm(x + attended, p + "attention_layer_norm")
        ff = gelu(x @ w[p + "intermediate/kernel"] + w[p + "intermediate/bias"])
        ff = ff @ w[p + "output/kernel"] + w[p + "output/bias"]
        x = layer_norm(x + ff, p + "output_layer_norm")
        layers.append(x)
    pooled = np.tanh(x[:, 0] @ w["pooler/kernel"] + w["pooler/bias"])
    return {"sequence_output": x, "pooled_output": pooled, "encoder_outputs": layers}


@pytest.mark.parametrize("activation", ["gelu", "gelu_approximate"])
def test_matches_numpy_reference(activation):
    encoder = kba.BertEncoder(**TINY, activation=activation)
    inputs = make_inputs(batch=3, seq=9, seed=1)
    expected = numpy_bert_forward(encoder, inputs, approximate_gelu=activation == "gelu_approximate")
    actual = keras.tree.map_structure(keras.ops.convert_to_numpy, encoder(inputs))
    assert_close(actual, expected, atol=1e-5)


@pytest.fixture
def fused_calls(monkeypatch):
    """Counts calls of keras.ops.dot_product_attention (the fused path)."""
    calls = []
    original = keras.ops.dot_product_attention

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(keras.ops, "dot_product_attention", counting)
    return calls


def test_fused_attention_matches_numpy_reference(fused_calls):
    encoder = kba.BertEncoder(**TINY, fused_attention=True)
    inputs = make_inputs(batch=3, seq=9, seed=1)  # padded rows included
    actual = keras.tree.map_structure(keras.ops.convert_to_numpy, encoder(inputs))
    # One fused call per layer, none skipped, and one more for the last layer's [CLS] output computed apart.
    assert len(fused_calls) == TINY["num_layers"] + 1
    assert_close(actual, numpy_bert_forward(encoder, inputs), atol=1e-5)


def test_fused_attention_training_keeps_attention_dropout(fused_calls):
    """A fused kernel has no dropout: training with attention dropout takes the explicit path."""
    inputs = make_inputs(batch=3, seq=9, seed=2)
    encoder = kba.BertEncoder(**TINY, fused_attention=True, dropout=0.5)
    encoder(inputs, training=True)
    assert fused_calls == []
    explicit = kba.BertEncoder(**TINY, dropout=0.0)
    fused = kba.BertEncoder(**TINY, dropout=0.0, fused_attention=True)
    fused.set_weights(explicit.get_weights())
    assert_close(
        keras.tree.map_structure(keras.ops.convert_to_numpy, fused(inputs, training=True)),
        keras.tree.map_structure(keras.ops.convert_to_numpy, explicit(inputs, training=True)),
        atol=1e-5,
    )
    assert len(fused_calls) == TINY["num_layers"] + 1  # the last layer's [CLS] output apart too


@pytest.mark.skipif(keras.config.backend() != "jax", reason="a JAX-only guard")
def test_fused_attention_avoids_keras_tpu_splash_kernel(monkeypatch):
    """On a TPU, Keras' splash kernel would apply the first example's padding to the whole batch."""
    import jax

    settings = []
    original = keras.ops.dot_product_attention

    def recording(*args, **kwargs):
        settings.append(kwargs.get("flash_attention"))
        return original(*args, **{**kwargs, "flash_attention": None})  # run it on this CPU

    monkeypatch.setattr(keras.ops, "dot_product_attention", recording)
    encoder = kba.BertEncoder(**TINY, fused_attention=True)
    inputs = make_inputs(batch=3, seq=9)
    encoder(inputs)
    assert settings and all(setting is None for setting in settings)  # elsewhere the backend decides
    settings.clear()
    tpu = type("Device", (), {"platform": "tpu"})()
    monkeypatch.setattr(jax, "devices", lambda *args: [tpu])
    encoder(inputs)
    assert settings == [False] * (TINY["num_layers"] + 1)  # the last layer's [CLS] output apart too

def test_fused_attention_is_an_execution_option(tmp_path):
    """It survives get_config/from_config but is not written into a preset."""
    encoder = kba.BertEncoder(**TINY, fused_attention=True)
    assert kba.BertEncoder.from_config(encoder.get_config()).fused_attention is True
    assert encoder.transformer_layers[0].attention.fused is True
    folder = encoder.save_to_preset(tmp_path / "preset")
    assert "fused_attention" not in json.loads((folder / "config.json").read_text())["encoder"]
    assert kba.BertEncoder.from_preset(str(folder)).fused_attention is False
    assert kba.BertEncoder.from_preset(str(folder), fused_attention=True).fused_attention is True

def test_tiny_preset_parameter_count():
    encoder = kba.BertEncoder.from_preset("bert_tiny_uncased", load_weights=False)
    assert encoder.count_params() == 4_385_920


@pytest.mark.large
@pytest.mark.parametrize(
    "name, expected",
    [
        ("bert_base_uncased", 109_482_240),
        ("bert_large_uncased", 335_141_888),
        ("bert_base_cased", 108_310_272),
        ("bert_base_chinese", 102_267_648),
    ],
)
def test_preset_parameter_counts(name, expected):
    encoder = kba.BertEncoder.from_preset(name, load_weights=False)
    assert encoder.count_params() == expected


def test_save_to_preset_round_trip(tmp_path):
    encoder = kba.BertEncoder(**TINY)
    inputs = make_inputs()
    folder = tmp_path / "preset"
    encoder.save_to_preset(folder)
    assert json.loads((folder / "config.json").read_text())["encoder"]["hidden_dim"] == 16
    restored = kba.BertEncoder.from_preset(str(folder))
    assert_close(
        keras.tree.map_structure(keras.ops.convert_to_numpy, restored(inputs)),
        keras.tree.map_structure(keras.ops.convert_to_numpy, encoder(inputs)),
        atol=0,
    )


def test_missing_weights_error_says_where_to_get_them(monkeypatch, tmp_path):
    from keras_bert_app.convert import hub

    def offline(handle, cache_dir=None):
        raise OSError("no network")

    monkeypatch.setattr(hub, "download", offline)
    monkeypatch.setenv("KERAS_BERT_APP_CACHE", str(tmp_path))
    with pytest.raises(presets.PresetError, match="hf://google-bert/bert-base-uncased"):
        kba.BertEncoder.from_preset("bert_base_uncased")


def test_unknown_preset():
    with pytest.raises(presets.PresetError, match="Unknown preset 'bert_huge'.*bert_tiny_uncased"):
        kba.BertEncoder.from_preset("bert_huge", load_weights=False)


def test_malformed_preset_folders(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(presets.PresetError, match="has no config.json"):
        kba.BertEncoder.from_preset(str(empty))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    with pytest.raises(presets.PresetError, match="malformed JSON"):
        kba.BertEncoder.from_preset(str(broken))
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "config.json").write_text(json.dumps({"encoder": {"vocabulary_size": 10}}))
    with pytest.raises(presets.PresetError, match="missing.*num_layers"):
        kba.BertEncoder.from_preset(str(partial))


def test_bad_inputs():
    encoder = kba.BertEncoder(**TINY)
    inputs = make_inputs(seq=8)
    with pytest.raises(ValueError, match="padding_mask.*mask"):
        encoder({"token_ids": inputs["token_ids"], "segment_ids": inputs["segment_ids"], "mask": inputs["padding_mask"]})
    too_long = make_inputs(seq=65)
    with pytest.raises(ValueError, match="sequence length 65, longer than max_sequence_length=64"):
        encoder(too_long)
    bad_segments = dict(inputs, segment_ids=np.full_like(inputs["segment_ids"], 2))
    with pytest.raises(ValueError, match="'segment_ids' must be in \\[0, 2\\); got values in \\[2, 2\\]"):
        encoder(bad_segments)
