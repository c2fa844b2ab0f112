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
same fakes written in unmasked. No library does this for a Keras model.
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


def masked_lm_context(scores_at, rows, positions, fakes, mask_id, batch_size=64):
    """`prefers_true`, `masked_accuracy`, `frequency_accuracy`; `scores_at(token_ids [b, L], positions [b, k])`
    gives a head's [b, k, V] logits at the positions, which are `[MASK]` in `token_ids`."""
    true = np.take_along_axis(rows, positions, axis=1)
    masked = rows.copy()
    np.put_along_axis(masked, positions, mask_id, axis=1)
    scores = np.concatenate([np.asarray(scores_at(masked[start:start + batch_size], positions[start:start + batch_size]),
                                        dtype=np.float64) for start in range(0, len(rows), batch_size)])
    differ = fakes != true
    pick = lambda ids: np.take_along_axis(scores, ids[..., None], axis=-1)[..., 0][differ]  # noqa: E731
    return {"prefers_true": prefers_true(pick(true), pick(fakes)),
            "masked_accuracy": float(np.mean(scores.argmax(axis=-1) == true)),
            "frequency_accuracy": float(np.mean(true == np.bincount(rows[:, 1:-1].ravel()).argmax()))}


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


def token_context(preset, texts, sequence_length=64, electra=False, seed=0, max_rows=256):
    """The check on a `pretrain` run's `preset/` on held-out `texts` (concatenated into `[CLS] ... [SEP]` rows of
    `sequence_length`, at most `max_rows`): its masked-LM head, or with `electra` its generator
    (`preset/generator/`) and discriminator. Returns the figures above and `slots` (those with a fake other than
    the true token)."""
    import pathlib

    from keras import ops

    from keras_bert_app.models.bert_pretrainer import BertPretrainer
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    tokenizer = BertTokenizer.from_preset(preset)
    vocabulary = tokenizer.get_vocabulary()
    specials = {name: vocabulary.index(name) for name in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
                if name in vocabulary}
    ids = np.concatenate([np.zeros(0, np.int32), *map(np.asarray, tokenizer(list(texts)).to_list())]).astype(np.int32)
    width = sequence_length - 2
    if len(ids) < width:
        raise ValueError(f"token_context: {len(ids)} tokens of text, fewer than one row of {width}.")
    body = ids[:min(len(ids) // width, max_rows) * width].reshape(-1, width)
    rows = np.pad(body, ((0, 0), (1, 0)), constant_values=specials["[CLS]"])
    rows = np.pad(rows, ((0, 0), (0, 1)), constant_values=specials["[SEP]"])
    positions, fakes = slots_and_fakes(rows, len(vocabulary), specials.values(), seed=seed)

    def inputs(token_ids):
        return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": np.ones_like(token_ids)}

    masked_lm = BertPretrainer.from_preset(pathlib.Path(preset) / "generator" if electra else preset)
    result = masked_lm_context(lambda token_ids, slots: ops.convert_to_numpy(masked_lm(
        {**inputs(token_ids), "mask_positions": slots}, training=False)["mlm"]), rows, positions, fakes,
        specials["[MASK]"])
    if electra:
        from keras_bert_app.models.electra_pretrainer import ElectraPretrainer

        pretrainer = ElectraPretrainer.from_preset(preset)
        result.update(discriminator_context(lambda token_ids: ops.convert_to_numpy(pretrainer.discriminator_head(
            pretrainer.discriminator(inputs(token_ids), training=False)["sequence_output"])), rows, positions, fakes))
    return {**result, "slots": int((fakes != np.take_along_axis(rows, positions, axis=1)).sum())}
