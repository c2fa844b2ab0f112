"""Benchmark `BertTokenizer` against HF `tokenizers` and keras-hub on real text.

Tokenizes every line of a corpus (by default ../shared/data/corpus/
enwiki_sample.txt, 2.6 MB of Wikipedia) with:
- ours: `keras_bert_app.BertTokenizer` (TF ops; eager call on a list of str);
- HF: `tokenizers.BertWordPieceTokenizer` (Rust, multithreaded `encode_batch`),
  the reference for the ids, with special tokens off and its per-word cap set
  to ours (200 characters, the original BERT's; HF's default is 100);
- keras-hub: `keras_hub.tokenizers.BertTokenizer`, as called eagerly (its pure
  Python path) and on its TensorFlow path (called inside a tf.function).

It checks that our ids equal HF's on every line (exit status 1 if not),
reports how many lines keras-hub gets different, and prints throughput
(MB/s, tokens/s) for a whole-corpus batch and for single strings (one call a
line), with the ratios ours/HF and ours/keras-hub from this same run.

    python tools/benchmark_tokenizer.py                 # uncased and cased vocabularies
    python tools/benchmark_tokenizer.py --only uncased --corpus my.txt
"""

import argparse
import os
import pathlib
import statistics
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
CONFIGS = {
    "uncased": (SHARED_DATA / "vocab" / "bert_uncased_vocab.txt", True),
    "cased": (SHARED_DATA / "vocab" / "bert_cased_vocab.txt", False),
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--corpus", default=str(SHARED_DATA / "corpus" / "enwiki_sample.txt"),
        help="UTF-8 text, one sentence a line (default: %(default)s)",
    )
    parser.add_argument("--only", choices=sorted(CONFIGS), help="run one vocabulary only")
    parser.add_argument("--vocab", help="a vocab.txt instead of the shared ones (with --lowercase/--no-lowercase)")
    parser.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--repeats", type=int, default=5, help="batch timings: the median of this many")
    parser.add_argument(
        "--single-lines", type=int, default=500,
        help="single-string timings: one call for each of the first N lines (default 500)",
    )
    parser.add_argument("--skip-keras-hub", action="store_true", help="leave keras-hub out")
    return parser.parse_args(argv)


def interleaved_medians(fns, repeats):
    """{name: (median wall s, median CPU s)}, the callables run in turn each
    round, so that a change in machine load hits all of them alike."""
    for fn in fns.values():
        fn()  # warm up (graph tracing, caches)
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return {
        name: (statistics.median(t[0] for t in runs), statistics.median(t[1] for t in runs))
        for name, runs in times.items()
    }


def report(name, seconds, num_bytes, num_tokens):
    wall, cpu = seconds
    print(
        f"  {name:30s} {wall:8.3f} s (cpu {cpu:7.3f} s) {num_bytes / wall / 1e6:8.2f} MB/s "
        f"{num_tokens / wall / 1e3:9.1f} k tokens/s"
    )
    return wall


def run_config(label, vocab, lowercase, lines, args):
    import tensorflow as tf
    from tokenizers import BertWordPieceTokenizer

    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    print(f"\n== {label}: {vocab} (lowercase={lowercase}) ==")
    ours = BertTokenizer(vocabulary=str(vocab), lowercase=lowercase)
    hf = BertWordPieceTokenizer(
        str(vocab), lowercase=lowercase, strip_accents=None, clean_text=True,
        handle_chinese_chars=True,
    )
    hf._tokenizer.model.max_input_chars_per_word = ours.max_input_chars_per_word

    # --- equality on every line ---
    hf_ids = [encoding.ids for encoding in hf.encode_batch(lines, add_special_tokens=False)]
    our_ids = ours(lines).to_list()
    mismatched = [i for i, (a, b) in enumerate(zip(our_ids, hf_ids)) if a != b]
    num_tokens = sum(len(ids) for ids in hf_ids)
    print(
        f"  ids equal to HF on {len(lines) - len(mismatched)} / {len(lines)} lines "
        f"({num_tokens} tokens)"
    )
    for i in mismatched[:5]:
        print(f"    line {i + 1}: {lines[i][:120]!r}")
    keras_hub_tokenizers = {}
    if not args.skip_keras_hub:
        import keras_hub

        keras_hub_tokenizer = keras_hub.tokenizers.BertTokenizer(
            vocabulary=str(vocab), lowercase=lowercase
        )
        # Inside a tf.function (as in tf.data) keras-hub runs its TF ops;
        # called eagerly it runs a pure Python tokenizer.
        keras_hub_graph = tf.function(
            keras_hub_tokenizer, input_signature=[tf.TensorSpec([None], tf.string)]
        )
        keras_hub_tokenizers = {
            "keras-hub (TF path)": lambda text: keras_hub_graph(tf.reshape(text, [-1])),
            "keras-hub (eager default)": keras_hub_tokenizer,
        }
        kh_ids = keras_hub_graph(tf.constant(lines)).to_list()
        kh_bad = sum(a != b for a, b in zip(kh_ids, hf_ids))
        print(f"  keras-hub ids differ from HF on {kh_bad} / {len(lines)} lines")

    # --- batch throughput ---
    num_bytes = sum(len(line.encode("utf-8")) for line in lines)
    print(f"  batch: {len(lines)} lines, {num_bytes / 1e6:.2f} MB, median of {args.repeats}")
    fns = {
        "ours": lambda: ours(lines),
        "HF": lambda: hf.encode_batch(lines, add_special_tokens=False),
    }
    if keras_hub_tokenizers:
        fns["keras-hub"] = lambda: keras_hub_tokenizers["keras-hub (TF path)"](lines)
    labels = {"ours": "ours", "HF": "HF tokenizers (encode_batch)", "keras-hub": "keras-hub (TF path)"}
    batch = {
        name: report(labels[name], seconds, num_bytes, num_tokens)
        for name, seconds in interleaved_medians(fns, args.repeats).items()
    }

    # --- single strings ---
    few = lines[: args.single_lines]
    few_bytes = sum(len(line.encode("utf-8")) for line in few)
    few_tokens = sum(len(ids) for ids in hf_ids[: len(few)])
    print(f"  single strings: {len(few)} calls of one line each, {few_bytes / 1e3:.0f} kB")

    def one_by_one(fn):
        return lambda: [fn(line) for line in few]

    fns = {
        "ours": one_by_one(ours),
        "HF tokenizers (encode)": one_by_one(lambda s: hf.encode(s, add_special_tokens=False)),
    }
    fns.update({name: one_by_one(kh) for name, kh in keras_hub_tokenizers.items()})
    medians = interleaved_medians(fns, 1)
    single = {name: report(name, seconds, few_bytes, few_tokens) for name, seconds in medians.items()}
    single["HF"] = single.pop("HF tokenizers (encode)")
    if keras_hub_tokenizers:  # the faster of its two ways
        single["keras-hub"] = min(single.pop(name) for name in keras_hub_tokenizers)

    for mode, times in (("batch", batch), ("single-string", single)):
        ratios = ", ".join(
            f"ours/{peer} = {times[peer] / times['ours']:.2f}x" for peer in times if peer != "ours"
        )
        print(f"  speed ratio ({mode}; >1 means ours is faster): {ratios}")
    return not mismatched


def main(argv=None):
    args = parse_args(argv)
    corpus = pathlib.Path(args.corpus)
    if not corpus.is_file():
        print(f"benchmark_tokenizer: corpus {corpus} does not exist", file=sys.stderr)
        return 2
    lines = corpus.read_text(encoding="utf-8").split("\n")
    if args.vocab:
        configs = {"custom": (pathlib.Path(args.vocab), args.lowercase)}
    elif args.only:
        configs = {args.only: CONFIGS[args.only]}
    else:
        configs = CONFIGS
    print(f"corpus {corpus}: {len(lines)} lines, cpus {os.cpu_count()}")
    all_equal = True
    for label, (vocab, lowercase) in configs.items():
        all_equal &= run_config(label, vocab, lowercase, lines, args)
    print("\nids identical to HF on every line" if all_equal else "\nMISMATCH: ids differ from HF")
    return 0 if all_equal else 1


if __name__ == "__main__":
    sys.path.insert(0, str(REPO_ROOT))
    sys.exit(main())
