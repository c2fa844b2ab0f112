"""The objectives study's arms and defaults.

Standard library only: `keras-bert-app study objectives --help` reads them
without importing Keras or TensorFlow.
"""

import dataclasses

DEFAULT_OUTPUT = "runs/objectives_study"
# The pretraining budget of every arm: the FLOPs (bench FLOP model) of this many BERT steps at the quickstart's
# batch and length. The smallest budget measured at which every arm is ahead of the random encoder on both the probe
# and fine-tuning: at 1,500 ELECTRA is on neither (its discriminator learns context only once its generator samples
# the word frequencies, and had not yet), ALBERT-style not on fine-tuning. 4 pretrainings, 25 fine-tunings and 5
# probes: about 2.5 hours on 2 idle CPU cores (an estimate; the report states the run's own runtime).
DEFAULT_BUDGET_STEPS = 10000
DEFAULT_SEEDS = (0, 1, 2, 3, 4)
STEP_MULTIPLE = 10  # pretraining steps are rounded to a multiple of this
RESULTS_FILE = "results.json"
# The study's task (`objectives_study_task`): is a sentence in its own word order or are its words shuffled?
# A bag of words cannot tell (the same words either way: 0.5 by construction), topics can be told by words.
TASK_EXAMPLES = {"train": 300, "dev": 400}
# The parts of a quickstart run the study reads.
QUICKSTART_PARTS = ("quickstart.json", "data/corpus.txt", "data/labeled.csv", "data/dev.csv",
                    "model_preset/config.json", "model_preset/model.weights.h5", "pretraining_data/*.tfrecord")


@dataclasses.dataclass(frozen=True)
class Arm:
    """One pretraining objective of the study, with its paper's data and masking."""

    title: str
    objective: str  # `pretrain`'s objective
    pairing: str  # the pairing of its data
    source: str  # "records": static masks (`create_pretraining_data`); "corpus": masked anew at every step
    encoder_options: tuple = ()  # (name, value) pairs changing the quickstart's encoder config
    description: str = ""
    rate_factor: float = 1.0  # the peak rate: the objective's default at the study's batch, times this


# The papers' peak rates are for base models trained for 1,000,000 steps. The masked-LM arms of this L=2, H=128
# encoder learn next to nothing at them in a budget of minutes (BERT at 1e-4 for 1,500 steps: masked-LM accuracy
# 0.06, probe 0.52 on the task; at 1e-3: 0.13 and 0.72), so they run at 10 times theirs (BERT: the quickstart's
# 1e-3). ELECTRA learns at its own rate scaled to the batch (1.25e-4 at batch 32: discriminator AUC 0.80 after
# about 200 steps, before its generator's samples approach the corpus' word frequencies and a token's identity stops
# telling fakes apart); at 2.4 to 10 times it the generator gets there sooner and the AUC stalls at 0.55 (measured
# at 3e-4, 6.25e-4, 1e-3 and 1.25e-3; at 1e-3 neither a 1/8 generator nor an RTD weight of 5 moves it: the
# discriminator's loss stays at the entropy of the replaced-token rate, so it learns no context in this budget).
MLM_RATE_FACTOR = 10


ARMS = {
    "bert": Arm("BERT", "mlm_nsp", "nsp", "records", (), "masked LM + next sentence prediction, static masks",
                MLM_RATE_FACTOR),
    "roberta": Arm("RoBERTa-style", "mlm", "full_sentences", "corpus", (),
                   "masked LM alone on packed full sentences, masked anew at every step", MLM_RATE_FACTOR),
    "albert": Arm("ALBERT-style", "mlm_sop", "sop", "records", (("num_groups", 1), ("embedding_dim", 128)),
                  "masked LM + sentence-order prediction; all layers share one set of weights, embeddings E=128",
                  MLM_RATE_FACTOR),
    "electra": Arm("ELECTRA", "electra", "segments", "corpus", (),
                   "replaced-token detection, generator 1/4 of the encoder, plain segments masked at every step"),
}
RANDOM = "random"  # the reference row: the initial weights, not pretrained
BAG_OF_WORDS = "bag_of_words"  # the baseline row: a logistic regression on word counts
