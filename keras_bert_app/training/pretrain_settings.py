"""The arguments of `kba.pretrain`, checked: typed errors naming the argument, defaults filled in."""

import dataclasses
import os
import pathlib
from collections.abc import Callable
from typing import Union

from keras_bert_app import errors
from keras_bert_app.training import phases
from keras_bert_app.training.objectives import DEFAULT_OBJECTIVE, OBJECTIVES
from keras_bert_app.training.pretraining_inputs import check_corruption, data_arguments

OPTIMIZERS = ("adamw", "lamb")
OUTPUT_BIAS_INITS = ("zeros", "unigram")


@dataclasses.dataclass(frozen=True)
class PretrainSettings:
    """The checked arguments of one run, defaults filled in (`warmup_steps`, `checkpoint_every`)."""

    preset: str
    output: pathlib.Path
    steps: int
    data: str | None
    corpus: tuple | None
    batch_size: int
    learning_rate: float
    warmup_steps: int
    optimizer: str
    weight_decay: float
    accumulation_steps: int
    strategy: str
    tpu: str | None
    mixed_precision: bool
    jit_compile: Union[bool, str]
    next_sentence_prediction: bool
    max_seq_length: int | None
    max_predictions: int | None
    checkpoint_every: int
    seed: int
    output_bias_init: str
    dropout: float | None
    peak_tflops: float | None
    verbose: int
    log: Callable | None
    objective: str = DEFAULT_OBJECTIVE
    generator_size: float | None = None
    rtd_weight: float | None = None
    whole_word_masking: bool = False
    masking: str = "token"
    max_ngram: int = 3
    segmenter: str | None = None
    entity_masking: bool = False
    pairing: str | None = None  # None: the objective's; records: theirs (set by data_shape)
    phase2_data: str | None = None  # two-phase runs (training.phases)
    phase2_steps: int = 0
    phase2_batch_size: int | None = None
    phase2_max_seq_length: int | None = None
    phase2_max_predictions: int | None = None
    phase2_pairing: str | None = None  # that of the phase-2 records (set by phases.phase2_shape)
    corruption: tuple | None = None  # (mask, random) shares at the masked positions; None: the objective's
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-6

    def say(self, message):
        if self.log is not None:
            self.log(message)


def checked_settings(
    preset, output, steps, data, corpus, batch_size, learning_rate, warmup_steps, optimizer, weight_decay,
    accumulation_steps, strategy, tpu, mixed_precision, jit_compile, next_sentence_prediction, max_seq_length,
    max_predictions, checkpoint_every, seed, output_bias_init, dropout, peak_tflops, verbose, log,
    objective=DEFAULT_OBJECTIVE, generator_size=None, rtd_weight=None, phase2_data=None, phase2_steps=None,
    phase2_batch_size=None, phase2_max_seq_length=None, corruption=None, adam_beta2=0.999, adam_epsilon=1e-6,
    **corpus_masking,
):
    """Typed errors naming the argument for every bad value; defaults filled in. The inputs are not changed."""
    from keras_bert_app.training.distribution import STRATEGY_NAMES

    errors.check_type("preset", preset, (str, os.PathLike), "a preset name or folder (str or path)")
    output = errors.check_path("output", output)
    errors.check_int("steps", steps, minimum=1)
    inputs = data_arguments(data, corpus, max_seq_length, max_predictions, **corpus_masking)
    errors.check_int("batch_size", batch_size, minimum=1)
    phase2 = phases.phase2_arguments(phase2_data, phase2_steps, phase2_batch_size, phase2_max_seq_length, steps, batch_size)
    errors.check_choice("objective", objective, tuple(OBJECTIVES))
    errors.check_int("accumulation_steps", accumulation_steps, minimum=1)
    if learning_rate is None:
        learning_rate = OBJECTIVES[objective].default_rate_at(batch_size * accumulation_steps)
    errors.check_number("learning_rate", learning_rate, minimum=0, minimum_inclusive=False)
    if generator_size is not None:
        errors.check_number("generator_size", generator_size, minimum=0, minimum_inclusive=False)
    if rtd_weight is not None:
        errors.check_number("rtd_weight", rtd_weight, minimum=0)
    if warmup_steps is None:
        warmup_steps = default_warmup_steps(objective, steps)
    errors.check_type("warmup_steps", warmup_steps, int)
    if not 0 <= warmup_steps <= steps:
        raise errors.ArgumentError("warmup_steps", f"warmup_steps must be in [0, steps={steps}]; got {warmup_steps}.")
    errors.check_choice("optimizer", optimizer, OPTIMIZERS)
    errors.check_number("weight_decay", weight_decay, minimum=0)
    errors.check_number("adam_beta2", adam_beta2)
    if not 0 <= adam_beta2 < 1:
        raise errors.ArgumentError("adam_beta2", f"adam_beta2 must be in [0, 1); got {adam_beta2}.")
    errors.check_number("adam_epsilon", adam_epsilon, minimum=0, minimum_inclusive=False)
    corruption = check_corruption(corruption, objective, inputs)
    errors.check_choice("strategy", strategy, STRATEGY_NAMES)
    if tpu is not None:
        errors.check_type("tpu", tpu, str)
    from keras_bert_app.models.xla import resolve_jit_compile

    jit_compile = resolve_jit_compile(jit_compile)
    for name, value in (("mixed_precision", mixed_precision), ("next_sentence_prediction", next_sentence_prediction)):
        errors.check_type(name, value, bool)
    if checkpoint_every is None:
        checkpoint_every = max(d for d in range(1, min(1000, steps) + 1) if not steps % d and not phase2["phase2_steps"] % d)
    errors.check_int("checkpoint_every", checkpoint_every, minimum=1)
    if steps % checkpoint_every:
        raise errors.ArgumentError(
            "checkpoint_every",
            f"checkpoint_every ({checkpoint_every}) must divide steps ({steps}): "
            "training runs in equal segments between checkpoints.",
        )
    phases.check_checkpoint_every(checkpoint_every, steps, phase2["phase2_steps"])
    errors.check_int("seed", seed)
    errors.check_choice("output_bias_init", output_bias_init, OUTPUT_BIAS_INITS)
    if dropout is not None:
        errors.check_type("dropout", dropout, (int, float), "a number")
        if not 0 <= dropout < 1:
            raise errors.ArgumentError("dropout", f"dropout must be in [0, 1); got {dropout}.")
    if peak_tflops is not None:
        errors.check_number("peak_tflops", peak_tflops, minimum=0, minimum_inclusive=False)
    errors.check_choice("verbose", verbose, (0, 1, 2))
    if log is not None and not callable(log):
        raise errors.ArgumentTypeError("log", f"log must be a callable or None; got {type(log).__name__}.")
    return PretrainSettings(
        preset=os.fspath(preset), output=output, steps=steps, **inputs, batch_size=batch_size,
        learning_rate=learning_rate, warmup_steps=warmup_steps, optimizer=optimizer, weight_decay=weight_decay,
        accumulation_steps=accumulation_steps, strategy=strategy, tpu=tpu, mixed_precision=mixed_precision,
        jit_compile=jit_compile, next_sentence_prediction=next_sentence_prediction,
        checkpoint_every=checkpoint_every, seed=seed,
        output_bias_init=output_bias_init, dropout=dropout, peak_tflops=peak_tflops, verbose=verbose, log=log,
        objective=objective, generator_size=generator_size, rtd_weight=rtd_weight, **phase2,
        corruption=corruption, adam_beta2=float(adam_beta2), adam_epsilon=float(adam_epsilon),
    )


def default_warmup_steps(objective, steps):
    """1% of the steps, at most 10,000; ELECTRA: the reference's share (`models.electra_recipe`)."""
    if objective == "electra":
        from keras_bert_app.models.electra_recipe import pretraining_warmup_steps

        return pretraining_warmup_steps(steps)
    return min(10_000, steps // 100)
