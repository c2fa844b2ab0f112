"""`create-pretraining-data --runner beam`: the local generator as an Apache Beam pipeline.

The same records as the local command, made past one machine (Dataflow,
Flink, Spark, or the DirectRunner's processes). A short chain of named
transforms whose per-element functions are the local command's own
(`pretraining_tasks`, which both import):

    Files -> Tokenize (one file an element: `tokenize_corpus`) -> Corpus
    (`concatenate_corpora`, a side input) -> Tasks (`pretraining_tasks`:
    pass, group of documents) -> Generate (`generate_task`) -> Shard
    (`record_order`) -> Write (one TFRecord file a shard)

Determinism comes from keys, not from order: every document draws from the
generator of `(seed, pass, document index)` whichever worker makes it, a
record's place is its task's offset plus its rank in the task, and the
shuffle before sharding is the local command's permutation. So the shards
are byte-identical to the local command's for the same corpus, settings and
seed, whatever the runner and worker count.

Each worker holds the tokenized corpus (next sentences come from any
document). Shards are written to a hidden folder and moved into place when
the pipeline has succeeded; `pretraining_data.json` comes last.
"""

import json
import os
import tempfile
import time
import uuid

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.pvalue import AsSingleton

from keras_bert_app import errors
from keras_bert_app.data.beam_files import check_corpus_files, check_output, corpus_files
from keras_bert_app.data.corpus import concatenate_corpora
from keras_bert_app.data.corpus import tokenize_corpus
from keras_bert_app.data.pretraining_instances import check_pairing_corpus
from keras_bert_app.data.pretraining_records import RECORD_SUFFIX
from keras_bert_app.data.pretraining_records import SUMMARY_FILE
from keras_bert_app.data.pretraining_records import shard_boundaries
from keras_bert_app.data.pretraining_records import shard_name
from keras_bert_app.data.pretraining_records import write_records_atomically
from keras_bert_app.data.pretraining_summary import corpus_statistics
from keras_bert_app.data.pretraining_summary import pretraining_summary
from keras_bert_app.data.pretraining_tasks import generate_task
from keras_bert_app.data.pretraining_tasks import pretraining_tasks
from keras_bert_app.data.pretraining_tasks import record_order
from keras_bert_app.data.segmentation import resolve_segmenter
from keras_bert_app.data.segmentation import summary_line

COUNTERS = "keras_bert_app"  # the namespace of the pipeline's metrics
STATISTICS_FILE = "statistics.json"


def pipeline_options(beam_options, workers):
    """`PipelineOptions` of the user's options, unchanged, over the default DirectRunner in multi-process mode.

    Args:
        beam_options: dict of option name to value (`{"runner": "DataflowRunner"}`),
            or list of flags (`["--runner=FlinkRunner", "--flink_master=host:8081"]`).
        workers: int. The DirectRunner's processes (`direct_num_workers`) unless given.

    Raises:
        keras_bert_app.errors.ArgumentError: an option Beam does not know.
    """
    flags = _flags(beam_options)
    options = PipelineOptions(flags)
    unknown = sorted(set(options.get_all_options(retain_unknown_options=True)) - set(options.get_all_options()))
    if unknown:
        raise errors.ArgumentError(
            "beam_options",
            f"Unknown Beam pipeline option(s) {unknown} (from {flags}): expected options of "
            "apache_beam.options.pipeline_options, such as runner, project, region, temp_location, "
            "flink_master, direct_num_workers.",
        )
    given = {flag[2:].split("=", 1)[0].replace("-", "_") for flag in flags}
    defaults = {"runner": "DirectRunner", "direct_running_mode": "multi_processing", "direct_num_workers": workers}
    return PipelineOptions(flags + [f"--{key}={value}" for key, value in defaults.items() if key not in given])


def _flags(beam_options):
    if isinstance(beam_options, dict):
        return [f"--{key}" if value is True else f"--{key}={value}" for key, value in beam_options.items()]
    if isinstance(beam_options, str) or not all(isinstance(flag, str) for flag in beam_options):
        raise errors.ArgumentTypeError(
            "beam_options", f"beam_options must be a dict or a list of '--key=value' flags; got {beam_options!r}."
        )
    return [flag if flag.startswith("--") else f"--{flag}" for flag in beam_options]


def run_pipeline(input_files, output_dir, tokenizer, maker, settings, *, segmenter, entity_masking, num_shards,
                 workers, overwrite, beam_options, log=None):
    """Run the pipeline and write the shards and `pretraining_data.json` as the local command does.

    Called by `create_pretraining_data(..., runner="beam")`, which checks
    the settings and builds `tokenizer` and `maker`. Bad input is refused
    here, before the pipeline starts.

    Returns:
        dict, the summary written to `pretraining_data.json`.
    """
    options = pipeline_options(beam_options, workers)
    files = corpus_files(input_files)
    check_corpus_files(files)
    old_records = check_output(output_dir, overwrite)
    if FileSystems.get_scheme(output_dir) is None:
        os.makedirs(output_dir, exist_ok=True)
    temporary = FileSystems.join(output_dir, f".beam-incomplete-{uuid.uuid4().hex}")
    FileSystems.mkdirs(temporary)
    names = [shard_name(i, num_shards) for i in range(num_shards)]
    start_time = time.perf_counter()
    try:
        pipeline = beam.Pipeline(options=options)
        build_pipeline(pipeline, files, temporary, tokenizer, maker, segmenter=segmenter,
                       entity_masking=entity_masking, num_shards=num_shards, seed=settings["seed"],
                       dupe_factor=settings["dupe_factor"])
        try:
            result = pipeline.run()
            result.wait_until_finish()
        except errors.KerasBertAppError:
            raise
        except Exception as error:
            raise errors.DataError(f"The Beam pipeline failed: {_last_line(error)}") from None
        with FileSystems.open(FileSystems.join(temporary, STATISTICS_FILE)) as stream:
            statistics = json.loads(stream.read().decode("utf-8"))
        summary = pretraining_summary(files, names, statistics["corpus"], statistics["counts"],
                                            time.perf_counter() - start_time, maker.pairing, settings)
        _move_into_place(output_dir, temporary, names, old_records, summary)
    finally:
        _remove_folder(temporary)
    if summary["segmentation"] is not None and log is not None:
        log(summary_line(summary["segmentation"]))
    return summary


def _remove_folder(folder):
    """Delete the hidden folder and what is in it (object stores have no folders: delete its files)."""
    if FileSystems.get_scheme(folder) is not None:
        inside = FileSystems.match([FileSystems.join(folder, "*")])[0].metadata_list
        if inside:
            FileSystems.delete([metadata.path for metadata in inside])
    if FileSystems.exists(folder):
        FileSystems.delete([folder])


def _last_line(error):
    """The line of a worker's exception that names it (the runner wraps it in its own traceback)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    named = [line for line in lines if line.split(":", 1)[0].rsplit(".", 1)[-1].endswith(("Error", "Exception"))]
    return (named or lines or [type(error).__name__])[-1]


def _move_into_place(output_dir, temporary, names, old_records, summary):
    """The shards into `output_dir` (an old summary removed first), old extra shards removed, the summary last."""
    summary_path = FileSystems.join(output_dir, SUMMARY_FILE)
    if FileSystems.exists(summary_path):
        FileSystems.delete([summary_path])
    FileSystems.rename([FileSystems.join(temporary, name) for name in names],
                       [FileSystems.join(output_dir, name) for name in names])
    stale = sorted(set(old_records) - set(names))
    if stale:
        FileSystems.delete([FileSystems.join(output_dir, name) for name in stale])
    incomplete = FileSystems.join(temporary, SUMMARY_FILE)
    with FileSystems.create(incomplete) as stream:
        stream.write(json.dumps(summary, indent=2).encode("utf-8"))
    FileSystems.rename([incomplete], [summary_path])


def build_pipeline(pipeline, files, temporary, tokenizer, maker, *, segmenter, entity_masking, num_shards, seed,
                   dupe_factor):
    """The transforms, from the corpus files to the shards and statistics written in `temporary`."""
    parts = (
        pipeline
        | "Files" >> beam.Create(list(enumerate(files)))
        | "Reshuffle files" >> beam.Reshuffle()
        | "Tokenize" >> beam.ParDo(TokenizeFile(tokenizer, segmenter, entity_masking))
    )
    corpus = (
        parts
        | "Collect files" >> beam.combiners.ToList()
        | "Corpus" >> beam.Map(assemble_corpus, files, maker.pairing)
    )
    generated = (
        corpus
        | "Tasks" >> beam.FlatMap(lambda pair: pretraining_tasks(pair[0].num_documents, dupe_factor))
        | "Reshuffle tasks" >> beam.Reshuffle()
        | "Generate" >> beam.ParDo(GenerateTask(maker), AsSingleton(corpus))
    )
    plan = (
        generated
        | "Task sizes" >> beam.Map(lambda element: (element[0], element[2]))
        | "Collect task sizes" >> beam.combiners.ToList()
        | "Plan shards" >> beam.Map(shard_plan, seed, num_shards)
    )
    _ = plan | "Statistics" >> beam.Map(write_statistics, AsSingleton(corpus), temporary)
    placed = generated | "Shard" >> beam.FlatMap(place_records, AsSingleton(plan))
    every_shard = pipeline | "Shard names" >> beam.Create([(index, None) for index in range(num_shards)])
    _ = (
        {"records": placed, "shard": every_shard}
        | "Group shards" >> beam.CoGroupByKey()
        | "Write" >> beam.Map(write_shard, temporary, num_shards)
    )


class TokenizeFile(beam.DoFn):
    """`(file index, path)` -> `(file index, TokenizedCorpus)`: `tokenize_corpus` on one file, read by `FileSystems`.

    The tokenizer travels as its class and config and is rebuilt once per
    worker; the segmenter (`"jieba"`) is resolved there too.
    """

    def __init__(self, tokenizer, segmenter, entity_masking):
        self.tokenizer_spec = _tokenizer_spec(tokenizer)
        self.segmenter, self.entity_masking = segmenter, entity_masking

    def setup(self):
        kind, config = self.tokenizer_spec
        self.tokenizer = kind.from_config(config) if config is not None else kind
        self.segment = resolve_segmenter(self.segmenter, entities=self.entity_masking)

    def process(self, element):
        index, path = element
        part = tokenize_corpus([path], self.tokenizer, segmenter=self.segment,
                               open_binary=FileSystems.open, allow_empty=True)
        beam.metrics.Metrics.counter(COUNTERS, "files").inc()
        beam.metrics.Metrics.counter(COUNTERS, "corpus_tokens").inc(part.num_tokens)
        yield index, part


def _tokenizer_spec(tokenizer):
    """`(class, config)` rebuilding the tokenizer in a worker (`(tokenizer, None)` without `get_config`)."""
    if callable(getattr(tokenizer, "get_config", None)) and callable(getattr(type(tokenizer), "from_config", None)):
        return type(tokenizer), tokenizer.get_config()
    return tokenizer, None


def assemble_corpus(parts, files, pairing):
    """The files' corpora in file order, as one; refused as the local command refuses it."""
    corpus = concatenate_corpora([part for _, part in sorted(parts, key=lambda item: item[0])])
    if corpus.num_documents == 0:
        raise errors.DataError(
            f"The corpus {files} holds no document: expected one sentence per line with a blank line between "
            "documents, got only blank lines or lines that tokenize to nothing."
        )
    return corpus, check_pairing_corpus(corpus, pairing, f"The corpus {files}")


class GenerateTask(beam.DoFn):
    """Task `(pass, start, end)` -> `(task, records, counts)` by `generate_task`; the corpus is a side input."""

    def __init__(self, maker):
        self.maker = maker

    def process(self, task, corpus_and_skipped):
        counter = beam.metrics.Metrics.counter
        corpus = corpus_and_skipped[0]
        records, counts = generate_task(corpus, self.maker, task)
        counter(COUNTERS, "documents").inc(task[2] - task[1])
        counter(COUNTERS, "instances").inc(int(counts[0]))
        counter(COUNTERS, "tokens").inc(int(counts[1]))
        counter(COUNTERS, "masked_positions").inc(int(counts[2]))
        if self.maker.pairing == "sop":  # one-sentence documents give no sentence-order pair
            sizes = np.diff(corpus.document_starts[task[1] : task[2] + 1])
            counter(COUNTERS, "skipped_documents").inc(int((sizes < 2).sum()))
        yield task, records, [int(count) for count in counts]


def shard_plan(task_sizes, seed, num_shards):
    """Where each record goes: task offsets, each record's position in the shuffle, shard bounds, total counts."""
    task_sizes = sorted(task_sizes)
    sizes = [counts[0] for _, counts in task_sizes]
    offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
    num_records = int(offsets[-1])
    order = record_order(seed, num_records)
    positions = np.empty(num_records, np.int64)
    positions[order] = np.arange(num_records)
    return {
        "offsets": {task: int(offset) for (task, _), offset in zip(task_sizes, offsets[:-1].tolist())},
        "positions": positions,
        "bounds": shard_boundaries(num_records, num_shards),
        "counts": np.sum([counts for _, counts in task_sizes], axis=0, dtype=np.int64).reshape(-1).tolist()
        if task_sizes else [0] * 5,
    }


def place_records(element, plan):
    """`(task, records, counts)` -> `(shard, (positions, records))`, one element per shard the task's records go to."""
    task, records, _ = element
    offset = plan["offsets"][task]
    positions = plan["positions"][offset : offset + len(records)]
    shards = np.searchsorted(plan["bounds"], positions, side="right") - 1
    for shard in np.unique(shards).tolist():
        chosen = np.flatnonzero(shards == shard).tolist()
        yield shard, (positions[chosen].tolist(), [records[i] for i in chosen])


def write_shard(element, temporary, num_shards):
    """Write one shard, its records in shuffle order, to `temporary` (through a local file for remote ones)."""
    shard, grouped = element
    pairs = [pair for positions, records in grouped["records"] for pair in zip(positions, records)]
    records = (record for _, record in sorted(pairs, key=lambda pair: pair[0]))
    path = FileSystems.join(temporary, shard_name(shard, num_shards))
    if FileSystems.get_scheme(path) is None:
        write_records_atomically(path, records)
        return path
    with tempfile.TemporaryDirectory() as directory:
        staged = os.path.join(directory, "shard" + RECORD_SUFFIX)
        write_records_atomically(staged, records)
        with open(staged, "rb") as source, FileSystems.create(path) as target:
            while chunk := source.read(1 << 24):
                target.write(chunk)
    return path


def write_statistics(plan, corpus_and_skipped, temporary):
    """The corpus' and the instances' counts, for the driver's `pretraining_data.json`."""
    corpus, skipped = corpus_and_skipped
    statistics = {"corpus": corpus_statistics(corpus, skipped), "counts": plan["counts"]}
    with FileSystems.create(FileSystems.join(temporary, STATISTICS_FILE)) as stream:
        stream.write(json.dumps(statistics).encode("utf-8"))
