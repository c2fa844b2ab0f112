"""The objectives study's arms and defaults.

Standard library only: `keras-bert-app study objectives --help` reads them
without importing Keras or TensorFlow.
"""

import dataclasses

DEFAULT_OUTPUT = "runs/objectives_study"
# Bumped when what a study folder holds changes meaning: a folder of another version is refused in one line.
STUDY_VERSION = 2
# The pretraining budget of every arm: the FLOPs (bench FLOP model) of this many BERT steps at the quickstart's
# batch and length. Sized so that the whole study (the rate sweep, every arm at 2 pretraining seeds, 3 fine-tunings
# of each, the probes) runs in under an hour on 2 busy CPU cores; the report states the run's own runtime.
DEFAULT_BUDGET_STEPS = 200
# The study's pretraining batch (the quickstart's 32 halved): at a budget this small, more updates of fewer tokens
# each learn more; the budget's BERT steps are steps at this batch.
PRETRAIN_BATCH_SIZE = 16
# Fine-tuning on the task's few labels (40 articles): the quickstart's 8 epochs at batch 16 are 24 updates, too few
# to move even a pretrained encoder off chance; 20 epochs at batch 8 are 100.
FINETUNE_EPOCHS = 20
FINETUNE_BATCH_SIZE = 8
MIN_BUDGET_STEPS = 20  # below this an arm takes a handful of steps and the sweep compares noise
DEFAULT_SEEDS = (0, 1, 2)  # fine-tuning seeds, for each pretraining seed
DEFAULT_PRETRAINING_SEEDS = (0, 1)  # the first also runs the rate sweep
# One grid of peak pretraining rates for every arm. Each arm's rate is the one whose run on the first pretraining
# seed scores best on the arm's own held-out pretraining metric (`SELECTION`), never on the task.
LEARNING_RATES = (3e-4, 1e-3, 3e-3)
STEP_MULTIPLE = 10  # pretraining steps are rounded to a multiple of this
RESULTS_FILE = "results.json"
# The study's task (`objectives_study_task`): the topic of a BBC News article, from few labels per topic.
TASK_LABELS_PER_CLASS = 8
TASK_DEV_EXAMPLES = 250
# The parts of a quickstart run the study reads.
QUICKSTART_PARTS = ("quickstart.json", "data/corpus.txt", "data/labeled.csv", "data/dev.csv",
                    "model_preset/config.json", "model_preset/model.weights.h5", "pretraining_data/*.tfrecord")
# Held-out pretraining metrics (`evaluation.token_context` on the dev articles): name, and whether higher is better.
SELECTION = {"masked_lm": ("masked_loss", False), "electra": ("detects_fakes", True),
             "ltr": ("next_token_loss", False)}
# "Did not train": an arm whose held-out metric shows no learning gets no ranking. ELECTRA: discriminator AUC on
# frequency-drawn fakes below this; masked-LM and left-to-right arms: top-1 not above the unigram baseline's beyond
# its 95% Wilson interval.
TRAINED_AUC = 0.8


@dataclasses.dataclass(frozen=True)
class Arm:
    """One pretraining objective of the study, with its paper's data, masking and optimizer."""

    title: str
    objective: str  # `pretrain`'s objective
    pairing: str  # the pairing of its data
    source: str  # "records": static masks (`create_pretraining_data`); "corpus": masked anew at every step
    encoder_options: tuple = ()  # (name, value) pairs changing the quickstart's encoder config
    description: str = ""
    pretrain_options: tuple = ()  # (name, value) pairs passed to `pretrain` (optimizer, corruption, Adam's betas)
    paper: str = ""  # where the recipe comes from, and what of it this arm does not do

    @property
    def selection(self) -> str:
        """Which held-out metric picks its rate (`SELECTION`)."""
        return {"electra": "electra", "ltr": "ltr"}.get(self.objective, "masked_lm")


_ROBERTA = (("adam_beta2", 0.98), ("adam_epsilon", 1e-6))
ARMS = {
    "bert": Arm("BERT", "mlm_nsp", "nsp", "records", (), "masked LM + next sentence prediction, static masks",
                paper="Devlin et al. 2018: AdamW, warmup, 80/10/10 masking"),
    "no_nsp": Arm("No NSP", "mlm", "nsp", "records", (), "BERT's records and masks, masked LM alone",
                  paper="BERT Table 5, 'No NSP'"),
    "ltr": Arm("LTR & No NSP", "ltr", "segments", "corpus", (),
               "left-to-right LM: causal mask, next-token prediction on plain segments",
               paper="BERT Table 5, 'LTR & No NSP' (the GPT-style baseline)"),
    "roberta": Arm("RoBERTa-style", "mlm", "full_sentences", "corpus", (),
                   "masked LM alone on packed full sentences, masked anew at every step, 80/10/10",
                   _ROBERTA, paper="Liu et al. 2019: Adam beta2 0.98, epsilon 1e-6, dynamic masking, no NSP"),
    "mask_100_0_0": Arm("Masking 100/0/0", "mlm", "full_sentences", "corpus", (),
                        "RoBERTa-style with every target shown as [MASK]", (*_ROBERTA, ("corruption", (1.0, 0.0))),
                        paper="BERT Table 8, MASK/SAME/RND 100/0/0 (there with NSP)"),
    "mask_80_20_0": Arm("Masking 80/20/0", "mlm", "full_sentences", "corpus", (),
                        "RoBERTa-style with 80% [MASK], 20% left in place, no random tokens",
                        (*_ROBERTA, ("corruption", (0.8, 0.0))),
                        paper="BERT Table 8, MASK/SAME/RND 80/20/0 (there with NSP)"),
    "albert": Arm("ALBERT-style", "mlm_sop", "sop", "records", (("num_groups", 1), ("embedding_dim", 64)),
                  "masked LM + sentence-order prediction; all layers share one set of weights, embeddings E=64 < H=128",
                  (("optimizer", "lamb"),), paper="Lan et al. 2019: LAMB, cross-layer sharing, E < H, SOP"),
    "electra": Arm("ELECTRA", "electra", "segments", "corpus", (),
                   "replaced-token detection, generator 1/4 of the encoder, plain segments masked at every step",
                   paper="Clark et al. 2020: its reference recipe (warmup share, zero output bias), rate from the grid"),
}
RANDOM = "random"  # the reference row: the initial weights, not pretrained
# The task's baselines, none of them an encoder: the majority class, a logistic regression on word counts, and one
# on surface features (length, punctuation, casing, digits).
BASELINES = {"majority": "majority class", "bag_of_words": "bag of words", "surface": "surface features"}


def runtime_line(budget_steps: int = DEFAULT_BUDGET_STEPS) -> str:
    """The study's runtime as `--help` states it, at the defaults' counts (3 rates, 8 arms, 2 pretraining seeds, 3
    fine-tunings each): from times measured on 2 CPU cores under a load average of 13 (a pretraining run about
    70 s plus 0.75 s a step, a fine-tuning about 90 s, a probe about 30 s)."""
    pretrainings, finetunings, probes = 8 * (3 + 1), 9 * 2 * 3, 9 * 2
    seconds = pretrainings * (70 + 0.75 * budget_steps) + finetunings * 90 + probes * 30
    return (f"about {seconds / 3600:.1f} hours at --budget-steps {budget_steps} on 2 CPU cores shared with other "
            "work (load average 13, measured); less on idle cores")
