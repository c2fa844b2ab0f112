"""The quickstart's defaults, its file names, and where each default comes from.

Standard library only: the command line reads these for `--help` without
importing Keras or TensorFlow.
"""

SETTINGS_FILE = "quickstart.json"
STAGES_DIR = "stages"
REPORT_FILE = "report.md"
MODEL_PRESET_DIR = "model_preset"
DEFAULT_OUTPUT = "quickstart_run"
DEFAULT_PRESET = "bert_tiny_uncased"
DEFAULT_STEPS = 3000
DEFAULT_SEED = 0
DEFAULT_SEQUENCE_LENGTH = 64
DEFAULT_PRETRAIN_BATCH_SIZE = 32
DEFAULT_PRETRAIN_LEARNING_RATE = 1e-3
DEFAULT_PRETRAIN_DROPOUT = 0.0
DEFAULT_DUPE_FACTOR = 2
DEFAULT_FINETUNE_EPOCHS = 8
DEFAULT_LABELED_ARTICLES = 250
DEFAULT_VOCAB_SIZE = 8000
DEFAULT_FINETUNE_BATCH_SIZE = 16
DEFAULT_FINETUNE_LEARNING_RATE = 5e-4
MIN_SEQUENCE_LENGTH = 16  # room for two segments
MIN_VOCAB_SIZE = 100
# Where each default comes from, for the report.
DEFAULT_SOURCES = {
    "preset": "BERT-Tiny (L=2, H=128; Turc et al. 2019): the smallest built-in config, the one that fits minutes on 2 CPU cores",
    "steps": "3,000, without dropout: after 2,000 the pretrained encoder did not fine-tune better than the random one on each of 3 seeds, after 3,000 it did; the whole quickstart then fits a few minutes on 2 CPU cores (the paper: 1,000,000)",
    "sequence_length": "half the paper's 128 (section A.2), for twice the steps in the time; 64 tokens hold an article's headline and first sentences, enough for its topic",
    "pretrain_batch_size": "small-scale stand-in for the paper's 256",
    "pretrain_dropout": "none during pretraining (the paper: 0.1), as in Geiping & Goldstein 2022 (Cramming) for short runs: a 3,000-step run is far from overfitting, and without dropout steps are about 20% faster and learn more; fine-tuning uses the config's 0.1 (the pretrained preset keeps it)",
    "pretrain_learning_rate": "higher than the paper's 1e-4 because the run is over 1,000 times shorter and the model tiny; warmup over the first 10% of the steps",
    "vocab_size": "the paper's WordPiece vocabulary has 30,000 tokens for all of English Wikipedia and BooksCorpus; 8,000 learned from the 1,780 training articles covers them with 4x fewer output rows to train",
    "labeled_articles": "pretraining matters most when labels are few: 50 labeled articles per topic, while pretraining reads all 1,780 training articles without labels",
    "dupe_factor": "google-research/bert uses 10; 2 passes give about 35,000 records, which 3,000 steps of 32 read about 2.7 times",
    "output_bias_init": "unigram: the masked-LM output bias starts at the log frequencies of the masked tokens, not at zero as in the paper; in a run this short, a zero start makes the rare words' embeddings collapse to one direction (keras_bert_app.training.output_bias)",
    "masking": "15% of tokens, at most 15% of the sequence length predicted (paper section 3.1)",
    "finetune_epochs": "above the paper's 2-4 epochs (section A.3): 250 labeled articles make 16 steps an epoch",
    "finetune_batch_size": "the paper's fine-tuning range is 16 or 32 (section A.3)",
    "finetune_learning_rate": "above the paper's 2e-5..5e-5 (section A.3): at 1e-4 for 3 epochs neither tiny encoder moved off chance",
    "split": "80/20 train/dev split of the BBC News articles with a fixed seed (keras_bert_app.data.bbc_news)",
}
SAMPLE_SENTENCES = (
    "The central bank raised interest rates again as inflation stayed high.",
    "The striker scored twice in the second half to win the cup final.",
    "The new film won the award for best director at the festival.",
    "Ministers will vote on the bill in parliament next week.",
    "The company released a faster mobile phone chip and new software.",
)
