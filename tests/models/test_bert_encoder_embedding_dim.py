"""`BertEncoder(embedding_dim=E)`: factorized embeddings with a projection to H, and shared embedding tables."""

import numpy as np
import pytest

import keras_bert_app as kba
from keras_bert_app import errors, presets
from keras_bert_app.convert import weight_map
from keras_bert_app.convert.huggingface import encoder_mappings
from tests.model_battery import assert_close

pytestmark = pytest.mark.all_backends

TINY = dict(vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=32, intermediate_dim=64, max_sequence_length=64)


def make_inputs(batch=3, seq=10, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, seq + 1, size=batch)
    padding_mask = (np.arange(seq)[None, :] < lengths[:, None]).astype("int32")
    token_ids = rng.integers(1, 100, size=(batch, seq)).astype("int32") * padding_mask
    segment_ids = ((np.arange(seq)[None, :] >= lengths[:, None] // 2) * padding_mask).astype("int32")
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def test_default_is_bert_unchanged():
    """No embedding_dim: no projection, the same parameter count and config keys as before."""
    encoder = kba.BertEncoder(**TINY)
    assert encoder.embedding_projection is None
    assert "embedding_dim" not in encoder.get_config()
    v, h, i, length = 100, 32, 64, 64
    layer = 4 * h * h + 4 * h + 2 * h * i + i + h + 4 * h
    assert encoder.count_params() == (v + length + 2) * h + 2 * h + 2 * layer + h * h + h
    # Given explicitly as H: still no projection (as HF's ELECTRA-Base).
    assert kba.BertEncoder(**TINY, embedding_dim=32).embedding_projection is None


def test_projection_shapes_and_parameter_count():
    encoder = kba.BertEncoder(**TINY, embedding_dim=16)
    assert tuple(encoder.token_embedding.embeddings.shape) == (100, 16)
    assert tuple(encoder.embeddings.position_embeddings.shape) == (64, 16)
    assert tuple(encoder.embedding_projection.kernel.shape) == (16, 32)
    assert tuple(encoder.embedding_projection.bias.shape) == (32,)
    bert = kba.BertEncoder(**TINY)
    # Tables shrink from H to E wide, the projection adds E*H + H.
    assert encoder.count_params() == bert.count_params() - (100 + 64 + 2) * 16 - 2 * 16 + 16 * 32 + 32
    outputs = encoder(make_inputs())
    assert tuple(outputs["sequence_output"].shape) == (3, 10, 32)


def test_matches_transformers_electra_model():
    """Sequence output equals HF `ElectraModel` (embeddings -> LayerNorm -> dropout -> embeddings_project)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.ElectraConfig(
        vocab_size=100, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64, hidden_act="gelu", layer_norm_eps=1e-12,
    )
    torch.manual_seed(0)
    reference = transformers.ElectraModel(config).eval()
    with torch.no_grad():  # non-trivial LayerNorms and biases
        for name, parameter in reference.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                parameter.add_(0.1 * torch.randn_like(parameter))
    tensors = {name: value.numpy() for name, value in reference.state_dict().items()}
    encoder = kba.BertEncoder(**TINY, embedding_dim=16, dropout=0.0)
    mappings = [m for m in encoder_mappings(2, "") if not m.source.startswith("pooler.")]
    mappings.append(weight_map.Mapping("embeddings_project.weight", "embedding_projection/kernel", weight_map.TRANSPOSED))
    mappings.append(weight_map.Mapping("embeddings_project.bias", "embedding_projection/bias", weight_map.SAME))
    weight_map.load_mapped(encoder, mappings, tensors.get, "test")
    inputs = make_inputs()
    with torch.no_grad():
        expected = reference(
            input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
            token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long),
            attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long),
        ).last_hidden_state.numpy()
    got = encoder(inputs)["sequence_output"]
    real = inputs["padding_mask"].astype(bool)
    assert_close(_numpy(got)[real], expected[real], atol=1e-4)


def _numpy(tensor):
    from keras import ops

    return ops.convert_to_numpy(tensor)


def test_preset_round_trip(tmp_path):
    encoder = kba.BertEncoder(**TINY, embedding_dim=16)
    encoder.save_to_preset(tmp_path)
    assert presets.read_config(tmp_path)["encoder"]["embedding_dim"] == 16
    restored = kba.BertEncoder.from_preset(str(tmp_path))
    inputs = make_inputs()
    assert_close(restored(inputs)["sequence_output"], encoder(inputs)["sequence_output"], atol=1e-6)
    assert restored.count_params() == encoder.count_params()


def test_shared_embeddings():
    """A smaller encoder built on another's embeddings uses the same variables, with its own projection."""
    discriminator = kba.BertEncoder(**TINY, embedding_dim=16)
    generator = kba.BertEncoder(
        **{**TINY, "num_heads": 1, "hidden_dim": 8, "intermediate_dim": 16},
        embedding_dim=16, shared_embeddings=discriminator.embeddings,
    )
    assert generator.embeddings is discriminator.embeddings
    assert generator.token_embedding.embeddings is discriminator.token_embedding.embeddings
    assert tuple(generator.embedding_projection.kernel.shape) == (16, 8)
    outputs = generator(make_inputs())
    assert tuple(outputs["sequence_output"].shape) == (3, 10, 8)
    # Changing the shared table changes both models.
    discriminator.token_embedding.embeddings.assign(np.zeros((100, 16), "float32"))
    assert not np.any(_numpy(generator.token_embedding.embeddings))


def test_bad_arguments():
    with pytest.raises(errors.ArgumentError, match="embedding_dim"):
        kba.BertEncoder(**TINY, embedding_dim=0)
    discriminator = kba.BertEncoder(**TINY, embedding_dim=16)
    with pytest.raises(errors.ArgumentError, match="embedding_dim 16 there, 8 here"):
        kba.BertEncoder(**TINY, embedding_dim=8, shared_embeddings=discriminator.embeddings)
    with pytest.raises(errors.ArgumentTypeError, match="BertEmbeddings"):
        kba.BertEncoder(**TINY, shared_embeddings=discriminator.token_embedding)
