"""ELECTRA checkpoints built in the test: HF transformers models with random weights, and the original TF layout."""

import numpy as np

from tests.convert.checkpoints import write_vocabulary

VOCABULARY = 30
SMALL = dict(vocab_size=VOCABULARY, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
             intermediate_size=64, max_position_embeddings=64)
UNFACTORIZED = {**SMALL, "embedding_size": 32}
# The generator of SMALL: a quarter as wide, same depth and embeddings (the official recipe).
GENERATOR = {**SMALL, "hidden_size": 8, "num_attention_heads": 1, "intermediate_size": 32}


def huggingface_model(architecture, seed=0, **config):
    """An HF ELECTRA model (`"ElectraModel"`, `"ElectraForPreTraining"`, `"ElectraForMaskedLM"`) with random weights.

    The weights are drawn wider than transformers' init (std 0.02) so that
    every parameter moves the outputs measurably.
    """
    import torch
    import transformers

    torch.manual_seed(seed)
    model = getattr(transformers, architecture)(transformers.ElectraConfig(**{**SMALL, **config})).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("generator_lm_head.weight"):
                continue  # tied to the word embeddings
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.2)
    return model


def save_huggingface(model, folder):
    """`save_pretrained` plus a vocab.txt of the config's size."""
    model.save_pretrained(str(folder))
    write_vocabulary(folder / "vocab.txt", model.config.vocab_size)
    return folder


def inputs():
    """Two rows: one padded, one with two segments."""
    token_ids = np.array([[2, 7, 8, 9, 3, 0, 0], [2, 10, 3, 11, 12, 13, 3]], "int32")
    segment_ids = np.array([[0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1, 1]], "int32")
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": (token_ids > 0).astype("int32")}


def run_huggingface(model, batch):
    """The transformers model's outputs on our inputs, without gradients."""
    import torch

    with torch.no_grad():
        return model(
            input_ids=torch.tensor(batch["token_ids"]).long(),
            token_type_ids=torch.tensor(batch["segment_ids"]).long(),
            attention_mask=torch.tensor(batch["padding_mask"]).long(),
            output_hidden_states=True,
        )


def original_variables(discriminator, generator):
    """`{name: array}` of an original ELECTRA pretraining checkpoint holding these two HF models.

    The names are those of google-research/electra's variable scopes: the
    pair shares `electra/embeddings/*`; the discriminator is `electra/`, the
    generator `generator/`; the heads are `discriminator_predictions/` and
    `generator_predictions/`. Kernels are stored [in, out] (TF), the
    transpose of torch's [out, in].
    """
    variables = {}

    def add_encoder(state, scope, embeddings):
        for name, value in state.items():
            if not name.startswith("electra."):
                continue
            name = name[len("electra."):]
            if name.startswith("embeddings.") and not embeddings:
                continue
            if name.startswith("embeddings."):
                target = "electra/" + _tf_name(name)
            else:
                target = f"{scope}/" + _tf_name(name)
            variables[target] = _tf_value(name, value)

    discriminator_state = {name: value.numpy() for name, value in discriminator.state_dict().items()}
    generator_state = {name: value.numpy() for name, value in generator.state_dict().items()}
    add_encoder(discriminator_state, "electra", embeddings=True)
    add_encoder(generator_state, "generator", embeddings=False)
    heads = {
        "discriminator_predictions.dense": "discriminator_predictions/dense",
        "discriminator_predictions.dense_prediction": "discriminator_predictions/dense_1",
        "generator_predictions.dense": "generator_predictions/dense",
    }
    for torch_name, tf_name in heads.items():
        state = discriminator_state if torch_name.startswith("discriminator") else generator_state
        variables[f"{tf_name}/kernel"] = state[f"{torch_name}.weight"].T.copy()
        variables[f"{tf_name}/bias"] = state[f"{torch_name}.bias"]
    variables["generator_predictions/LayerNorm/gamma"] = generator_state["generator_predictions.LayerNorm.weight"]
    variables["generator_predictions/LayerNorm/beta"] = generator_state["generator_predictions.LayerNorm.bias"]
    variables["generator_predictions/output_bias"] = generator_state["generator_lm_head.bias"]
    return variables


def _tf_name(name):
    """`encoder.layer.0.attention.self.query.weight` -> `encoder/layer_0/attention/self/query/kernel`."""
    parts = name.split(".")
    out = []
    index = 0
    while index < len(parts):
        part = parts[index]
        if part == "layer" and index + 1 < len(parts) and parts[index + 1].isdigit():
            out.append(f"layer_{parts[index + 1]}")
            index += 2
            continue
        out.append(part)
        index += 1
    leaf = out[-1]
    if out[-2] == "LayerNorm":
        out[-1] = {"weight": "gamma", "bias": "beta"}[leaf]
    elif out[-2].endswith("_embeddings"):
        out = out[:-1]  # `word_embeddings.weight` is the variable `word_embeddings`
    elif leaf == "weight":
        out[-1] = "kernel"
    return "/".join(out)


def _tf_value(name, value):
    return value.T.copy() if name.endswith(".weight") and "LayerNorm" not in name and "_embeddings" not in name else value


def write_original(folder, variables, prefix_name="electra_tiny", with_vocabulary=True):
    """An original release folder: `<prefix_name>.index/.data-*` (SaveV2, with Adam slots) + vocab.txt."""
    import tensorflow as tf

    folder.mkdir(parents=True, exist_ok=True)
    slots = {f"{name}/adam_m": np.zeros_like(value) for name, value in variables.items()}
    everything = {**variables, **slots, "global_step": np.array(1000, "int64")}
    names = sorted(everything)
    tf.raw_ops.SaveV2(
        prefix=str(folder / prefix_name),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[everything[name] for name in names],
    )
    if with_vocabulary:
        write_vocabulary(folder / "vocab.txt", variables["electra/embeddings/word_embeddings"].shape[0])
    return folder
