"""The pretraining objectives `kba.pretrain` knows: how each builds its model and prepares its batches.

One row per objective in `OBJECTIVES`: "mlm_nsp" (BERT's masked LM + next
sentence prediction, `BertPretrainer`), "mlm_sop" (ALBERT's sentence-order
prediction on the same head, so `nsp_accuracy` is the SOP accuracy), "mlm"
(RoBERTa's masked LM alone, on `full_sentences` by default), "electra"
(replaced-token detection, `ElectraPretrainer`, with the reference's recipe
`models.electra_recipe`: plain two-segment examples masked anew at every
step, 85% `[MASK]` and 15% kept) and "ltr" (the paper's "LTR & No NSP"
baseline, Table 5: a causal encoder predicting the next token,
`LeftToRightPretrainer`).

A new objective adds a row: its model, its batch transform, the variable
`output_bias_init="unigram"` sets, its FLOPs per sequence and the pairings
of the data it can learn from (`check_pairing` refuses the others).
"""

import dataclasses
import os
from collections.abc import Callable

from keras_bert_app import errors, presets

DEFAULT_OBJECTIVE = "mlm_nsp"
# The pairings of `data.pretraining_instances.PAIRINGS` (kept here without importing the data layer's NumPy), and
# ELECTRA's plain two-segment examples (`data.electra_segments`; a corpus only, with token masking).
ALL_PAIRINGS = ("nsp", "sop", "full_sentences", "segments")


@dataclasses.dataclass(frozen=True)
class Objective:
    """What `kba.pretrain` needs to know about one objective.

    Attributes:
        name: str. The `objective` argument's value.
        default_learning_rate: float. Peak rate when none is given.
        reference_batch_size: int or None. The batch `default_learning_rate`
            was set for: smaller batches get it scaled down linearly
            (`default_rate_at`). None: one rate for every batch.
        check: callable(settings, resolved). Errors for arguments this
            objective cannot use, before any data is read.
        build: callable(settings, resolved, resuming) -> an uncompiled model.
        prepare_batches: callable(dataset, settings, resolved) -> dataset.
        masked_lm_head: callable(model) -> the masked-LM head (its
            `output_bias` is what `output_bias_init="unigram"` sets).
        training_flops: callable(model, settings) -> FLOPs of one training
            step on one sequence.
        pairings: tuple of str. The pairings (`nsp`, `sop`,
            `full_sentences`) of the records or corpus it can learn from;
            the first is the default pairing of a corpus.
        corruption: `(mask, random)` shares of the masked positions'
            tokens where the data is masked after batching
            (`masked_after_batching`): BERT's 0.8/0.1. The `corruption`
            argument of `kba.pretrain` overrides it (`corruption_of`).
        output_name: str. The output whose targets `output_bias_init=
            "unigram"` counts ("mlm"; "lm" for the next-token targets).
    """

    name: str
    default_learning_rate: float
    check: Callable
    build: Callable
    prepare_batches: Callable
    masked_lm_head: Callable
    training_flops: Callable
    pairings: tuple = ALL_PAIRINGS
    reference_batch_size: int | None = None
    corruption: tuple = (0.8, 0.1)
    output_name: str = "mlm"

    def default_rate_at(self, batch_size):
        """The default peak rate for a global batch (times accumulation steps) of `batch_size`.

        `default_learning_rate`, times `batch_size / reference_batch_size`
        when the batch is smaller than the reference (linear scaling, Goyal
        et al. 2017). ELECTRA needs it: at a small batch its 5e-4 (ELECTRA-Small's
        at batch 128) lets the generator learn word frequencies before the
        discriminator learns anything, which then answers "original" everywhere.
        """
        if self.reference_batch_size is None or batch_size >= self.reference_batch_size:
            return self.default_learning_rate
        return self.default_learning_rate * batch_size / self.reference_batch_size


def get_objective(name):
    """The `Objective` of a name; `ArgumentError` naming "objective" for an unknown one."""
    errors.check_choice("objective", name, tuple(OBJECTIVES))
    return OBJECTIVES[name]


def accepted_pairings(settings):
    """The pairings `settings.objective` learns from (`mlm_nsp` without its NSP head: all of them)."""
    if settings.objective == "mlm_nsp" and not settings.next_sentence_prediction:
        return ALL_PAIRINGS
    return get_objective(settings.objective).pairings


def check_pairing(settings, pairing, records=None, source=None):
    """One clear error when the data's pairing does not fit the objective.

    Args:
        settings: the run's settings (`objective`, `next_sentence_prediction`).
        pairing: str. The pairing of the records or corpus.
        records: str or None. The records' pattern (None: a corpus, whose
            pairing is the `pairing` argument).
        source: str or None. Where the records' pairing was read.

    Raises:
        keras_bert_app.errors.DataError: records of another pairing.
        keras_bert_app.errors.ArgumentError: (argument "pairing") a corpus
            pairing the objective cannot learn from.
    """
    accepted = accepted_pairings(settings)
    if pairing in accepted:
        return
    wanted = " or ".join(accepted)
    if records is not None:
        raise errors.DataError(
            f"The records in {records!r} were made with pairing {pairing!r} ({source}), but objective "
            f"{settings.objective!r} learns from pairing {wanted}: write records with "
            f"create-pretraining-data --pairing {accepted[0]}, or choose another --objective."
        )
    raise errors.ArgumentError(
        "pairing",
        f"pairing {pairing!r} does not fit objective {settings.objective!r}, which learns from pairing {wanted}.",
    )


def corruption_of(settings):
    """The run's `(mask, random)` shares: its `corruption` argument, or the objective's own."""
    if settings.corruption is not None:
        return tuple(settings.corruption)
    return get_objective(settings.objective).corruption


def masked_after_batching(settings):
    """Whether the run's batches are masked after batching (`data.batch_masking`), with the objective's `corruption`.

    A corpus with token masking (no segmenter) and a pairing packed once
    (`data.dynamic_pretraining.PACKED_ONCE`: ELECTRA's segments, RoBERTa's full sentences).
    """
    from keras_bert_app.data.dynamic_pretraining import PACKED_ONCE

    return (settings.corpus is not None and settings.masking == "token" and settings.segmenter is None
            and settings.pairing in PACKED_ONCE)


# === Shared ===
def _overrides(settings):
    # `dropout` changes this run's model only (see run_folder.write_preset).
    return {} if settings.dropout is None else {"dropout": settings.dropout}


def _check_has_weights(settings, resolved, resuming):
    builtin = settings.preset in presets.names() and not os.path.isdir(settings.preset)
    if not resolved.has_weights and not builtin:
        raise errors.ArgumentError(
            "preset",
            f"preset {settings.preset!r} is a folder with no {presets.ENCODER_WEIGHTS_FILE}"
            + (" (the run being resumed started from it)" if resuming else "")
            + ": pass a preset folder with weights, or a built-in name for fresh weights.",
        )


def _unchanged(dataset, settings, resolved):
    return dataset


# === mlm_nsp, mlm_sop, mlm ===
def _check_bert(settings, resolved):
    for name in ("generator_size", "rtd_weight"):
        if getattr(settings, name) is not None:
            raise errors.ArgumentError(name, f"{name} is an option of objective 'electra'; the objective is '{settings.objective}'.")
    from keras_bert_app.models.electra_recipe import is_electra_config

    if settings.objective == "mlm_nsp" and settings.next_sentence_prediction and is_electra_config(resolved.config):
        raise errors.ArgumentError(
            "objective",
            f"preset {settings.preset!r} is an ELECTRA model, which has no next-sentence head (ELECTRA packs plain "
            "segments without a pair label); expected --objective electra (or mlm, or mlm_nsp with --no-nsp).",
        )
    if settings.objective == "mlm_sop" and not settings.next_sentence_prediction:
        raise errors.ArgumentError(
            "next_sentence_prediction",
            "no_nsp drops the sentence head that objective 'mlm_sop' trains; for the masked LM alone use objective 'mlm'.",
        )


def _bert_builder(sentence_head):
    """`build` of a `BertPretrainer`: with the sentence head (True), without (False), or as `no_nsp` says (None)."""

    def build(settings, resolved, resuming):
        nsp = settings.next_sentence_prediction if sentence_head is None else sentence_head
        return _build_bert(settings, resolved, resuming, nsp)

    return build


def _build_bert(settings, resolved, resuming, nsp):
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.models.bert_pretrainer import HEAD_WEIGHTS_FILE, BertPretrainer

    _check_has_weights(settings, resolved, resuming)
    overrides = _overrides(settings)
    if resuming or not resolved.has_weights:
        if not resuming:
            settings.say(f"Preset {settings.preset!r} has no weights here: starting from freshly initialised weights.")
        encoder = BertEncoder(**{**resolved.config["encoder"], **overrides})
        return BertPretrainer(encoder, next_sentence_prediction=nsp)
    settings.say(f"Starting from the weights of preset {settings.preset!r}.")
    if resolved.source_format is None and not (resolved.folder / HEAD_WEIGHTS_FILE).is_file():
        settings.say(f"  (no {HEAD_WEIGHTS_FILE} there: fresh pretraining heads)")
    try:
        return BertPretrainer.from_preset(resolved, next_sentence_prediction=nsp, **overrides)
    except ValueError as error:  # masked-LM-only heads asked for a sentence head
        raise errors.ArgumentError("preset", f"preset {settings.preset!r}: {error}") from None


def _masked_lm_only(dataset, settings, resolved):
    """Batches without the pair label (the masked-LM-only model has no output for it)."""
    return dataset.map(lambda x, y, sample_weight: (x, {"mlm": y["mlm"]}, sample_weight))


def _encoder_flops(encoder, sequence_length, num_predictions):
    """`throughput.bert_training_flops` of one encoder (and its masked LM at `num_predictions` positions)."""
    from keras_bert_app.training.throughput import bert_training_flops

    return bert_training_flops(encoder.num_layers, encoder.hidden_dim, encoder.intermediate_dim,
                               encoder.vocabulary_size, sequence_length, num_predictions)


def _bert_flops(pretrainer, settings):
    return _encoder_flops(pretrainer.encoder, settings.max_seq_length, settings.max_predictions)


# === electra ===
def _check_electra(settings, resolved):
    from keras_bert_app.models.electra_pretrainer import generator_config, read_generator_config

    if settings.output_bias_init == "unigram":
        raise errors.ArgumentError(
            "output_bias_init",
            "output_bias_init 'unigram' is refused for objective 'electra': the generator would sample frequent "
            "words from step 0, which the discriminator learns to call original (measured: replaced-token recall "
            "0-0.2% with it, 17% without); expected 'zeros'.",
        )

    saved = read_generator_config(resolved.folder) if resolved.source_format is None else None
    if settings.generator_size is not None or saved is None:
        expected = generator_config(resolved.config["encoder"], settings.generator_size or 0.25)  # sizes checked here
        if saved is not None and expected["hidden_dim"] != saved["hidden_dim"]:
            raise errors.ArgumentError(
                "generator_size",
                f"generator_size {settings.generator_size} asks for a generator {expected['hidden_dim']} wide, but "
                f"preset {settings.preset!r} holds one {saved['hidden_dim']} wide: drop --generator-size to continue it.",
            )
    if _mask_token_id(resolved) is None:  # no vocabulary at all: the preset's own error
        raise errors.ArgumentError(
            "preset", f"preset {settings.preset!r} has no vocabulary with a [MASK] token: ELECTRA's masking needs it."
        )


def _build_electra(settings, resolved, resuming):
    import warnings

    from keras_bert_app.models.electra_pretrainer import HEAD_WEIGHTS_FILE, ElectraPretrainer

    _check_has_weights(settings, resolved, resuming)
    arguments = {name: getattr(settings, name) for name in ("generator_size", "rtd_weight")
                 if getattr(settings, name) is not None}
    arguments.update(seed=settings.seed, **_overrides(settings))
    load_weights = resolved.has_weights and not resuming
    if not load_weights and not resuming:
        settings.say(f"Preset {settings.preset!r} has no weights here: starting from freshly initialised weights.")
    elif load_weights:
        settings.say(f"Starting from the weights of preset {settings.preset!r}.")
        if resolved.source_format is not None or not (resolved.folder / HEAD_WEIGHTS_FILE).is_file():
            settings.say(f"  (no {HEAD_WEIGHTS_FILE} there: a fresh generator and heads)")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*fresh weights.*")  # said above
        pretrainer = ElectraPretrainer.from_preset(resolved, load_weights=load_weights, **arguments)
    generator = pretrainer.generator
    settings.say(
        f"ELECTRA: generator {generator.num_layers} layers x {generator.hidden_dim} wide, {generator.num_heads} "
        f"head(s), feed-forward {generator.intermediate_dim}; discriminator {pretrainer.encoder.hidden_dim} wide; "
        f"replaced-token loss weight {pretrainer.rtd_weight:g}."
    )
    return pretrainer


def _mask_token_id(resolved):
    tokens = resolved.vocabulary_path.read_text(encoding="utf-8").splitlines()
    return tokens.index("[MASK]") if "[MASK]" in tokens else None


def _electra_batches(dataset, settings, resolved):
    from keras_bert_app.data.electra_masking import electra_masking
    if masked_after_batching(settings) or settings.corruption is not None:  # masked by `corruption_of` already
        return dataset

    return electra_masking(dataset, _mask_token_id(resolved), seed=settings.seed)


def _electra_flops(pretrainer, settings):
    discriminator, sequence = pretrainer.encoder, settings.max_seq_length
    # The discriminator: every token, plus its H x H head; the generator: a small BERT with its masked LM.
    return (_encoder_flops(discriminator, sequence, 0) + 3 * sequence * 2 * discriminator.hidden_dim**2
            + _encoder_flops(pretrainer.generator, sequence, settings.max_predictions))


# === ltr ===
def _check_ltr(settings, resolved):
    for name in ("generator_size", "rtd_weight"):
        if getattr(settings, name) is not None:
            raise errors.ArgumentError(name, f"{name} is an option of objective 'electra'; the objective is 'ltr'.")


def _build_ltr(settings, resolved, resuming):
    import warnings

    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.models.left_to_right_pretrainer import HEAD_WEIGHTS_FILE, LeftToRightPretrainer

    _check_has_weights(settings, resolved, resuming)
    overrides = _overrides(settings)
    if resuming or not resolved.has_weights:
        if not resuming:
            settings.say(f"Preset {settings.preset!r} has no weights here: starting from freshly initialised weights.")
        return LeftToRightPretrainer(BertEncoder(**{**resolved.config["encoder"], **overrides, "causal": True}))
    settings.say(f"Starting from the weights of preset {settings.preset!r}, with a causal attention mask.")
    if resolved.source_format is not None or not (resolved.folder / HEAD_WEIGHTS_FILE).is_file():
        settings.say(f"  (no {HEAD_WEIGHTS_FILE} there: a fresh language-model head)")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*fresh weights.*")  # said above
        return LeftToRightPretrainer.from_preset(resolved, **overrides)


def _next_token_batches(dataset, settings, resolved):
    from keras_bert_app.data.next_token_batches import next_token_batches

    return next_token_batches(dataset)


def _ltr_flops(pretrainer, settings):
    # The causal mask saves no work here (the scores are computed, then masked); a prediction at every position.
    return _encoder_flops(pretrainer.encoder, settings.max_seq_length, settings.max_seq_length)


def _bert_objective(name, sentence_head, pairings, prepare_batches=_unchanged):
    """An objective of `BertPretrainer` at BERT's rate; `sentence_head` as `_bert_builder` takes it."""
    return Objective(
        name=name,
        default_learning_rate=1e-4,  # BERT (Devlin et al. 2018, A.2); ALBERT's LAMB 0.00176 is for batch 4096
        check=_check_bert,
        build=_bert_builder(sentence_head),
        prepare_batches=prepare_batches,
        masked_lm_head=lambda pretrainer: pretrainer.masked_lm_head,
        training_flops=_bert_flops,
        pairings=pairings,
    )


OBJECTIVES = {
    "mlm_nsp": _bert_objective("mlm_nsp", None, ("nsp",)),
    "mlm_sop": _bert_objective("mlm_sop", True, ("sop",)),
    "mlm": _bert_objective("mlm", False, ("full_sentences", "nsp", "sop", "segments"), _masked_lm_only),
    "electra": Objective(
        name="electra",
        default_learning_rate=5e-4,  # ELECTRA-Small (Clark et al. 2020, appendix A), at batch 128
        reference_batch_size=128,
        check=_check_electra,
        build=_build_electra,
        prepare_batches=_electra_batches,
        masked_lm_head=lambda pretrainer: pretrainer.generator_head,
        training_flops=_electra_flops,
        pairings=("segments", "nsp", "sop", "full_sentences"),  # the reference's plain segments by default
        corruption=(0.85, 0.0),  # google-research/electra pretrain_helpers.mask: [MASK] or kept
    ),
    "ltr": Objective(
        name="ltr",
        default_learning_rate=1e-4,  # BERT's; the paper trained its LTR model as its BERT-Base
        check=_check_ltr,
        build=_build_ltr,
        prepare_batches=_next_token_batches,
        masked_lm_head=lambda pretrainer: pretrainer.lm_head,
        training_flops=_ltr_flops,
        pairings=("full_sentences", "nsp", "sop", "segments"),
        corruption=(0.0, 0.0),  # packed once: nothing to undo (`next_token_batches` restores the others)
        output_name="lm",
    ),
}
