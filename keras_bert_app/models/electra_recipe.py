"""ELECTRA's reference recipes (google-research/electra), and which presets are ELECTRA's.

Pretraining (`configure_pretraining.py`, ELECTRA-Small): peak rate 5e-4 at
batch 128, warmup 10,000 of 1,000,000 steps, linear decay, weight decay
0.01, 15% masked, replaced-token loss weight 50, generator 1/4 wide.
Fine-tuning (`configure_finetuning.py`): rate 1e-4, layer-wise decay 0.8,
3 epochs (SQuAD 2), 10% warmup, batch 32. `kba.pretrain --objective
electra` and `kba.finetune` from an ELECTRA preset use them by default;
an explicit argument overrides each.
"""

from keras_bert_app.convert.family import ELECTRA, family

# configure_pretraining.py
PRETRAINING_LEARNING_RATE = 5e-4
PRETRAINING_BATCH_SIZE = 128
PRETRAINING_WARMUP_STEPS = 10_000
PRETRAINING_TOTAL_STEPS = 1_000_000
# configure_finetuning.py
FINETUNING_LEARNING_RATE = 1e-4
FINETUNING_LAYERWISE_LR_DECAY = 0.8
FINETUNING_WARMUP_PROPORTION = 0.1



def pretraining_warmup_steps(steps):
    """Warmup steps of a run of `steps`: the reference's share (10,000 of 1,000,000), at least 1 for a run of 100+."""
    return round(steps * PRETRAINING_WARMUP_STEPS / PRETRAINING_TOTAL_STEPS)


def is_electra_config(config):
    """Whether a preset config (ours, any source) is an ELECTRA model (`convert.family`)."""
    return family(config) == ELECTRA


def finetuning_recipe_line(learning_rate, layerwise_lr_decay):
    """The log line saying which of the reference fine-tuning settings a run uses."""
    return (
        f"ELECTRA preset: the reference fine-tuning recipe (google-research/electra configure_finetuning.py): "
        f"learning rate {learning_rate:g}, layer-wise decay {layerwise_lr_decay:g}, "
        f"{FINETUNING_WARMUP_PROPORTION:.0%} warmup; arguments given override it."
    )
