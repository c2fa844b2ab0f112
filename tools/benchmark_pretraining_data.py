"""Benchmark the pretraining-data generators on the Wikipedia sample.

Measures instances/s and corpus MB/s (corpus bytes x passes / seconds) for:
- our static generator (`create_pretraining_data`) with 1 worker and with
  all workers, TFRecords written;
- our dynamic pipeline (one epoch of `dynamic_pretraining_dataset` batches);
- the plain single-process Python port of the original script
  (`tools/reference_create_pretraining_data.py`) with its pure-Python
  tokenizer, as users of the original run it today;
- the same port with our tokenizer, to isolate the gain of pairing, masking
  and writing.

Tokenizers are built and warmed up before timing; everything else (reading,
tokenizing, pairing, masking, serializing, writing) is timed.

    python tools/benchmark_pretraining_data.py [--dupe-factor 10] [--skip-reference]
"""

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

import reference_create_pretraining_data as reference  # noqa: E402

SHARED = REPO.parent / "shared" / "data"


def timed(function):
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def rates(name, instances, seconds, corpus_bytes, passes):
    return {
        "name": name,
        "instances": instances,
        "seconds": round(seconds, 2),
        "instances_per_s": round(instances / seconds, 1),
        "corpus_mb_per_s": round(corpus_bytes * passes / seconds / 1e6, 3),
    }


def run_static(corpus, tokenizer, args, workers, directory):
    from keras_bert_app.data.create_pretraining_data import create_pretraining_data

    summary, seconds = timed(lambda: create_pretraining_data(
        str(corpus), directory, tokenizer, max_seq_length=args.max_seq_length,
        dupe_factor=args.dupe_factor, seed=args.seed, num_shards=args.num_shards,
        workers=workers, progress=False,
    ))
    return summary["instances"], seconds


def run_dynamic(corpus, tokenizer, args):
    """Seconds of the first epoch (with tokenizing) and of the second."""
    from keras_bert_app.data.dynamic_pretraining import dynamic_pretraining_dataset

    start = time.perf_counter()
    dataset = dynamic_pretraining_dataset(
        str(corpus), tokenizer, batch_size=256, max_seq_length=args.max_seq_length, seed=args.seed
    )
    epochs = []
    for _ in range(2):
        instances = sum(int(y["nsp"].shape[0]) for _, y, _ in dataset)
        epochs.append((instances, time.perf_counter() - start))
        start = time.perf_counter()
    return epochs


def run_reference(corpus, tokenizer, args, path):
    def generate():
        documents = reference.read_documents([str(corpus)], tokenizer)
        instances = reference.create_instances(
            documents, tokenizer.vocabulary, args.max_seq_length, args.dupe_factor, seed=args.seed
        )
        token_ids = {token: i for i, token in enumerate(tokenizer.vocabulary)}
        reference.write_instances(instances, token_ids, path, args.max_seq_length, 20)
        return len(instances)

    return timed(generate)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(SHARED / "corpus" / "enwiki_sample.txt"))
    parser.add_argument("--vocab", default=str(SHARED / "vocab" / "bert_uncased_vocab.txt"))
    parser.add_argument("--dupe-factor", type=int, default=10)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--num-shards", type=int, default=4)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="'all workers'")
    parser.add_argument("--skip-reference", action="store_true", help="skip the slow pure-Python port")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)

    import tensorflow as tf

    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    corpus = pathlib.Path(args.corpus)
    corpus_bytes = corpus.stat().st_size
    tokenizer = BertTokenizer(vocabulary=args.vocab)
    tokenizer(tf.constant(["warm up"]))
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        for workers in sorted({1, args.workers}):
            instances, seconds = run_static(corpus, tokenizer, args, workers, os.path.join(scratch, f"w{workers}"))
            results.append(rates(f"static, {workers} worker(s)", instances, seconds, corpus_bytes, args.dupe_factor))
            print(results[-1], flush=True)
        (first, first_seconds), (second, second_seconds) = run_dynamic(corpus, tokenizer, args)
        results.append(rates("dynamic, epoch 1 (with tokenizing)", first, first_seconds, corpus_bytes, 1))
        results.append(rates("dynamic, epoch 2", second, second_seconds, corpus_bytes, 1))
        print(results[-2:], flush=True)
        ours_tokens = reference.FastTokens(args.vocab)
        ours_tokens.tokenize_lines(["warm up"])
        instances, seconds = run_reference(corpus, ours_tokens, args, os.path.join(scratch, "port_ours.tfrecord"))
        results.append(rates("python port + our tokenizer", instances, seconds, corpus_bytes, args.dupe_factor))
        print(results[-1], flush=True)
        if not args.skip_reference:
            python_tokens = reference.PythonBertTokenizer(args.vocab)
            instances, seconds = run_reference(corpus, python_tokens, args, os.path.join(scratch, "port.tfrecord"))
            results.append(rates("python port (original, pure Python)", instances, seconds, corpus_bytes, args.dupe_factor))
            print(results[-1], flush=True)

    by_name = {r["name"]: r for r in results}
    baselines = [n for n in ("python port (original, pure Python)", "python port + our tokenizer") if n in by_name]
    print(f"\ncorpus {corpus.name}: {corpus_bytes / 1e6:.2f} MB, dupe factor {args.dupe_factor}, "
          f"max_seq_length {args.max_seq_length}, {os.cpu_count()} CPU(s)")
    print(f"{'generator':40s} {'instances/s':>12s} {'corpus MB/s':>12s} " + " ".join(f"{'x ' + b[:22]:>25s}" for b in baselines))
    for r in results:
        ratios = " ".join(f"{r['instances_per_s'] / by_name[b]['instances_per_s']:25.1f}" for b in baselines)
        print(f"{r['name']:40s} {r['instances_per_s']:12.1f} {r['corpus_mb_per_s']:12.3f} {ratios}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
