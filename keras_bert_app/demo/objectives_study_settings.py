"""The objectives study's arms and defaults.

Standard library only: `keras-bert-app study objectives --help` reads them
without importing Keras or TensorFlow.
"""

import dataclasses

DEFAULT_OUTPUT = "runs/objectives_study"
# 4 x 3 minutes of pretraining, plus the timing runs, 15 fine-tunings and 5
# probes: about 30 minutes on 2 idle CPU cores.
DEFAULT_MINUTES = 3.0
DEFAULT_SEEDS = (0, 1, 2)
DEFAULT_CALIBRATION_STEPS = 20
STEP_MULTIPLE = 10  # pretraining steps are rounded to a multiple of this
RESULTS_FILE = "results.json"
# The parts of a quickstart run the study reads.
QUICKSTART_PARTS = ("quickstart.json", "data/corpus.txt", "data/labeled.csv", "data/dev.csv",
                    "model_preset/config.json", "model_preset/model.weights.h5", "pretraining_data/*.tfrecord")


@dataclasses.dataclass(frozen=True)
class Arm:
    """One pretraining objective of the study."""

    title: str
    objective: str  # `pretrain`'s objective
    pairing: str  # the pairing of its records (`create_pretraining_data`)
    encoder_options: tuple = ()  # (name, value) pairs changing the quickstart's encoder config
    description: str = ""


ARMS = {
    "bert": Arm("BERT", "mlm_nsp", "nsp", (), "masked LM + next sentence prediction"),
    "roberta": Arm("RoBERTa-style", "mlm", "full_sentences", (), "masked LM alone on packed full sentences"),
    "albert": Arm("ALBERT-style", "mlm_sop", "sop", (("num_groups", 1), ("embedding_dim", 128)),
                  "masked LM + sentence-order prediction; all layers share one set of weights, embeddings E=128"),
    "electra": Arm("ELECTRA", "electra", "nsp", (), "replaced-token detection, generator 1/4 of the encoder"),
}
RANDOM = "random"  # the reference row: the initial weights, not pretrained
