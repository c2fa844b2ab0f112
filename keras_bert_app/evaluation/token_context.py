"""Does a pretrained model know which token fits a slot, beyond the word frequencies?

A masked-LM accuracy mixes the word frequencies, copying (BERT leaves 10% of
its targets in place) and context; ELECTRA's discriminator learns from
context alone once its generator samples the frequencies. On held-out text,
at slots shown as `[MASK]`: `prefers_true`, the share where the masked-LM head
scores the true token above a token drawn from the text's own frequencies
(0.5: frequencies only; a fake equal to its true token is left out, as
drawing again would favour frequent true tokens); `masked_accuracy` and
`frequency_accuracy`, the head's top-1 and the most frequent token's; for
ELECTRA's discriminator, `detects_fakes`: the ROC AUC of its scores with the
same fakes written in unmasked; for a left-to-right model,
`next_token_context`: its next-token loss and accuracy against the unigram
baseline's. Every function takes predictions (arrays, or a function of token
ids that returns them): the models are run by their caller
(`demo.objectives_study_runs.context_check`). No library does this for a
Keras model.
"""

import numpy as np

from keras_bert_app.extras import require


def slots_and_fakes(rows, vocabulary_size, special_ids, rate=0.15, seed=0):
    """`(positions [n, k], fakes [n, k])`: k slots per row (not the first or last), fakes drawn from the rows'
    token frequencies (special tokens left out) independently of the true tokens."""
    rng = np.random.default_rng(seed)
    count, length = rows.shape
    slots = max(1, round(rate * (length - 2)))
    positions = np.sort(np.argsort(rng.random((count, length - 2)), axis=1)[:, :slots] + 1, axis=1).astype(np.int32)
    frequencies = np.bincount(rows[:, 1:-1].ravel(), minlength=vocabulary_size).astype(np.float64)
    frequencies[list(special_ids)] = 0
    return positions, rng.choice(vocabulary_size, size=positions.shape, p=frequencies / frequencies.sum()).astype(np.int32)


def prefers_true(true_scores, fake_scores):
    """Share of slots where the true token scores above the fake (a tie counts one half)."""
    true_scores, fake_scores = np.asarray(true_scores), np.asarray(fake_scores)
    return float(np.mean((true_scores > fake_scores) + 0.5 * (true_scores == fake_scores)))


def _log_softmax(scores):
    scores = scores - scores.max(axis=-1, keepdims=True)
    return scores - np.log(np.exp(scores).sum(axis=-1, keepdims=True))


def unigram_baseline(rows, targets):
    """`frequency_accuracy` and `frequency_loss` of the body's own word frequencies (add-half smoothed) predicting
    `targets`: the unigram baseline a head must beat to have learned anything from context."""
    counts = np.bincount(rows[:, 1:-1].ravel(), minlength=int(max(rows.max(), targets.max())) + 1) + 0.5
    log_p = np.log(counts / counts.sum())
    return {"frequency_accuracy": float(np.mean(targets == counts.argmax())), "frequency_loss": float(-log_p[targets].mean())}


def masked_lm_context(scores_at, rows, positions, fakes, mask_id, batch_size=64):
    """`prefers_true`, `masked_accuracy`, `masked_loss` (cross-entropy at the slots), and the unigram baseline's
    `frequency_accuracy`, `frequency_loss`; `scores_at(token_ids [b, L], positions [b, k])` gives a head's
    [b, k, V] logits at the positions, which are `[MASK]` in `token_ids`."""
    true = np.take_along_axis(rows, positions, axis=1)
    masked = rows.copy()
    np.put_along_axis(masked, positions, mask_id, axis=1)
    scores = np.concatenate([np.asarray(scores_at(masked[start:start + batch_size], positions[start:start + batch_size]),
                                        dtype=np.float64) for start in range(0, len(rows), batch_size)])
    differ = fakes != true
    pick = lambda ids: np.take_along_axis(scores, ids[..., None], axis=-1)[..., 0][differ]  # noqa: E731
    log_p = np.take_along_axis(_log_softmax(scores), true[..., None], axis=-1)[..., 0]
    return {"prefers_true": prefers_true(pick(true), pick(fakes)),
            "masked_accuracy": float(np.mean(scores.argmax(axis=-1) == true)), "masked_loss": float(-log_p.mean()),
            **unigram_baseline(rows, true)}


def next_token_context(scores_next, rows, batch_size=64):
    """`next_token_accuracy`, `next_token_loss` and the unigram baseline's (`frequency_*`) of a left-to-right model:
    `scores_next(token_ids [b, L]) -> [b, L, V]` logits at each position for the token after it; scored on the
    body's tokens (position 1 to L - 2, each from the tokens on its left)."""
    scores = np.concatenate([np.asarray(scores_next(rows[start:start + batch_size]), dtype=np.float64)[:, :-2]
                             for start in range(0, len(rows), batch_size)])
    targets = rows[:, 1:-1]
    log_p = np.take_along_axis(_log_softmax(scores), targets[..., None], axis=-1)[..., 0]
    return {"next_token_accuracy": float(np.mean(scores.argmax(axis=-1) == targets)),
            "next_token_loss": float(-log_p.mean()), **unigram_baseline(rows, targets)}


def discriminator_context(replaced_scores, rows, positions, fakes, batch_size=64):
    """`detects_fakes`: ROC AUC of `replaced_scores(token_ids [b, L]) -> [b, L]` with the fakes written in, against
    the real tokens (`[CLS]`, `[SEP]` and a fake equal to its true token left out)."""
    roc_auc_score = require("sklearn.metrics", extra="eval", feature="The discriminator's ROC AUC").roc_auc_score

    corrupted, labels, kept = rows.copy(), np.zeros(rows.shape, np.int32), np.ones(rows.shape, bool)
    np.put_along_axis(corrupted, positions, fakes, axis=1)
    np.put_along_axis(labels, positions, 1, axis=1)
    np.put_along_axis(kept, positions, fakes != np.take_along_axis(rows, positions, axis=1), axis=1)
    kept[:, [0, -1]] = False
    scores = np.concatenate([np.asarray(replaced_scores(corrupted[start:start + batch_size]), dtype=np.float64)
                             for start in range(0, len(rows), batch_size)])
    return {"detects_fakes": float(roc_auc_score(labels[kept], scores[kept]))}
