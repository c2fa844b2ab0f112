"""ELECTRA's corruption step: sample the generator's tokens into the masked positions."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_app")
class ReplacedTokenSampler(keras.layers.Layer):
    """Samples one token per masked position from the generator and writes it into the sequence.

    Gumbel-max sampling (an exact draw from `softmax(logits / temperature)`)
    with `keras.random` and a `SeedGenerator` whose state is saved with the
    weights (checkpoints resume the same draws). No gradient flows from the
    discriminator into the generator (Clark et al. 2020, section 2).
    Prediction slots at position 0 (`[CLS]`, never masked) are padding and
    write nothing.

    Args:
        temperature: float. Softmax temperature of the draw (1.0 in ELECTRA).
        seed: int or None. Seed of the `SeedGenerator`.

    Call args:
        logits: float [batch, max_predictions, vocabulary_size]: the
            generator's masked-LM logits.
        token_ids: int [batch, seq]: the generator's (masked) input.
        mask_positions: int [batch, max_predictions].

    Returns:
        `(sampled_ids, corrupted_ids)`: int32 [batch, max_predictions], the
        drawn tokens; int32 [batch, seq], `token_ids` with every real masked
        position replaced by its drawn token (the discriminator's input).
    """

    def __init__(self, temperature=1.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.temperature = float(temperature)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.built = True

    def call(self, logits, token_ids, mask_positions):
        logits = ops.stop_gradient(ops.cast(logits, "float32"))
        # Gumbel(0, 1) noise; `minval` keeps log(0) out.
        uniform = keras.random.uniform(ops.shape(logits), minval=1e-9, maxval=1.0, seed=self.seed_generator)
        gumbel = -ops.log(-ops.log(uniform))
        sampled_ids = ops.cast(ops.argmax(logits / self.temperature + gumbel, axis=-1), "int32")
        corrupted_ids = scatter_positions(token_ids, sampled_ids, mask_positions)
        return sampled_ids, corrupted_ids

    # The generator's state goes into weights files (Keras saves layer variables only), so a run
    # resumed from a checkpoint draws the same tokens as one that was never stopped.
    def save_own_variables(self, store):
        store["0"] = self.seed_generator.state

    def load_own_variables(self, store):
        if "0" in store:  # files without it (none written by this package) leave the state as it is
            self.seed_generator.state.assign(ops.cast(store["0"], self.seed_generator.state.dtype))

    def compute_output_shape(self, logits_shape, token_ids_shape, mask_positions_shape):
        return tuple(mask_positions_shape), tuple(token_ids_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"temperature": self.temperature, "seed": self.seed})
        return config


def position_indicator(mask_positions, sequence_length, valid=None):
    """Bool [batch, max_predictions, seq]: slot p points at position s (padding slots, position 0, at nothing)."""
    mask_positions = ops.cast(mask_positions, "int32")
    hits = ops.expand_dims(mask_positions, -1) == ops.arange(sequence_length, dtype="int32")[None, None, :]
    keep = mask_positions > 0
    if valid is not None:
        keep = ops.logical_and(keep, valid)
    return ops.logical_and(hits, ops.expand_dims(keep, -1))


def scatter_positions(token_ids, values, mask_positions):
    """`token_ids` with `values[b, p]` written at `mask_positions[b, p]` (real slots only)."""
    token_ids = ops.cast(token_ids, "int32")
    hits = position_indicator(mask_positions, ops.shape(token_ids)[1])
    written = ops.any(hits, axis=1)
    scattered = ops.sum(ops.where(hits, ops.expand_dims(ops.cast(values, "int32"), -1), 0), axis=1)
    return ops.where(written, scattered, token_ids)
