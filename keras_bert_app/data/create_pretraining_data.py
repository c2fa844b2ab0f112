"""Corpus -> masked-pair TFRecords (`kba.create_pretraining_data`, `keras-bert-app create-pretraining-data`).

The static data of the original BERT: `dupe_factor` passes over the corpus,
each with its own masks, shuffled and written to sharded TFRecords in the
original layout (see `pretraining_records`). Documents are tokenized in
batches by the TensorFlow tokenizer, then paired and masked in NumPy by
worker processes; every document of every pass has its own seeded random
generator, so the output is byte-identical whatever the number of workers.

    keras-bert-app create-pretraining-data --input wiki/*.txt --output data/ \\
        --vocab vocab.txt --max-seq-length 128 --dupe-factor 10 --num-shards 8

Whole-word masking of Chinese cuts the text into words with a segmenter
first (`--segmenter jieba`, `segmentation`); `--masking ngram` masks phrases
of whole words; `--pairing sop` writes ALBERT's sentence-order pairs,
`--pairing full_sentences` RoBERTa's packed full sentences.
"""

import importlib
import json
import multiprocessing
import os
import sys
import time
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from keras_bert_app import errors
from keras_bert_app.data.corpus import tokenize_corpus
from keras_bert_app.data.masking import masking_scheme
from keras_bert_app.data.pretraining_instances import PAIRINGS
from keras_bert_app.data.pretraining_instances import InstanceMaker
from keras_bert_app.data.pretraining_instances import check_pairing_corpus
from keras_bert_app.data.pretraining_records import SUMMARY_FILE
from keras_bert_app.data.pretraining_records import shard_boundaries
from keras_bert_app.data.pretraining_records import shard_name
from keras_bert_app.data.pretraining_records import write_records_atomically
from keras_bert_app.data.pretraining_summary import corpus_statistics
from keras_bert_app.data.pretraining_summary import pretraining_summary
from keras_bert_app.data.pretraining_summary import segmenter_name
from keras_bert_app.data.pretraining_tasks import check_output
from keras_bert_app.data.pretraining_tasks import generate_task
from keras_bert_app.data.pretraining_tasks import input_files_of
from keras_bert_app.data.pretraining_tasks import pretraining_tasks
from keras_bert_app.data.pretraining_tasks import record_order
from keras_bert_app.data.segmentation import resolve_segmenter
from keras_bert_app.data.segmentation import summary_line

if TYPE_CHECKING:
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

RUNNERS = ("local", "beam")
BEAM_INSTALL_HINT = 'pip install "keras-bert-app[beam]" (or pip install apache-beam)'

# Set in the parent before the worker processes fork, read by them.
_SHARED = {}


def _generate(task):
    return generate_task(_SHARED["corpus"], _SHARED["maker"], task)


def _progress_bar(total, unit, description, enabled):
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, desc=description, disable=not enabled,
                file=sys.stderr, dynamic_ncols=True)


def _tokenizer(tokenizer, lowercase, log):
    """A `BertTokenizer` as given, or one built from a vocabulary file (`lowercase` None: as the vocabulary is)."""
    if isinstance(tokenizer, (str, os.PathLike)):
        path = errors.check_path("tokenizer", tokenizer)
        if not path.is_file():
            raise errors.MissingFileError("tokenizer", f"Vocabulary file {str(path)!r} does not exist (tokenizer).")
        from keras_bert_app.convert.weight_map import vocabulary_is_lowercase
        from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

        if lowercase is None:
            lowercase = vocabulary_is_lowercase(path)
            if not lowercase and log is not None:
                log(f"{path} holds uppercase word pieces: a cased vocabulary, so the text keeps its case and accents "
                    "(lowercase=True, --lowercase, to lowercase it all the same).")
        return BertTokenizer(vocabulary=str(path), lowercase=lowercase)
    if not callable(getattr(tokenizer, "get_vocabulary", None)):
        raise errors.ArgumentTypeError(
            "tokenizer",
            f"tokenizer must be a BertTokenizer or the path of a vocabulary file; got {type(tokenizer).__name__}.",
        )
    return tokenizer


def _check_settings(max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob, dupe_factor, seed,
                    whole_word_masking, num_shards, workers, overwrite, progress, lowercase):
    errors.check_int("max_seq_length", max_seq_length, minimum=5)  # [CLS] A [SEP] B [SEP]
    errors.check_int("max_predictions_per_seq", max_predictions_per_seq, minimum=1)
    errors.check_number("masked_lm_prob", masked_lm_prob)
    if not 0.0 < masked_lm_prob < 1.0:
        raise errors.ArgumentError("masked_lm_prob", f"masked_lm_prob must be in (0, 1); got {masked_lm_prob}.")
    errors.check_number("short_seq_prob", short_seq_prob, minimum=0.0, maximum=1.0)
    for name, value in (("dupe_factor", dupe_factor), ("num_shards", num_shards), ("workers", workers)):
        errors.check_int(name, value, minimum=1)
    errors.check_int("seed", seed)
    for name, value in (("whole_word_masking", whole_word_masking), ("overwrite", overwrite),
                        ("progress", progress)):
        errors.check_type(name, value, bool)
    if lowercase is not None:
        errors.check_type("lowercase", lowercase, bool)


def create_pretraining_data(
    input_files: str | os.PathLike | Sequence[str | os.PathLike],
    output_dir: str | os.PathLike,
    tokenizer: "BertTokenizer | str | os.PathLike",
    *,
    lowercase: bool | None = None,
    max_seq_length: int = 128,
    max_predictions_per_seq: int = 20,
    masked_lm_prob: float = 0.15,
    short_seq_prob: float = 0.1,
    dupe_factor: int = 10,
    seed: int = 12345,
    whole_word_masking: bool = False,
    masking: str = "token",
    max_ngram: int = 3,
    segmenter: "str | Callable[[str], list] | None" = None,
    entity_masking: bool = False,
    pairing: str = "nsp",
    num_shards: int = 1,
    workers: int = 1,
    overwrite: bool = False,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
    runner: str = "local",
    beam_options: "dict | Sequence[str] | None" = None,
) -> dict:
    """Write masked sentence-pair TFRecords from a corpus.

    The stage function behind `keras-bert-app create-pretraining-data`.

    Args:
        input_files: str or path, or a list of them. Corpus files or globs
            (`.gz` allowed): one sentence per line, a blank line between
            documents.
        output_dir: str or path. Directory for the shards (created if missing).
        tokenizer: a `BertTokenizer` (called on a `tf.string` batch, returns
            ragged ids; has `get_vocabulary()`), or the path of a WordPiece
            vocabulary file (one token a line), read with `lowercase`.
        lowercase: bool or None. Lower-case and strip accents (uncased
            models); used when `tokenizer` is a vocabulary file. None: as the
            vocabulary is, lowercase unless it holds uppercase word pieces.
        max_seq_length, max_predictions_per_seq, masked_lm_prob,
        short_seq_prob, whole_word_masking, seed, masking, max_ngram: see
            `InstanceMaker`. `masking` is `token`, `whole_word` or `ngram`.
        segmenter: `"jieba"`, a callable `str -> list of str`, or None. Cuts
            the runs of CJK characters into words for whole-word and n-gram
            masking; the summary's `segmentation` counts the words and the
            tokens masked on their own (`fallback_tokens`).
        entity_masking: bool. With `segmenter="jieba"`: named entities are
            units (ERNIE's entity-level masking).
        pairing: str. `nsp` (BERT's next-sentence pairs, label 1 = random
            next), `sop` (ALBERT's sentence-order pairs, label 1 = swapped;
            one-sentence documents are skipped and counted) or
            `full_sentences` (RoBERTa's packing, no pair label). The summary
            records it, and `pretrain` reads it from there.
        dupe_factor: int. Passes over the corpus, each with new masks.
        num_shards: int. Number of `*.tfrecord` files.
        workers: int. Worker processes for pairing, masking, serializing.
        overwrite: bool. Replace the shards of an earlier run in
            `output_dir` (otherwise refused).
        progress: bool. Show progress bars on stderr.
        log: callable taking a str, or None. Receives the segmentation
            summary line (when a segmenter is used).
        runner: str. `local` (worker processes on this machine) or `beam`:
            the same generator as an Apache Beam pipeline (`beam_pipeline`;
            needs the `beam` extra), writing the same records.
        beam_options: dict of str to value, or list of `--key=value` flags,
            or None. Beam pipeline options, passed through unchanged (runner
            `beam` only); by default the DirectRunner in multi-process mode
            with `workers` processes.

    Returns:
        dict, the summary written to `pretraining_data.json`.

    Raises:
        keras_bert_app.errors.MissingFileError: an input file or the
            vocabulary file does not exist (or a glob matches none).
        keras_bert_app.errors.ArgumentTypeError, ArgumentError: an argument of
            the wrong type or out of range; `segmenter="jieba"` without jieba
            installed (the message says how to install it).
        keras_bert_app.errors.OutputExistsError: `output_dir` is a file or holds
            the shards of another run (without `overwrite`).
        keras_bert_app.errors.DataError: the corpus holds fewer than 2
            documents (`nsp`), or no document of 2 sentences (`sop`).
        ValueError: a corpus line that is not valid UTF-8 (names file and line).
        With `runner="beam"`, bad input is refused before the pipeline
        starts (`beam_pipeline.run_pipeline`).
    """
    _check_settings(max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob, dupe_factor, seed,
                    whole_word_masking, num_shards, workers, overwrite, progress, lowercase)
    errors.check_choice("runner", runner, RUNNERS)
    if beam_options is not None and runner != "beam":
        raise errors.ArgumentError("beam_options", f"beam_options go with runner='beam'; got runner={runner!r}.")
    scheme = masking_scheme(masking, max_ngram, whole_word_masking, segmenter)
    errors.check_type("entity_masking", entity_masking, bool)
    errors.check_choice("pairing", pairing, PAIRINGS)
    if runner == "beam":
        beam_pipeline = _beam_pipeline()
    segment = resolve_segmenter(segmenter, entities=entity_masking)
    tokenizer = _tokenizer(tokenizer, lowercase, log)
    output_dir = os.fspath(errors.check_path("output_dir", output_dir))
    maker = InstanceMaker(list(tokenizer.get_vocabulary()), max_seq_length=max_seq_length,
                          max_predictions_per_seq=max_predictions_per_seq, masked_lm_prob=masked_lm_prob,
                          short_seq_prob=short_seq_prob, seed=seed, masking=scheme, max_ngram=max_ngram,
                          pairing=pairing)
    settings = {
        "max_seq_length": max_seq_length,
        "max_predictions_per_seq": max_predictions_per_seq,
        "masked_lm_prob": masked_lm_prob,
        "short_seq_prob": short_seq_prob,
        "dupe_factor": dupe_factor,
        "seed": seed,
        "whole_word_masking": whole_word_masking,
        "masking": scheme,
        "max_ngram": max_ngram if scheme == "ngram" else None,
        "segmenter": segmenter_name(segmenter),
        "entity_masking": entity_masking,
    }
    if runner == "beam":
        return beam_pipeline.run_pipeline(
            input_files, output_dir, tokenizer, maker, settings, segmenter=segmenter, entity_masking=entity_masking,
            num_shards=num_shards, workers=workers, overwrite=overwrite, beam_options=beam_options or {}, log=log,
        )
    files = input_files_of(input_files)
    old_records = check_output(output_dir, overwrite)
    start_time = time.perf_counter()
    description = "tokenizing" if segment is None else "tokenizing+segmenting"
    with _progress_bar(None, "lines", description, progress) as bar:
        corpus = tokenize_corpus(files, tokenizer, progress=bar.update, segmenter=segment)
    if corpus.segmentation is not None and log is not None:
        log(summary_line(corpus.segmentation))
    single_sentence_documents = check_pairing_corpus(corpus, pairing, f"The corpus {files}")

    tasks = pretraining_tasks(corpus.num_documents, dupe_factor)
    records, counts = [], np.zeros(5, dtype=np.int64)
    _SHARED.update(corpus=corpus, maker=maker)
    with _progress_bar(dupe_factor * corpus.num_documents, "docs", "pairing+masking", progress) as bar:
        pool = None if workers == 1 else multiprocessing.get_context("fork").Pool(workers)
        results = map(_generate, tasks) if pool is None else pool.imap(_generate, tasks)
        try:
            for task, (task_records, task_counts) in zip(tasks, results):
                records.extend(task_records)
                counts += task_counts
                bar.update(task[2] - task[1])
        finally:
            if pool is not None:
                pool.terminate()
            _SHARED.clear()

    order = record_order(seed, len(records))
    os.makedirs(output_dir, exist_ok=True)
    bounds = shard_boundaries(len(records), num_shards)
    names = [shard_name(i, num_shards) for i in range(num_shards)]
    with _progress_bar(num_shards, "shards", "writing", progress) as bar:
        for index, name in enumerate(names):
            shard_order = order[bounds[index] : bounds[index + 1]]
            write_records_atomically(os.path.join(output_dir, name), (records[i] for i in shard_order))
            bar.update(1)
    for name in sorted(set(old_records) - set(names)):
        os.remove(os.path.join(output_dir, name))

    summary = pretraining_summary(
        files, names, corpus_statistics(corpus, single_sentence_documents), counts,
        time.perf_counter() - start_time, pairing, settings,
    )
    summary_path = os.path.join(output_dir, SUMMARY_FILE)
    with open(summary_path + ".incomplete", "w") as stream:
        json.dump(summary, stream, indent=2)
    os.replace(summary_path + ".incomplete", summary_path)
    return summary


def _beam_pipeline():
    """The `beam_pipeline` module, or an `ArgumentError` saying how to install Apache Beam."""
    try:
        beam_pipeline = importlib.import_module("keras_bert_app.data.beam_pipeline")
    except ModuleNotFoundError as error:
        if not (error.name or "").startswith("apache_beam"):
            raise
        raise errors.ArgumentError(
            "runner", f"runner 'beam' needs Apache Beam, which is not installed: {BEAM_INSTALL_HINT}."
        ) from None
    return beam_pipeline
