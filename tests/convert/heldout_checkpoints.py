"""HF task checkpoints as outside checks build them: transformers classes with random weights, odd sizes
(hidden 48, 3 heads, feed-forward 100, 40 positions) and a small vocab.txt of real words, converted with
`keras-bert-app convert`."""

import pytest

from keras_bert_app import cli

WORDS = (
    "the a cat dog sat on mat and is was big small red blue run ran quick brown fox jumps over lazy hello world "
    "good bad where who what paris london city river day night 中 国 人 大 学 , . ! ? ##s ##ing"
).split()
ODD = dict(vocab_size=100, hidden_size=48, num_hidden_layers=2, num_attention_heads=3, intermediate_size=100,
           max_position_embeddings=40, type_vocab_size=3, hidden_act="gelu_new")
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "",
    "中国人 大学 hello 中 world",
    "Where is the big red city ? " * 12,  # past the 40 positions
    "Paris, London! river?",
    " \t ",
    "x",
]


def huggingface_checkpoint(architecture, folder, seed=0, **config):
    """A transformers BERT `architecture` with random weights (drawn wide: every parameter shows), saved to `folder`
    with a vocab.txt of `ODD`'s size; returns the model (eval mode)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(seed)
    model = getattr(transformers, architecture)(transformers.BertConfig(**{**ODD, **config})).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.1)
    model.save_pretrained(str(folder))
    size = model.config.vocab_size
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    tokens += [f"token{index}" for index in range(size - len(tokens))]
    (folder / "vocab.txt").write_text("\n".join(tokens[:size]) + "\n", encoding="utf-8")
    return model


def converted(architecture, tmp_path, **config):
    """`(transformers model, our preset folder)`: the checkpoint converted through the command line (a class
    without a pooler warns that ours stays fresh)."""
    model = huggingface_checkpoint(architecture, tmp_path / "hf", **config)
    argv = ["convert", "--from", "huggingface", str(tmp_path / "hf"), "--output", str(tmp_path / "preset")]
    assert cli.main(argv) == 0
    return model, tmp_path / "preset"
