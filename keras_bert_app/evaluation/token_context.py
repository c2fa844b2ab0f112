"""Does a pretrained model know which token fits a slot, beyond the word frequencies?

A masked-LM accuracy mixes three things: the word frequencies (the most
frequent token alone is right at some slots), copying (BERT's masking
leaves 10% of its targets in place) and context. ELECTRA's discriminator
can only learn from the last: once its generator samples the word
frequencies, a replaced token is told apart by its context alone. This
check isolates context on held-out text:

- `prefers_true`: at slots shown as `[MASK]`, the share where the
  masked-LM head gives the true token a higher probability than a token
  drawn from the same text's word frequencies. A head that knows only the
  frequencies scores 0.5 (true and fake tokens are draws from one
  distribution); context lifts it towards 1.
- `masked_accuracy` and `frequency_accuracy`: the head's top-1 at those
  slots (no token left in place), and the most frequent token's.
- `detects_fakes` (ELECTRA's discriminator): the same fakes written into the
  text unmasked, ranked by the discriminator's replaced-token score (ROC
  AUC; 0.5: it cannot tell a frequency-drawn fake by its context).

No library computes this for a Keras model; the sampling is a few lines of
NumPy, the AUC scikit-learn's.
"""

import numpy as np

SLOT_RATE = 0.15  # BERT's share of masked tokens


def token_rows(tokenizer, texts, sequence_length, specials):
    """`[n, sequence_length]` int32: `texts` tokenized, concatenated and cut into `[CLS] ... [SEP]` rows."""
    ids = np.concatenate([np.asarray(row, dtype=np.int32) for row in tokenizer(list(texts)).to_list()] or
                         [np.zeros(0, np.int32)])
    width = sequence_length - 2
    count = len(ids) // width
    if count == 0:
        raise ValueError(f"token_context: {len(ids)} tokens of text, fewer than one row of {width}.")
    body = ids[:count * width].reshape(count, width)
    return np.concatenate([np.full((count, 1), specials["[CLS]"]), body, np.full((count, 1), specials["[SEP]"])],
                          axis=1).astype(np.int32)


def slots_and_fakes(rows, vocabulary_size, special_ids, rate=SLOT_RATE, seed=0):
    """`(positions [n, k], fakes [n, k])`: k slots per row (never the first or last) and a fake for each.

    A fake is drawn from the rows' own token frequencies (special tokens
    left out), independently of the true token: drawing again where they
    agree would favour frequent true tokens, so the checks leave those slots
    out instead.
    """
    rng = np.random.default_rng(seed)
    count, length = rows.shape
    slots = max(1, round(rate * (length - 2)))
    positions = np.sort(np.argsort(rng.random((count, length - 2)), axis=1)[:, :slots] + 1, axis=1).astype(np.int32)
    frequencies = np.bincount(rows[:, 1:-1].ravel(), minlength=vocabulary_size).astype(np.float64)
    frequencies[list(special_ids)] = 0
    frequencies /= frequencies.sum()
    fakes = rng.choice(vocabulary_size, size=positions.shape, p=frequencies)
    return positions, fakes.astype(np.int32)


def prefers_true(true_scores, fake_scores):
    """Share of slots where the true token scores above the fake (a tie counts one half)."""
    true_scores, fake_scores = np.asarray(true_scores), np.asarray(fake_scores)
    return float(np.mean((true_scores > fake_scores) + 0.5 * (true_scores == fake_scores)))


def masked_lm_context(log_probs, rows, positions, fakes, mask_id, batch_size=64):
    """`prefers_true`, `masked_accuracy` and `frequency_accuracy` of a masked-LM head.

    Args:
        log_probs: callable `(token_ids [b, L], positions [b, k]) -> [b, k, V]` scores (logits or log
            probabilities) at the positions of rows where they are `[MASK]`.
        rows, positions, fakes: from `token_rows` and `slots_and_fakes`.
        mask_id: int. The `[MASK]` token's id.
    """
    true = np.take_along_axis(rows, positions, axis=1)
    masked = rows.copy()
    np.put_along_axis(masked, positions, mask_id, axis=1)
    true_scores, fake_scores, top = [], [], []
    for start in range(0, len(rows), batch_size):
        part = slice(start, start + batch_size)
        scores = np.asarray(log_probs(masked[part], positions[part]), dtype=np.float64)
        true_scores.append(np.take_along_axis(scores, true[part][..., None], axis=-1)[..., 0])
        fake_scores.append(np.take_along_axis(scores, fakes[part][..., None], axis=-1)[..., 0])
        top.append(scores.argmax(axis=-1))
    counts = np.bincount(rows[:, 1:-1].ravel())
    differ = (fakes != true).ravel()  # a fake equal to its true token tells nothing
    return {
        "prefers_true": prefers_true(np.concatenate(true_scores).ravel()[differ],
                                     np.concatenate(fake_scores).ravel()[differ]),
        "masked_accuracy": float(np.mean(np.concatenate(top) == true)),
        "frequency_accuracy": float(np.mean(true == counts.argmax())),
    }


def discriminator_context(replaced_scores, rows, positions, fakes, batch_size=64):
    """`detects_fakes`: ROC AUC of replaced-token scores, fakes against the real tokens (a fake equal to its
    true token left out).

    Args:
        replaced_scores: callable `(token_ids [b, L]) -> [b, L]` replaced-token logits.
        rows, positions, fakes: from `token_rows` and `slots_and_fakes`.
    """
    from sklearn.metrics import roc_auc_score

    corrupted = rows.copy()
    np.put_along_axis(corrupted, positions, fakes, axis=1)
    labels = np.zeros(rows.shape, dtype=np.int32)
    np.put_along_axis(labels, positions, 1, axis=1)
    kept = np.ones(rows.shape, dtype=bool)
    np.put_along_axis(kept, positions, fakes != np.take_along_axis(rows, positions, axis=1), axis=1)
    kept[:, [0, -1]] = False  # [CLS] and [SEP] are never replaced
    scores = np.concatenate([np.asarray(replaced_scores(corrupted[start:start + batch_size]), dtype=np.float64)
                             for start in range(0, len(rows), batch_size)])
    return {"detects_fakes": float(roc_auc_score(labels[kept], scores[kept]))}


def token_context(preset, texts, sequence_length=64, electra=False, seed=0, max_rows=256):
    """The check on a pretraining run's preset: its masked-LM head, or ELECTRA's generator and discriminator.

    Args:
        preset: str or path. A `pretrain` run's `preset/` (with its heads).
        texts: list of str. Held-out text.
        sequence_length: int. Tokens per row, `[CLS]` and `[SEP]` included.
        electra: bool. An ELECTRA run: its generator's masked-LM head
            (`preset/generator/`) and its discriminator.
        seed: int. Seed of the slots and fakes.
        max_rows: int. At most this many rows of text are scored.

    Returns:
        dict of floats: `prefers_true`, `masked_accuracy`, `frequency_accuracy`
        (of the generator for ELECTRA), `detects_fakes` (ELECTRA), `slots`
        (those with a fake other than the true token).
    """
    import pathlib

    from keras import ops

    from keras_bert_app.models.bert_pretrainer import BertPretrainer
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    preset = pathlib.Path(preset)
    tokenizer = BertTokenizer.from_preset(preset)
    vocabulary = tokenizer.get_vocabulary()
    special_names = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    specials = {name: vocabulary.index(name) for name in special_names if name in vocabulary}
    rows = token_rows(tokenizer, texts, sequence_length, specials)[:max_rows]
    positions, fakes = slots_and_fakes(rows, len(vocabulary), specials.values(), seed=seed)

    def inputs(token_ids):
        return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
                "padding_mask": np.ones_like(token_ids)}

    masked_lm = BertPretrainer.from_preset(preset / "generator" if electra else preset)

    def log_probs(token_ids, slot_positions):
        outputs = masked_lm({**inputs(token_ids), "mask_positions": slot_positions}, training=False)
        return ops.convert_to_numpy(outputs["mlm"])

    result = masked_lm_context(log_probs, rows, positions, fakes, specials["[MASK]"])
    if electra:
        from keras_bert_app.models.electra_pretrainer import ElectraPretrainer

        pretrainer = ElectraPretrainer.from_preset(preset)

        def replaced_scores(token_ids):
            encoded = pretrainer.discriminator(inputs(token_ids), training=False)
            return ops.convert_to_numpy(pretrainer.discriminator_head(encoded["sequence_output"]))

        result.update(discriminator_context(replaced_scores, rows, positions, fakes))
    return {**result, "slots": int((fakes != np.take_along_axis(rows, positions, axis=1)).sum())}
