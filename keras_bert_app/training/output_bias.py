"""Start the masked LM's output bias at the log frequencies of its targets.

The paper starts the output bias at zero. The bias then needs thousands of
steps to learn how often each token is masked; until it has, the loss falls
fastest through the tied token embeddings, and in a short run the rare
words' rows are pushed alike, losing the differences a classifier needs.
`pretrain --output-bias-init unigram` starts the bias at the unigram
log-probabilities of the masked targets instead, so the first predictions
already match the token frequencies and the embeddings learn context.
"""

import numpy as np

from keras_bert_app import errors

# Targets counted before the estimate stops (enough for every frequent token).
MAX_TARGETS = 200_000
# Added to every count, so tokens never seen as a target keep a finite bias.
SMOOTHING = 0.5


def count_masked_targets(batches, vocabulary_size, max_targets=MAX_TARGETS):
    """How often each token id is a real masked-LM target.

    Args:
        batches: iterable of `(x, y, sample_weight)` pretraining batches, with
            `y["mlm"]` target ids and `sample_weight["mlm"]` (0 for padding
            prediction slots), e.g. a `pretraining_dataset`.
        vocabulary_size: int.
        max_targets: int. Stop after the batch that reaches this many targets.

    Returns:
        float64 array `[vocabulary_size]` of counts.
    """
    counts = np.zeros(vocabulary_size, np.float64)
    for _, y, sample_weight in batches:
        ids = np.asarray(y["mlm"]).reshape(-1)
        real = np.asarray(sample_weight["mlm"]).reshape(-1) > 0
        if ids.size and (ids.min() < 0 or ids.max() >= vocabulary_size):
            raise errors.DataError(
                f"masked-LM target ids must be in [0, {vocabulary_size}); got ids from "
                f"{ids.min()} to {ids.max()} (records made with another vocabulary?)."
            )
        counts += np.bincount(ids[real], minlength=vocabulary_size)
        if counts.sum() >= max_targets:
            break
    if not counts.sum():
        raise errors.DataError("No masked-LM target in the data: cannot estimate the token frequencies.")
    return counts


def unigram_output_bias(counts, smoothing=SMOOTHING):
    """Log of the smoothed target frequencies, centred: softmax(bias) = the frequencies.

    Args:
        counts: array `[vocabulary_size]` from `count_masked_targets`.
        smoothing: float added to every count.

    Returns:
        float32 array `[vocabulary_size]` with mean 0.
    """
    smoothed = np.asarray(counts, np.float64) + smoothing
    log_probabilities = np.log(smoothed / smoothed.sum())
    return (log_probabilities - log_probabilities.mean()).astype("float32")
