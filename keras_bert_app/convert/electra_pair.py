"""An ELECTRA discriminator and generator, converted, as one `ElectraPretrainer` preset (`convert_checkpoint`'s pairs)."""

import warnings

from keras_bert_app import presets
from keras_bert_app.convert import weight_map

# A `BertEncoder`'s architecture arguments (its config without name, dtype and execution choices).
ENCODER_KEYS = (*presets.REQUIRED_ENCODER_KEYS, "dropout", "max_sequence_length", "num_segments", "activation",
                "layer_norm_epsilon", "initializer_range", "embedding_dim", "num_groups")


def save_pair(discriminator, masked_lm, output):
    """Write an `ElectraPretrainer` preset from a converted discriminator and generator.

    The pair shares the discriminator's embedding tables; a generator
    checkpoint with tables of other values (HF folders keep a copy each)
    warns, as those values are dropped.
    """
    import keras
    import numpy as np

    from keras_bert_app.models.electra_pretrainer import ElectraPretrainer

    shared = discriminator.encoder.embeddings.weights
    copies = masked_lm.encoder.embeddings.weights
    if any(not np.allclose(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b), atol=1e-6)
           for a, b in zip(shared, copies)):
        warnings.warn(
            "The generator's embedding tables differ from the discriminator's; the pair shares the "
            "discriminator's (ELECTRA trains one set), so the generator's copy is not kept.",
            stacklevel=5,
        )
    generator_config = {key: value for key, value in masked_lm.encoder.get_config().items() if key in ENCODER_KEYS}
    pretrainer = ElectraPretrainer(discriminator.encoder, generator=generator_config)
    skipped = {id(variable) for variable in shared}
    pairs = ((pretrainer.generator, masked_lm.encoder), (pretrainer.generator_head, masked_lm.masked_lm_head))
    for ours, converted in pairs:
        for target, value in zip(ours.weights, converted.weights):
            if id(target) not in skipped:
                target.assign(value)
    pretrainer.discriminator_head.set_weights(discriminator.discriminator_head.get_weights())
    pretrainer.save_to_preset(output)
    discriminator.save_to_preset(output)  # discriminator.weights.h5: ElectraDiscriminator.from_preset


def check_pair(discriminator, generator, generator_path):
    """A generator that can share the discriminator's embeddings; `DataError` naming the field otherwise."""
    from keras_bert_app.convert import huggingface

    path = (generator_path.parent if generator_path.is_file() else generator_path) / huggingface.CONFIG_FILE
    if generator.get("checkpoint_architecture") != huggingface.GENERATOR_ARCHITECTURE:
        raise weight_map.ConversionError(
            f"{path}: field 'architectures' is [{generator.get('checkpoint_architecture')!r}]; expected "
            f"[{huggingface.GENERATOR_ARCHITECTURE!r}] for the generator of an ELECTRA pair."
        )
    fields = {"embedding_size": ("embedding_dim", "hidden_dim"), "vocab_size": ("vocabulary_size", None),
              "max_position_embeddings": ("max_sequence_length", None), "type_vocab_size": ("num_segments", None)}
    for field, (key, fallback) in fields.items():
        ours, theirs = discriminator["encoder"], generator["encoder"]
        got = theirs.get(key, theirs.get(fallback))
        expected = ours.get(key, ours.get(fallback))
        if got != expected:
            raise weight_map.ConversionError(
                f"{path}: field {field!r} is {got}; expected {expected}, the discriminator's: "
                "generator and discriminator share their embedding tables."
            )
