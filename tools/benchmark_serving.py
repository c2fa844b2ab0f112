"""Serving latency of length buckets: the exported classifier, dynamic vs fixed-S, at batch 1.

    python tools/benchmark_serving.py [--sequence-length 512] [--repeats 30]
        [--preset NAME_OR_FOLDER | --layers 6 --hidden 384 --heads 12 --intermediate 1536]

Exports one classifier (two classes, on top of a MiniLM-L6-sized encoder with
fresh weights by default, or `--preset`: a built-in size, fresh weights, or
a folder with weights) twice: with length buckets (the default export) and
with `bucketing=False` (every request runs at S). Then times
`serving_default` on one raw string of 10, 60 and 300 words of English
Wikipedia (`--corpus`), alternating the two exports call by call, and prints
p50/p95 latency, the speed-up of p50, and the largest difference between the
two exports' probabilities.
"""

import argparse
import pathlib
import tempfile
import time

CORPUS = pathlib.Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "corpus" / "enwiki_sample.txt"
WORDS = (10, 60, 300)


def _request_texts(corpus, counts):
    words = pathlib.Path(corpus).read_text(encoding="utf-8").split()
    start = 1000  # past the first article's opening lines
    return {count: " ".join(words[start : start + count]) for count in counts}


def _model(args):
    from keras_bert_app.models.bert_classifier import BertClassifier
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor

    if args.preset:
        from keras_bert_app.convert.resolve import resolve_preset

        # A folder's weights: ours (model.weights.h5) or a foreign checkpoint's (an HF folder's safetensors).
        weights = pathlib.Path(args.preset).is_dir() and resolve_preset(args.preset).has_weights
        encoder = BertEncoder.from_preset(args.preset, load_weights=weights)
        tokenizer_preset = args.preset
        name = f"{args.preset} ({'its weights' if weights else 'fresh weights'})"
    else:
        encoder = BertEncoder(
            vocabulary_size=30522, num_layers=args.layers, num_heads=args.heads, hidden_dim=args.hidden,
            intermediate_dim=args.intermediate, max_sequence_length=max(512, args.sequence_length),
        )
        tokenizer_preset = "bert_base_uncased"
        name = f"L{args.layers} H{args.hidden} A{args.heads} FF{args.intermediate} (fresh weights)"
    preprocessor = BertPreprocessor.from_preset(tokenizer_preset, sequence_length=args.sequence_length)
    return BertClassifier(encoder, num_classes=2), preprocessor, name


def main(argv=None):
    """Prints the table; returns its rows: `{"words", "tokens", "dynamic_p50", "fixed_p50", "max_difference"}` each."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default=None, help="built-in name (fresh weights) or preset/HF folder; default: the sizes below")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=384)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--intermediate", type=int, default=1536)
    parser.add_argument("--sequence-length", type=int, default=512, help="S of the fixed export (default 512)")
    parser.add_argument("--repeats", type=int, default=30, help="timed calls per request and export")
    parser.add_argument("--corpus", default=str(CORPUS), help="text the requests are cut from")
    args = parser.parse_args(argv)

    import keras
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from keras_bert_app.export.serving import export_for_serving

    keras.utils.set_random_seed(0)
    model, preprocessor, name = _model(args)
    texts = _request_texts(args.corpus, WORDS)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        signatures = {}
        for kind, bucketing in (("dynamic", True), ("fixed", False)):
            started = time.perf_counter()
            target = export_for_serving(model, pathlib.Path(folder) / kind, preprocessor, bucketing=bucketing)
            signatures[kind] = tf.saved_model.load(str(target)).signatures["serving_default"]
            print(f"export {kind}: {time.perf_counter() - started:.0f} s")
        print(f"\n{name}, S={args.sequence_length}, batch 1, backend {keras.config.backend()}, "
              f"{tf.config.threading.get_intra_op_parallelism_threads() or 'all'} intra-op threads, {args.repeats} calls each")
        print(f"{'request':>9} {'tokens':>6} {'dyn p50':>8} {'dyn p95':>8} {'fix p50':>8} {'fix p95':>8} "
              f"{'p50 speed-up':>12} {'max |diff|':>10}")
        for count, text in texts.items():
            request = tf.constant([text])
            tokens = int(keras.ops.convert_to_numpy(preprocessor([text])["padding_mask"]).sum())
            outputs = {kind: signature(text=request)["probabilities"].numpy() for kind, signature in signatures.items()}
            for _ in range(2):  # warm up both (first calls compile and allocate)
                for signature in signatures.values():
                    signature(text=request)
            samples = {kind: [] for kind in signatures}
            for _ in range(args.repeats):
                for kind, signature in signatures.items():  # alternate: load changes hit both alike
                    started = time.perf_counter()
                    signature(text=request)["probabilities"].numpy()
                    samples[kind].append(time.perf_counter() - started)
            p50 = {kind: np.percentile(values, 50) * 1e3 for kind, values in samples.items()}
            p95 = {kind: np.percentile(values, 95) * 1e3 for kind, values in samples.items()}
            difference = float(np.abs(outputs["dynamic"] - outputs["fixed"]).max())
            print(f"{f'{count} words':>9} {tokens:>6} {p50['dynamic']:>8.1f} {p95['dynamic']:>8.1f} "
                  f"{p50['fixed']:>8.1f} {p95['fixed']:>8.1f} {p50['fixed'] / p50['dynamic']:>11.2f}x {difference:>10.1e}")
            rows.append({"words": count, "tokens": tokens, "dynamic_p50": p50["dynamic"], "fixed_p50": p50["fixed"],
                         "max_difference": difference})
        print("(latency in ms: the SavedModel's serving_default, tokenization included)")
    return rows


if __name__ == "__main__":
    main()
