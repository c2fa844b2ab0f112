"""ELECTRA's generator: sized from the discriminator, sharing its embedding tables."""

import math
import warnings

from keras_bert_app import errors, presets
from keras_bert_app.models.bert_encoder import _CONFIG_KEYS, BertEncoder

# The `config.json` entry of an ELECTRA preset (see `ElectraPretrainer`).
CONFIG_ENTRY = "electra_pretrainer"
# The official recipe (google-research/electra `configure_pretraining.py`, ELECTRA-Small).
DEFAULT_GENERATOR_SIZE = 0.25


def generator_config(discriminator_config, generator_size=DEFAULT_GENERATOR_SIZE):
    """The config of ELECTRA's generator for a discriminator config: `generator_size` of its width.

    Hidden width, heads and feed-forward width are scaled by `generator_size`
    (at least one head); depth, vocabulary, positions and the embedding width
    E (the tables are shared) stay the discriminator's.

    Args:
        discriminator_config: dict. A `BertEncoder` config.
        generator_size: float. Fraction of the discriminator's size, > 0
            (the official small recipe: 1/4). Above 1 warns: the ELECTRA
            authors found it destabilises training.

    Returns:
        dict. A `BertEncoder` config (keyword arguments).

    Raises:
        keras_bert_app.errors.ArgumentError: a size that does not divide the
            heads (`heads * size` not whole, when at least 1) or gives a
            width that the heads do not divide.
    """
    errors.check_number("generator_size", generator_size, minimum=0, minimum_inclusive=False)
    if generator_size > 1:
        warnings.warn(
            f"generator_size {generator_size} makes the generator larger than the discriminator; the ELECTRA "
            "authors found generators 1/4 to 1/2 the discriminator's size work best and larger ones destabilise "
            "training.",
            stacklevel=2,
        )
    hidden, heads, intermediate = (
        discriminator_config["hidden_dim"], discriminator_config["num_heads"], discriminator_config["intermediate_dim"]
    )
    exact_heads = heads * generator_size
    if exact_heads >= 1 and not math.isclose(exact_heads, round(exact_heads), abs_tol=1e-6):
        raise errors.ArgumentError(
            "generator_size",
            f"generator_size {generator_size} does not divide the discriminator's {heads} attention heads "
            f"({heads} x {generator_size} = {exact_heads:g}); pick a size that gives a whole number of heads.",
        )
    generator_heads = max(1, round(exact_heads))
    exact_hidden = hidden * generator_size
    generator_hidden = round(exact_hidden)
    if not math.isclose(exact_hidden, generator_hidden, abs_tol=1e-6) or generator_hidden % generator_heads:
        raise errors.ArgumentError(
            "generator_size",
            f"generator_size {generator_size} gives a generator width of {exact_hidden:g} "
            f"(hidden_dim {hidden} x {generator_size}), not a whole multiple of its {generator_heads} head(s).",
        )
    config = {key: discriminator_config[key] for key in _CONFIG_KEYS if key in discriminator_config}
    config.update(
        hidden_dim=generator_hidden,
        num_heads=generator_heads,
        intermediate_dim=max(1, round(intermediate * generator_size)),
        embedding_dim=discriminator_config.get("embedding_dim") or hidden,
    )
    return config


def build_generator(encoder, generator, generator_size):
    """The generator: given (sharing the embeddings), built from a config, or sized from the discriminator."""
    if generator is None:
        generator = generator_config(encoder.get_config(), generator_size)
    if isinstance(generator, dict):
        config = {**generator, "embedding_dim": generator.get("embedding_dim") or generator["hidden_dim"]}
        discriminator_width = encoder.embeddings.hidden_dim
        if config["embedding_dim"] != discriminator_width:
            raise errors.ArgumentError(
                "generator",
                f"The generator's embedding width {config['embedding_dim']} differs from the discriminator's "
                f"{discriminator_width}: ELECTRA's generator and discriminator share their embedding tables.",
            )
        return BertEncoder(
            **config, shared_embeddings=encoder.embeddings, dtype=encoder.dtype_policy, name="generator"
        )
    errors.check_type("generator", generator, BertEncoder, "a BertEncoder, a BertEncoder config or None")
    if generator.embeddings is not encoder.embeddings:
        raise errors.ArgumentError(
            "generator",
            "The generator must share the discriminator's embeddings: build it with "
            "BertEncoder(..., shared_embeddings=discriminator.embeddings), or pass its config.",
        )
    return generator


def read_generator_config(preset_dir):
    """The generator config saved in an ELECTRA preset folder, or None (no `electra_pretrainer` entry)."""
    entry = presets.read_config(preset_dir).get(CONFIG_ENTRY, {})
    return entry.get("config", {}).get("generator")
