"""`keras-bert-app create-pretraining-data`: corpus -> masked-pair TFRecords.

The static data of the original BERT: `dupe_factor` passes over the corpus,
each with its own masks, shuffled and written to sharded TFRecords in the
original layout (see `pretraining_records`). Documents are tokenized in
batches by the TensorFlow tokenizer, then paired and masked in NumPy by
worker processes; every document of every pass has its own seeded random
generator, so the output is byte-identical whatever the number of workers.

    keras-bert-app create-pretraining-data --input wiki/*.txt --output data/ \\
        --vocab vocab.txt --max-seq-length 128 --dupe-factor 10 --num-shards 8
"""

import argparse
import json
import multiprocessing
import os
import sys
import time

import numpy as np

from keras_bert_app.data.corpus import expand_input_files
from keras_bert_app.data.corpus import tokenize_corpus
from keras_bert_app.data.pretraining_instances import InstanceMaker
from keras_bert_app.data.pretraining_records import existing_records
from keras_bert_app.data.pretraining_records import serialize_features
from keras_bert_app.data.pretraining_records import shard_boundaries
from keras_bert_app.data.pretraining_records import shard_name
from keras_bert_app.data.pretraining_records import write_records_atomically

SUMMARY_FILE = "pretraining_data.json"
DOCUMENTS_PER_TASK = 16

# Set in the parent before the worker processes fork, read by them.
_SHARED = {}


def add_arguments(parser):
    parser.add_argument("--input", nargs="+", required=True, metavar="FILE",
                        help="corpus files or globs (.gz allowed): one sentence per line, blank line between documents")
    parser.add_argument("--output", required=True, metavar="DIR", help="directory for the *.tfrecord shards")
    parser.add_argument("--vocab", required=True, metavar="FILE", help="WordPiece vocabulary, one token a line")
    parser.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=True,
                        help="lowercase and strip accents (uncased models)")
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--max-predictions-per-seq", type=int, default=20)
    parser.add_argument("--masked-lm-prob", type=float, default=0.15)
    parser.add_argument("--short-seq-prob", type=float, default=0.1)
    parser.add_argument("--dupe-factor", type=int, default=10, help="passes over the corpus, each with new masks")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--whole-word-masking", action="store_true", help="mask ## pieces with their word")
    parser.add_argument("--num-shards", type=int, default=1, help="number of output files")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the shards of an earlier run in --output (refused otherwise)")


def _generate(task):
    """Serialized instances of documents `[start, end)` in one pass."""
    corpus, maker = _SHARED["corpus"], _SHARED["maker"]
    pass_index, start, end = task
    parts, num_short = [], 0
    for document_index in range(start, end):
        features, is_short = maker.document_instances(corpus, document_index, pass_index)
        parts.append(features)
        num_short += is_short
    # One serialization call for the whole task: NumPy's per-call cost is
    # paid once, not once per document.
    features = {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
    labels = features["next_sentence_labels"]
    counts = np.array([
        len(labels),
        features["input_mask"].sum(),
        np.count_nonzero(features["masked_lm_weights"]),
        (labels == 0).sum(),
        num_short,
    ], dtype=np.int64)  # instances, tokens, masked, is_next, short
    return serialize_features(features), counts


def _tasks(num_documents, dupe_factor):
    return [
        (pass_index, start, min(start + DOCUMENTS_PER_TASK, num_documents))
        for pass_index in range(dupe_factor)
        for start in range(0, num_documents, DOCUMENTS_PER_TASK)
    ]


def _progress_bar(total, unit, description, enabled):
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, desc=description, disable=not enabled,
                file=sys.stderr, dynamic_ncols=True)


def _check_output(output_dir, overwrite):
    """Refuse to mix or silently replace the shards of an earlier run."""
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise FileExistsError(f"--output {output_dir!r} is a file: expected a directory.")
    old = existing_records(output_dir)
    if old and not overwrite:
        raise FileExistsError(
            f"--output {output_dir!r} already holds {len(old)} *.tfrecord "
            f"file(s) ({old[0]}, ...) from another run; choose an empty "
            "directory or pass --overwrite to replace them."
        )
    return old


def create_pretraining_data(
    input_files,
    output_dir,
    tokenizer,
    max_seq_length=128,
    max_predictions_per_seq=20,
    masked_lm_prob=0.15,
    short_seq_prob=0.1,
    dupe_factor=10,
    seed=12345,
    whole_word_masking=False,
    num_shards=1,
    workers=1,
    overwrite=False,
    progress=True,
):
    """Write masked sentence-pair TFRecords from a corpus.

    Args:
        input_files: str or list of str. Corpus files or globs.
        output_dir: str. Directory for the shards (created if missing).
        tokenizer: a `BertTokenizer` (called on a `tf.string` batch, returns
            ragged ids; has `get_vocabulary()`).
        max_seq_length, max_predictions_per_seq, masked_lm_prob,
        short_seq_prob, whole_word_masking, seed: see `InstanceMaker`.
        dupe_factor: int. Passes over the corpus, each with new masks.
        num_shards: int. Number of `*.tfrecord` files.
        workers: int. Worker processes for pairing, masking, serializing.
        overwrite: bool. Replace the shards of an earlier run in
            `output_dir` (otherwise refused).
        progress: bool. Show progress bars on stderr.

    Returns:
        dict, the summary written to `pretraining_data.json`.
    """
    if num_shards < 1 or workers < 1 or dupe_factor < 1:
        raise ValueError(
            f"num_shards, workers and dupe_factor must be at least 1, got "
            f"{num_shards}, {workers}, {dupe_factor}."
        )
    files = expand_input_files(input_files)
    old_records = _check_output(output_dir, overwrite)
    maker = InstanceMaker(
        list(tokenizer.get_vocabulary()),
        max_seq_length=max_seq_length,
        max_predictions_per_seq=max_predictions_per_seq,
        masked_lm_prob=masked_lm_prob,
        short_seq_prob=short_seq_prob,
        whole_word_masking=whole_word_masking,
        seed=seed,
    )
    start_time = time.perf_counter()
    with _progress_bar(None, "lines", "tokenizing", progress) as bar:
        corpus = tokenize_corpus(files, tokenizer, progress=bar.update)
    if corpus.num_documents < 2:
        raise ValueError(
            f"The corpus {files} holds 1 document: next-sentence prediction "
            "draws random next sentences from other documents, so at least 2 "
            "are needed. Separate documents with a blank line."
        )

    tasks = _tasks(corpus.num_documents, dupe_factor)
    records, counts = [], np.zeros(5, dtype=np.int64)
    _SHARED.update(corpus=corpus, maker=maker)
    with _progress_bar(dupe_factor * corpus.num_documents,
                       "docs", "pairing+masking", progress) as bar:
        if workers == 1:
            results = map(_generate, tasks)
            pool = None
        else:
            pool = multiprocessing.get_context("fork").Pool(workers)
            results = pool.imap(_generate, tasks)
        try:
            for task, (task_records, task_counts) in zip(tasks, results):
                records.extend(task_records)
                counts += task_counts
                bar.update(task[2] - task[1])
        finally:
            if pool is not None:
                pool.terminate()
            _SHARED.clear()

    order = np.random.default_rng(seed).permutation(len(records))
    os.makedirs(output_dir, exist_ok=True)
    bounds = shard_boundaries(len(records), num_shards)
    names = [shard_name(i, num_shards) for i in range(num_shards)]
    with _progress_bar(num_shards, "shards", "writing", progress) as bar:
        for index, name in enumerate(names):
            shard_order = order[bounds[index] : bounds[index + 1]]
            write_records_atomically(
                os.path.join(output_dir, name), (records[i] for i in shard_order)
            )
            bar.update(1)
    for name in sorted(set(old_records) - set(names)):
        os.remove(os.path.join(output_dir, name))

    num_instances, num_tokens, num_masked, num_is_next, num_short = counts.tolist()
    summary = {
        "input_files": files,
        "shards": names,
        "documents": corpus.num_documents,
        "sentences": corpus.num_sentences,
        "corpus_tokens": corpus.num_tokens,
        "instances": num_instances,
        "tokens": num_tokens,
        "masked_fraction": num_masked / max(num_tokens, 1),
        "is_next_fraction": num_is_next / max(num_instances, 1),
        "short_target_fraction": num_short / (dupe_factor * corpus.num_documents),
        "seconds": time.perf_counter() - start_time,
        "max_seq_length": max_seq_length,
        "max_predictions_per_seq": max_predictions_per_seq,
        "masked_lm_prob": masked_lm_prob,
        "short_seq_prob": short_seq_prob,
        "dupe_factor": dupe_factor,
        "seed": seed,
        "whole_word_masking": whole_word_masking,
    }
    summary_path = os.path.join(output_dir, SUMMARY_FILE)
    with open(summary_path + ".incomplete", "w") as stream:
        json.dump(summary, stream, indent=2)
    os.replace(summary_path + ".incomplete", summary_path)
    return summary


def run(args):
    if not os.path.isfile(args.vocab):
        raise FileNotFoundError(f"Vocabulary file {args.vocab!r} does not exist.")
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    tokenizer = BertTokenizer(vocabulary=args.vocab, lowercase=args.lowercase)
    summary = create_pretraining_data(
        args.input,
        args.output,
        tokenizer,
        max_seq_length=args.max_seq_length,
        max_predictions_per_seq=args.max_predictions_per_seq,
        masked_lm_prob=args.masked_lm_prob,
        short_seq_prob=args.short_seq_prob,
        dupe_factor=args.dupe_factor,
        seed=args.seed,
        whole_word_masking=args.whole_word_masking,
        num_shards=args.num_shards,
        workers=args.workers,
        overwrite=args.overwrite,
    )
    print(
        f"{summary['documents']} documents, {summary['instances']} instances, "
        f"{summary['tokens']} tokens; masked fraction "
        f"{summary['masked_fraction']:.4f}, IsNext fraction "
        f"{summary['is_next_fraction']:.4f}, short targets "
        f"{summary['short_target_fraction']:.3f}; "
        f"{len(summary['shards'])} shard(s) in {args.output} "
        f"({summary['seconds']:.1f} s)"
    )
    return 0
