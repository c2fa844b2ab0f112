"""Tiny fake checkpoints in the foreign layouts, written with NumPy (no downloads)."""

import json

import numpy as np

TINY = {"vocab_size": 30, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 32, "max_position_embeddings": 64, "type_vocab_size": 2}


def write_vocabulary(path, size):
    """A vocab.txt of `size` tokens: the BERT specials then lowercase words."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens = specials + [f"word{index}" for index in range(size - len(specials))]
    path.write_text("\n".join(tokens[:size]) + "\n", encoding="utf-8")
    return path


def huggingface_tensors(config, prefix="", heads=False, seed=0):
    """`{name: float32 array}` in the HF BertModel / BertForPreTraining layout."""
    rng = np.random.default_rng(seed)
    hidden, inner = config["hidden_size"], config["intermediate_size"]

    def normal(*shape):
        return rng.normal(size=shape).astype("float32") * 0.2

    tensors = {
        "embeddings.word_embeddings.weight": normal(config["vocab_size"], hidden),
        "embeddings.position_embeddings.weight": normal(config["max_position_embeddings"], hidden),
        "embeddings.token_type_embeddings.weight": normal(config["type_vocab_size"], hidden),
        "embeddings.LayerNorm.weight": 1 + normal(hidden),
        "embeddings.LayerNorm.bias": normal(hidden),
        "pooler.dense.weight": normal(hidden, hidden),
        "pooler.dense.bias": normal(hidden),
    }
    for index in range(config["num_hidden_layers"]):
        layer = f"encoder.layer.{index}"
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            tensors[f"{layer}.{name}.weight"] = normal(hidden, hidden)
            tensors[f"{layer}.{name}.bias"] = normal(hidden)
        tensors[f"{layer}.intermediate.dense.weight"] = normal(inner, hidden)
        tensors[f"{layer}.intermediate.dense.bias"] = normal(inner)
        tensors[f"{layer}.output.dense.weight"] = normal(hidden, inner)
        tensors[f"{layer}.output.dense.bias"] = normal(hidden)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[f"{layer}.{name}.weight"] = 1 + normal(hidden)
            tensors[f"{layer}.{name}.bias"] = normal(hidden)
    tensors = {prefix + name: value for name, value in tensors.items()}
    if heads:
        tensors.update({
            "cls.predictions.transform.dense.weight": normal(hidden, hidden),
            "cls.predictions.transform.dense.bias": normal(hidden),
            "cls.predictions.transform.LayerNorm.weight": 1 + normal(hidden),
            "cls.predictions.transform.LayerNorm.bias": normal(hidden),
            "cls.predictions.bias": normal(config["vocab_size"]),
            "cls.seq_relationship.weight": normal(2, hidden),
            "cls.seq_relationship.bias": normal(2),
        })
    return tensors


def write_huggingface(folder, config=None, tensors=None, architecture="BertModel", vocabulary_size=None, **config_overrides):
    """An HF checkpoint folder: config.json + model.safetensors + vocab.txt."""
    from safetensors.numpy import save_file

    config = {**TINY, **(config or {})}
    folder.mkdir(parents=True, exist_ok=True)
    tensors = huggingface_tensors(config) if tensors is None else tensors
    save_file(tensors, str(folder / "model.safetensors"))
    hf_config = {"architectures": [architecture], "model_type": "bert", "hidden_act": "gelu",
                 "layer_norm_eps": 1e-12, **config, **config_overrides}
    (folder / "config.json").write_text(json.dumps(hf_config), encoding="utf-8")
    write_vocabulary(folder / "vocab.txt", vocabulary_size or config["vocab_size"])
    return folder
