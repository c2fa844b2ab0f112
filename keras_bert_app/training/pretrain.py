"""`kba.pretrain`: masked LM + NSP, ELECTRA or left-to-right LM pretraining that resumes after a kill.

A run lives in one folder (`output`): `run_config.json`, `checkpoints/`,
`logs/` (TensorBoard), `metrics.csv`, and at the end `preset/`, which
`BertEncoder.from_preset` and `BertPretrainer.from_preset` load. Calling
again with the same arguments after a kill continues from the last
checkpoint: same weights, optimizer state, schedule step and data position.
The objective (`training.objectives`) chooses the model and its batch
transform; `training.pretraining_inputs` the data; `training.run_folder`
checks the folder and writes the preset.
"""

import dataclasses
import os
import pathlib
from collections.abc import Callable, Sequence
from typing import Union

from keras_bert_app import errors
from keras_bert_app.training import phases
from keras_bert_app.training.objectives import DEFAULT_OBJECTIVE, get_objective
from keras_bert_app.training.pretrain_settings import checked_settings
from keras_bert_app.training.pretraining_inputs import DATA_FEATURES, data_shape, pretraining_batches
from keras_bert_app.training.run_folder import (
    PRESET_FOLDER, RUN_CONFIG_FILE, RUN_KEY_DEFAULTS, RUN_KEYS, check_run_dir, run_config, write_run_config,
)

# Re-exported: earlier code and tests read them here.
__all__ = ["pretrain", "DATA_FEATURES", "PRESET_FOLDER", "RUN_CONFIG_FILE", "RUN_KEYS", "RUN_KEY_DEFAULTS"]


def pretrain(
    preset: str | os.PathLike,
    output: str | os.PathLike,
    steps: int,
    *,
    data: str | os.PathLike | None = None,
    corpus: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    batch_size: int = 32,
    learning_rate: float | None = None,
    warmup_steps: int | None = None,
    optimizer: str = "adamw",
    weight_decay: float = 0.01,
    accumulation_steps: int = 1,
    strategy: str = "auto",
    tpu: str | None = None,
    mixed_precision: bool = False,
    jit_compile: Union[bool, str] = "auto",
    next_sentence_prediction: bool = True,
    max_seq_length: int | None = None,
    max_predictions: int | None = None,
    checkpoint_every: int | None = None,
    seed: int = 12345,
    output_bias_init: str = "zeros",
    dropout: float | None = None,
    peak_tflops: float | None = None,
    verbose: int = 1,
    log: Callable[[str], None] | None = print,
    objective: str = DEFAULT_OBJECTIVE,
    generator_size: float | None = None,
    rtd_weight: float | None = None,
    whole_word_masking: bool = False,
    masking: str = "token",
    max_ngram: int = 3,
    segmenter: str | None = None,
    entity_masking: bool = False,
    pairing: str | None = None,
    phase2_data: str | os.PathLike | None = None,
    phase2_steps: int | None = None,
    phase2_batch_size: int | None = None,
    phase2_max_seq_length: int | None = None,
    corruption: Sequence[float] | None = None,
    adam_beta2: float = 0.999,
    adam_epsilon: float = 1e-6,
) -> pathlib.Path:
    """Pretrain a BERT with masked LM (+ next sentence prediction) or ELECTRA, resumably, into a run folder.

    Args:
        preset: str or path. The model to start from: a built-in preset name
            (freshly initialised weights, nothing is downloaded) or a preset
            folder with weights (ours, e.g. a previous run's `preset/`, or a
            foreign checkpoint: `convert.resolve`).
        output: str or path. The run folder (created; the same folder and
            arguments resume a run).
        steps: int. Optimizer steps of the whole run.
        data: str or path. Pretraining TFRecords (a glob such as
            "data/*.tfrecord", from `create_pretraining_data`). Exactly one of
            `data` and `corpus`.
        corpus: str, path or list of them. Corpus files (globs allowed) for
            dynamic masking with the preset's tokenizer.
        batch_size: int. Global batch size (all replicas).
        learning_rate: float or None. Peak learning rate (default: the
            objective's, 1e-4 for mlm_nsp; electra 5e-4 at a batch of 128
            or more, scaled linearly below: 1.25e-4 at 32, see
            `objectives.Objective.default_rate_at`).
        warmup_steps: int or None. Linear warmup steps; None: 1% of `steps`,
            at most 10,000 (electra: the reference's 10,000 of 1,000,000 steps, without the cap).
        optimizer: "adamw" or "lamb" (ALBERT's).
        weight_decay: float. Decoupled weight decay (not on LayerNorm or biases).
        accumulation_steps: int. Batches per optimizer step.
        strategy: "auto", "tpu", "mirrored", "multi_worker", "cpu",
            "data_parallel" or "model_parallel" (`training.distribution`).
        tpu: str or None. TPU name or grpc:// address (for strategy "tpu").
        mixed_precision: bool. Train in mixed_bfloat16 (the previous dtype
            policy is restored afterwards).
        jit_compile: "auto", True or False: Keras' `jit_compile` ("auto":
            XLA on JAX and on TensorFlow with a GPU or TPU; `models.xla`).
        next_sentence_prediction: bool. False: masked LM only (no NSP head).
            Objective mlm_nsp only (ELECTRA has no NSP).
        max_seq_length: int or None. With `corpus`: tokens per pair (default
            128); with `data`: read from the records (a different value is an error).
        max_predictions: int or None. Masked positions per sequence, as
            `max_seq_length` (default 20 with `corpus`).
        checkpoint_every: int or None. Steps between checkpoints; must divide
            `steps` (default: its largest divisor up to 1,000).
        seed: int. Seed of initialisation, data order and masking.
        output_bias_init: "zeros" (the paper) or "unigram": the masked LM's
            output bias starts at the log frequencies of the data's masked
            tokens (fresh heads only; `training.output_bias`). Refused for
            electra.
        dropout: float or None. Dropout rate during this run (default: the
            preset's); the preset written at the end keeps the starting
            preset's rate, the one fine-tuning uses.
        peak_tflops: float or None. Peak TFLOP/s of all devices, for MFU
            (default: detected).
        verbose: int. Keras progress: 0 silent, 1 bar, 2 one line per epoch.
        log: callable or None. Receives the run's progress lines (start,
            resume, throughput, end); None prints nothing but Keras' progress.
        objective: "mlm_nsp" (BERT: masked LM + next sentence prediction),
            "mlm_sop" (ALBERT: masked LM + sentence-order prediction), "mlm"
            (RoBERTa: masked LM alone) or "electra" (replaced-token detection: `models.ElectraPretrainer`;
            the masked positions of the data get ELECTRA's corruption, 85%
            `[MASK]` and 15% kept; the preset written at the end is the
            discriminator, with the generator in `preset/generator/`) or
            "ltr" (the paper's left-to-right LM baseline, "LTR & No NSP":
            `models.LeftToRightPretrainer`, a causal encoder predicting the
            next token at every position, on uncorrupted text; its preset is
            causal, and stays so when fine-tuned, as the paper's was).
        generator_size: float or None. ELECTRA: the generator's size as a
            fraction of the encoder's (width, heads, feed-forward; default
            0.25, or the starting ELECTRA preset's generator).
        rtd_weight: float or None. ELECTRA: weight of the replaced-token
            loss against the generator's masked-LM loss (default 50).
        whole_word_masking, masking, max_ngram, segmenter, entity_masking:
            `corpus`' masking, as `create_pretraining_data`'s: "token",
            "whole_word" or "ngram"; segmenter "jieba" cuts Chinese into words
            once, before the first epoch. Errors with `data` (records hold theirs).
        pairing: str or None. `corpus`' pairing: "nsp", "sop",
            "full_sentences" (see `create_pretraining_data`) or "segments"
            (ELECTRA's plain two-segment examples); None: the objective's
            own. Records hold theirs; an objective that cannot learn from the
            data's pairing is refused.
        phase2_data, phase2_steps, phase2_batch_size, phase2_max_seq_length:
            two-phase pretraining (`training.phases`): the last `phase2_steps`
            of `steps` read these records at `phase2_batch_size` (default
            `batch_size`), with the same optimizer state and schedule;
            `phase2_max_seq_length` checks their length.
        corruption: `(mask, random)` or None. Shares of the masked
            positions whose token becomes `[MASK]` and a random token; the
            rest keep theirs (the paper's MASK/SAME/RND, Table 8: (0.8, 0.1)
            is 80/10/10, (1.0, 0.0) 100/0/0, (0.8, 0.0) 80/20/0). None: the
            objective's (BERT's 0.8/0.1; electra 0.85/0). Records and
            pair-by-pair corpora have theirs drawn again at every batch,
            token by token; refused with whole-word or n-gram masking and
            for "ltr".
        adam_beta2, adam_epsilon: float. The optimizer's second-moment decay
            and epsilon (AdamW and LAMB; default BERT's 0.999 and 1e-6;
            RoBERTa's are 0.98 and 1e-6).

    Returns:
        pathlib.Path of the run folder; its `preset/` is the result.

    Raises:
        keras_bert_app.errors.ArgumentTypeError: an argument of the wrong type.
        keras_bert_app.errors.ArgumentError: a value out of range, an unknown
            name or preset (argument "preset"), a folder holding another run.
        keras_bert_app.errors.MissingFileError: no file matches `data` or `corpus`.
        keras_bert_app.errors.DataError: records without the pretraining features.
        keras_bert_app.errors.OutputExistsError: `output` holds something
            other than a pretraining run.
    """
    settings = checked_settings(**locals())  # the arguments, before any other name is bound
    import keras

    from keras_bert_app.convert import resolve
    from keras_bert_app.models.optimizer import set_mixed_precision
    from keras_bert_app.training.distribution import create_distribution

    resolved = resolve.resolve_preset(settings.preset)
    get_objective(settings.objective).check(settings, resolved)
    previous_policy = keras.config.dtype_policy()
    try:
        set_mixed_precision(settings.mixed_precision)
        keras.utils.set_random_seed(settings.seed)
        # Before the data is read: a missing TPU fails at once, whatever the data's path.
        distribution = create_distribution(settings.strategy, tpu_address=settings.tpu)
        settings = dataclasses.replace(settings, **data_shape(settings, resolved.config["encoder"]))
        settings = dataclasses.replace(settings, **phases.phase2_shape(settings, resolved.config["encoder"]))
        return _run(settings, resolved, distribution)
    finally:
        keras.config.set_dtype_policy(previous_policy)


def _run(settings, resolved, distribution):
    from keras_bert_app.training.checkpointing import list_checkpoints

    run_dir = settings.output
    checkpoint_dir = run_dir / "checkpoints"
    config = {**run_config(settings), **phases.run_config_entries(settings)}
    resuming = check_run_dir(run_dir, config, checkpoint_dir)
    phases.check_same_phases(run_dir, settings)
    if resuming and list_checkpoints(checkpoint_dir)[-1][0] >= settings.steps and (run_dir / PRESET_FOLDER).is_dir():
        settings.say(f"Run in {run_dir} already finished ({settings.steps} steps); its preset is {run_dir / PRESET_FOLDER}.")
        return run_dir
    distribution.per_replica_batch_size(settings.batch_size)
    if settings.objective == "electra":
        settings.say(_electra_recipe_line(settings))
    settings.say(
        f"Distribution: {distribution.name}, {distribution.num_replicas} replica(s), global batch {settings.batch_size}; "
        f"peak learning rate {settings.learning_rate:g}."
    )
    with distribution.scope():
        pretrainer = _build_pretrainer(settings, resolved, resuming)
    if settings.output_bias_init == "unigram" and not resuming:
        _init_output_bias(settings, resolved, pretrainer)
    if distribution.is_chief:
        write_run_config(run_dir, config)
    phases.train(settings, resolved, pretrainer, distribution, checkpoint_dir)
    return run_dir


def _electra_recipe_line(settings):
    from keras_bert_app.models import electra_recipe
    from keras_bert_app.training.objectives import masked_after_batching

    if masked_after_batching(settings):
        masks = "packed once, masked anew at every step"
    elif settings.data:
        masks = "the records' masked positions, their tokens drawn anew at every step"
    else:
        masks = "pairs and masks drawn anew every epoch"
    return (
        f"ELECTRA recipe (google-research/electra configure_pretraining.py): peak rate {settings.learning_rate:g} "
        f"(reference {electra_recipe.PRETRAINING_LEARNING_RATE:g} at batch {electra_recipe.PRETRAINING_BATCH_SIZE}, "
        f"scaled to batch {settings.batch_size * settings.accumulation_steps} unless given), warmup "
        f"{settings.warmup_steps} of {settings.steps} steps (reference {electra_recipe.PRETRAINING_WARMUP_STEPS:,} of "
        f"{electra_recipe.PRETRAINING_TOTAL_STEPS:,}), data pairing {settings.pairing}, {masks}."
    )


# === Model ===
def _build_pretrainer(settings, resolved, resuming):
    """The objective's model, compiled: from the preset's weights, or fresh (a built-in name, or resuming)."""
    from keras_bert_app.models.optimizer import create_optimizer

    pretrainer = get_objective(settings.objective).build(settings, resolved, resuming)
    optimizer = create_optimizer(
        settings.learning_rate, total_steps=settings.steps, warmup_steps=settings.warmup_steps,
        weight_decay=settings.weight_decay, name=settings.optimizer, accumulation_steps=settings.accumulation_steps,
        beta_2=settings.adam_beta2, epsilon=settings.adam_epsilon,
    )
    pretrainer.compile(optimizer=optimizer, jit_compile=settings.jit_compile)
    return pretrainer


def _init_output_bias(settings, resolved, pretrainer):
    """`output_bias_init="unigram"`: the bias of fresh heads at the data's log token frequencies."""
    import numpy as np
    from keras import ops

    from keras_bert_app.training.output_bias import count_masked_targets, unigram_output_bias

    objective = get_objective(settings.objective)
    bias = objective.masked_lm_head(pretrainer).output_bias
    if np.any(ops.convert_to_numpy(bias)):
        raise errors.ArgumentError(
            "output_bias_init",
            f"output_bias_init 'unigram' starts fresh pretraining heads, but the heads of preset "
            f"{settings.preset!r} are trained (their output bias is not zero): drop the option to continue from them.",
        )
    name = objective.output_name
    batches = ((x, {"mlm": y[name]}, {"mlm": weights[name]})
               for x, y, weights in pretraining_batches(settings, resolved, False))
    counts = count_masked_targets(batches, pretrainer.encoder.vocabulary_size)
    bias.assign(unigram_output_bias(counts))
    targets = "masked tokens" if name == "mlm" else "next-token targets"
    settings.say(
        f"Masked-LM output bias set to the log frequencies of {int(counts.sum()):,} {targets} "
        f"({int(np.count_nonzero(counts)):,} distinct) of the data."
    )
