"""How whole are the Chinese words that masking touches? (issue 22's must-show)

Reads pretraining TFRecords (from `keras-bert-app create-pretraining-data`),
restores each instance's original tokens, and cuts every run of single-CJK-
character tokens into words with jieba, independently of how the data was
made. For the multi-character words that masking touches (at least one
token masked) it reports the fraction masked whole, and for the words
masked whole how their tokens were corrupted: all `[MASK]`, all kept, all
random, or mixed (the 80/10/10 decided per word shows as 0.8/0.1/0.1 and
no mixed). Also the most predictions in one instance.

    python tools/whole_word_masking_check.py data/ --vocab bert_chinese_vocab.txt \\
        --max-seq-length 128 --max-predictions-per-seq 20

Prints one JSON object.
"""

import argparse
import glob
import json
import logging
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from keras_bert_app.data.segmentation import CJK_RUN  # noqa: E402


def read_vocabulary(path):
    """One token a line. Not `str.splitlines`: the Chinese vocabulary holds U+2028 and friends."""
    with open(path, encoding="utf-8") as stream:
        return stream.read().rstrip("\n").split("\n")


def read_records(pattern, max_seq_length, max_predictions_per_seq):
    """The features of all records matching `pattern`, as NumPy arrays `[num_instances, ...]`."""
    import tensorflow as tf

    def fixed(length, dtype=tf.int64):
        return tf.io.FixedLenFeature([length], dtype)

    spec = {
        "input_ids": fixed(max_seq_length),
        "input_mask": fixed(max_seq_length),
        "masked_lm_positions": fixed(max_predictions_per_seq),
        "masked_lm_ids": fixed(max_predictions_per_seq),
        "masked_lm_weights": fixed(max_predictions_per_seq, tf.float32),
    }
    files = sorted(glob.glob(pattern))
    if not files:
        raise SystemExit(f"no file matches {pattern!r}")
    dataset = tf.data.TFRecordDataset(files).batch(4096).map(lambda r: tf.io.parse_example(r, spec))
    parts = list(dataset.as_numpy_iterator())
    return {name: np.concatenate([part[name] for part in parts]) for name in spec}


def whole_word_statistics(features, vocabulary, segment=None):
    """Whole-word figures of masked instances.

    Args:
        features: dict with `input_ids`, `input_mask`, `masked_lm_positions`,
            `masked_lm_ids`, `masked_lm_weights` arrays (the TFRecord layout).
        vocabulary: list of str (id -> token).
        segment: callable `str -> list of str`; jieba's `lcut` by default.

    Returns:
        dict: `touched` (multi-character words with a masked token),
        `whole_fraction`, per whole-masked word the fractions `mask`, `keep`,
        `random`, `mixed`, and `max_predictions` (most in one instance).
    """
    if segment is None:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        segment = jieba.lcut
    mask_id = vocabulary.index("[MASK]")
    is_cjk = np.array([len(token) == 1 and bool(CJK_RUN.fullmatch(token)) for token in vocabulary])
    characters = np.array(vocabulary, dtype=object)
    touched = whole = 0
    decisions = {"mask": 0, "keep": 0, "random": 0, "mixed": 0}
    for row in range(len(features["input_ids"])):
        corrupted = features["input_ids"][row]
        length = int(features["input_mask"][row].sum())
        valid = features["masked_lm_weights"][row] > 0
        positions = features["masked_lm_positions"][row][valid]
        original = corrupted.copy()
        original[positions] = features["masked_lm_ids"][row][valid]
        masked = np.zeros(len(original), bool)
        masked[positions] = True
        cjk = np.append(is_cjk[original[:length]], False)
        # Runs of CJK tokens: [start, end) pairs.
        edges = np.flatnonzero(np.diff(np.concatenate([[False], cjk]).astype(np.int8)))
        for start, end in zip(edges[0::2].tolist(), edges[1::2].tolist()):
            position = start
            for word in segment("".join(characters[original[start:end]])):
                span = slice(position, position + len(word))
                position += len(word)
                if len(word) < 2 or not masked[span].any():
                    continue
                touched += 1
                if not masked[span].all():
                    continue
                whole += 1
                new, old = corrupted[span], original[span]
                if (new == mask_id).all():
                    decisions["mask"] += 1
                elif (new == old).all():
                    decisions["keep"] += 1
                elif ((new != old) & (new != mask_id)).all():
                    decisions["random"] += 1
                else:
                    decisions["mixed"] += 1
    total = max(1, sum(decisions.values()))
    return {
        "touched": touched,
        "whole_fraction": whole / max(touched, 1),
        **{name: count / total for name, count in decisions.items()},
        "max_predictions": int((features["masked_lm_weights"] > 0).sum(axis=1).max(initial=0)),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="folder of *.tfrecord shards, or a glob")
    parser.add_argument("--vocab", required=True)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--max-predictions-per-seq", type=int, default=20)
    args = parser.parse_args(argv)
    pattern = os.path.join(args.data, "*.tfrecord") if os.path.isdir(args.data) else args.data
    features = read_records(pattern, args.max_seq_length, args.max_predictions_per_seq)
    print(json.dumps(whole_word_statistics(features, read_vocabulary(args.vocab))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
