"""Original Google BERT checkpoints: a synthetic release folder against a NumPy forward pass."""

import json
import math

import numpy as np
import pytest

from keras_bert_app.convert import checkpoint, detect, google
from keras_bert_app.convert.weight_map import ConversionError
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_pretrainer import BertPretrainer
from tests.convert.checkpoints import write_vocabulary

VOCABULARY, HIDDEN, LAYERS, HEADS, INNER, POSITIONS = 30, 16, 2, 2, 32, 64


def original_variables(seed=0):
    """`{name: array}` with the variable names and shapes of google-research/bert."""
    rng = np.random.default_rng(seed)

    def normal(*shape):
        return rng.normal(size=shape).astype("float32") * 0.2

    variables = {
        "bert/embeddings/word_embeddings": normal(VOCABULARY, HIDDEN),
        "bert/embeddings/token_type_embeddings": normal(2, HIDDEN),
        "bert/embeddings/position_embeddings": normal(POSITIONS, HIDDEN),
        "bert/embeddings/LayerNorm/gamma": 1 + normal(HIDDEN),
        "bert/embeddings/LayerNorm/beta": normal(HIDDEN),
        "bert/pooler/dense/kernel": normal(HIDDEN, HIDDEN),
        "bert/pooler/dense/bias": normal(HIDDEN),
        "cls/predictions/transform/dense/kernel": normal(HIDDEN, HIDDEN),
        "cls/predictions/transform/dense/bias": normal(HIDDEN),
        "cls/predictions/transform/LayerNorm/gamma": 1 + normal(HIDDEN),
        "cls/predictions/transform/LayerNorm/beta": normal(HIDDEN),
        "cls/predictions/output_bias": normal(VOCABULARY),
        "cls/seq_relationship/output_weights": normal(2, HIDDEN),
        "cls/seq_relationship/output_bias": normal(2),
    }
    for index in range(LAYERS):
        layer = f"bert/encoder/layer_{index}"
        for name in ("attention/self/query", "attention/self/key", "attention/self/value", "attention/output/dense"):
            variables[f"{layer}/{name}/kernel"] = normal(HIDDEN, HIDDEN)
            variables[f"{layer}/{name}/bias"] = normal(HIDDEN)
        variables[f"{layer}/intermediate/dense/kernel"] = normal(HIDDEN, INNER)
        variables[f"{layer}/intermediate/dense/bias"] = normal(INNER)
        variables[f"{layer}/output/dense/kernel"] = normal(INNER, HIDDEN)
        variables[f"{layer}/output/dense/bias"] = normal(HIDDEN)
        for name in ("attention/output/LayerNorm", "output/LayerNorm"):
            variables[f"{layer}/{name}/gamma"] = 1 + normal(HIDDEN)
            variables[f"{layer}/{name}/beta"] = normal(HIDDEN)
    return variables


def write_release(folder, variables, **config_overrides):
    """bert_config.json + vocab.txt + bert_model.ckpt (name-keyed, via SaveV2), with Adam slots."""
    import tensorflow as tf

    folder.mkdir(parents=True, exist_ok=True)
    config = {"vocab_size": VOCABULARY, "hidden_size": HIDDEN, "num_hidden_layers": LAYERS,
              "num_attention_heads": HEADS, "intermediate_size": INNER, "hidden_act": "gelu",
              "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
              "max_position_embeddings": POSITIONS, "type_vocab_size": 2, "initializer_range": 0.02,
              **config_overrides}
    (folder / "bert_config.json").write_text(json.dumps(config))
    write_vocabulary(folder / "vocab.txt", VOCABULARY)
    slots = {f"{name}/adam_m": np.zeros_like(value) for name, value in variables.items()}
    everything = {**variables, **slots, "global_step": np.array(1000, "int64")}
    names = sorted(everything)
    tf.raw_ops.SaveV2(
        prefix=str(folder / "bert_model.ckpt"),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[everything[name] for name in names],
    )
    return folder


def reference_forward(v, token_ids, segment_ids, padding_mask, mask_positions):
    """The original modeling.py equations in NumPy (tanh GELU, -10000 attention mask)."""

    def layer_norm(x, name):
        mean = x.mean(-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(variance + 1e-12) * v[f"{name}/gamma"] + v[f"{name}/beta"]

    def dense(x, name):
        return x @ v[f"{name}/kernel"] + v[f"{name}/bias"]

    def gelu(x):
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))

    batch, length = token_ids.shape
    head_dim = HIDDEN // HEADS
    x = (v["bert/embeddings/word_embeddings"][token_ids] + v["bert/embeddings/token_type_embeddings"][segment_ids]
         + v["bert/embeddings/position_embeddings"][:length])
    x = layer_norm(x, "bert/embeddings/LayerNorm")
    adder = (1.0 - padding_mask[:, None, None, :]) * -10000.0
    for index in range(LAYERS):
        layer = f"bert/encoder/layer_{index}"

        def heads(name):
            return dense(x, f"{layer}/attention/self/{name}").reshape(batch, length, HEADS, head_dim).transpose(0, 2, 1, 3)

        scores = heads("query") @ heads("key").transpose(0, 1, 3, 2) / math.sqrt(head_dim) + adder
        probabilities = np.exp(scores - scores.max(-1, keepdims=True))
        probabilities /= probabilities.sum(-1, keepdims=True)
        context = (probabilities @ heads("value")).transpose(0, 2, 1, 3).reshape(batch, length, HIDDEN)
        x = layer_norm(dense(context, f"{layer}/attention/output/dense") + x, f"{layer}/attention/output/LayerNorm")
        inner = gelu(dense(x, f"{layer}/intermediate/dense"))
        x = layer_norm(dense(inner, f"{layer}/output/dense") + x, f"{layer}/output/LayerNorm")
    pooled = np.tanh(dense(x[:, 0], "bert/pooler/dense"))
    masked = np.take_along_axis(x, mask_positions[..., None], axis=1)
    transformed = layer_norm(gelu(dense(masked, "cls/predictions/transform/dense")), "cls/predictions/transform/LayerNorm")
    mlm = transformed @ v["bert/embeddings/word_embeddings"].T + v["cls/predictions/output_bias"]
    nsp = pooled @ v["cls/seq_relationship/output_weights"].T + v["cls/seq_relationship/output_bias"]
    return x, pooled, mlm, nsp


def test_release_folder_matches_the_original_equations(tmp_path):
    variables = original_variables()
    folder = write_release(tmp_path / "uncased_L-2_H-16_A-2", variables)
    assert detect.detect_format(folder) == "google"
    config = detect.read_config(folder)
    assert config["encoder"]["activation"] == "gelu_approximate"
    assert config["tokenizer"]["lowercase"] is True
    pretrainer = BertPretrainer(BertEncoder(**config["encoder"]))
    assert google.load_weights(pretrainer, folder) is True

    token_ids = np.array([[2, 7, 8, 9, 3, 0, 0], [2, 10, 3, 11, 12, 13, 3]], "int32")
    segment_ids = np.array([[0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1, 1]], "int32")
    padding_mask = (token_ids > 0).astype("int32")
    positions = np.array([[1, 3], [2, 5]], "int32")
    inputs = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
    outputs = pretrainer({**inputs, "mask_positions": positions})
    encoded = pretrainer.encoder(inputs)
    sequence, pooled, mlm, nsp = reference_forward(variables, token_ids, segment_ids, padding_mask.astype("float32"), positions)
    real = padding_mask.astype(bool)
    np.testing.assert_allclose(np.asarray(encoded["sequence_output"])[real], sequence[real], atol=1e-5)
    np.testing.assert_allclose(np.asarray(encoded["pooled_output"]), pooled, atol=1e-5)
    np.testing.assert_allclose(np.asarray(outputs["mlm"]), mlm, atol=1e-4)
    np.testing.assert_allclose(np.asarray(outputs["nsp"]), nsp, atol=1e-5)


def test_encoder_only_and_preset_conversion(tmp_path):
    variables = original_variables()
    folder = write_release(tmp_path / "release", variables)
    encoder = BertEncoder(**google.read_config(folder)["encoder"])
    assert google.load_weights(encoder, folder) is False
    np.testing.assert_array_equal(
        encoder.transformer_layers[1].attention.query_dense.kernel.numpy(),
        variables["bert/encoder/layer_1/attention/self/query/kernel"].reshape(HIDDEN, HEADS, HIDDEN // HEADS),
    )
    output, heads = checkpoint.import_checkpoint(folder, tmp_path / "preset")
    assert heads and (output / "pretrainer.weights.h5").is_file()

    reloaded = BertEncoder.from_preset(output)
    np.testing.assert_array_equal(
        reloaded.embeddings.position_embeddings.numpy(), variables["bert/embeddings/position_embeddings"]
    )
    heads = BertPretrainer.from_preset(output)  # pretrainer.weights.h5: Keras' format, the encoder skipped
    np.testing.assert_array_equal(heads.masked_lm_head.output_bias.numpy(), variables["cls/predictions/output_bias"])
    np.testing.assert_array_equal(
        heads.next_sentence_head.dense.kernel.numpy(), variables["cls/seq_relationship/output_weights"].T
    )


def test_bad_tensors_are_named(tmp_path):
    variables = original_variables()
    variables["bert/encoder/layer_0/output/dense/kernel"] = np.zeros((INNER, HIDDEN + 1), "float32")
    folder = write_release(tmp_path / "bad", variables)
    with pytest.raises(ConversionError, match=r"'bert/encoder/layer_0/output/dense/kernel' has shape \(32, 17\); expected \(32, 16\)"):
        google.load_weights(BertEncoder(**google.read_config(folder)["encoder"]), folder)
    del variables["bert/encoder/layer_0/output/dense/kernel"]
    folder = write_release(tmp_path / "missing", variables)
    with pytest.raises(ConversionError, match=r"missing tensor 'bert/encoder/layer_0/output/dense/kernel'"):
        google.load_weights(BertEncoder(**google.read_config(folder)["encoder"]), folder)


def test_release_through_our_preset_to_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    variables = original_variables(seed=1)
    preset, heads = checkpoint.import_checkpoint(write_release(tmp_path / "release", variables), tmp_path / "preset")
    assert heads
    reloaded = BertPretrainer.from_preset(preset)
    np.testing.assert_array_equal(reloaded.masked_lm_head.output_bias.numpy(), variables["cls/predictions/output_bias"])
    checkpoint.export_preset(preset, tmp_path / "hf", "huggingface")
    model = transformers.BertForPreTraining.from_pretrained(str(tmp_path / "hf")).eval()
    token_ids = np.array([[2, 7, 8, 9, 3, 0], [2, 10, 3, 11, 12, 3]])
    segment_ids = np.array([[0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1]])
    padding_mask = (token_ids > 0).astype("int64")
    with torch.no_grad():
        got = model(input_ids=torch.tensor(token_ids), token_type_ids=torch.tensor(segment_ids),
                    attention_mask=torch.tensor(padding_mask))
    positions = np.array([[1, 2], [4, 5]])
    _, _, mlm, nsp = reference_forward(variables, token_ids, segment_ids, padding_mask.astype("float32"), positions)
    np.testing.assert_allclose(np.take_along_axis(got.prediction_logits.numpy(), positions[..., None], axis=1), mlm, atol=1e-4)
    np.testing.assert_allclose(got.seq_relationship_logits.numpy(), nsp, atol=1e-5)
