"""Does masking every step starve the trainer? Dynamic masking against static records of the same text.

For ELECTRA (`--objective electra`: the corpus packed once into plain
segments and masked after batching, against `nsp` records) and RoBERTa-style
masked LM (`--objective mlm`: full sentences, packed once and masked after
batching, against `full_sentences` records), in one process and one run:

1. the input pipeline alone: batches/s of `pretraining_batches` as the
   trainer reads them (objective's transform included), no model;
2. pretraining: `kba.pretrain` from the corpus and from the records, same
   preset, batch, length and steps, alternating; tokens/s is the median of
   the per-segment throughput after the first segment (compilation).

It prints the ratios dynamic / static and writes them as JSON.

    python tools/benchmark_dynamic_masking.py --output runs/dynamic_masking.json
"""

import argparse
import json
import os
import pathlib
import platform
import statistics
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SHARED = REPO.parent / "shared" / "data"
# objective -> the pairing of its static records
RECORDS_PAIRING = {"electra": "nsp", "mlm": "full_sentences"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(SHARED / "corpus" / "enwiki_sample.txt"))
    parser.add_argument("--preset", default="bert_tiny_uncased")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=64)
    parser.add_argument("--max-predictions", type=int, default=10)
    parser.add_argument("--steps", type=int, default=60, help="pretraining steps of each run")
    parser.add_argument("--segment", type=int, default=20, help="steps per measured segment")
    parser.add_argument("--pipeline-batches", type=int, default=200)
    parser.add_argument("--objectives", nargs="+", default=list(RECORDS_PAIRING), choices=list(RECORDS_PAIRING))
    parser.add_argument("--output", default="dynamic_masking.json")
    args = parser.parse_args(argv)
    result = run(args)
    pathlib.Path(args.output).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"Wrote {args.output}")
    return 0


def run(args):
    import keras
    import tensorflow as tf

    from keras_bert_app import presets
    from keras_bert_app.data.create_pretraining_data import create_pretraining_data

    load_before = os.getloadavg()
    figures = {}
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        vocabulary = presets.preset_dir(args.preset) / "vocab.txt"
        for objective in args.objectives:
            records = folder / f"records_{objective}"
            create_pretraining_data(
                args.corpus, records, str(vocabulary), max_seq_length=args.max_seq_length,
                max_predictions_per_seq=args.max_predictions, dupe_factor=1, pairing=RECORDS_PAIRING[objective],
                progress=False,
            )
            sources = {"static": {"data": str(records / "*.tfrecord")}, "dynamic": {"corpus": args.corpus}}
            pipeline = {name: _pipeline_rate(args, objective, source) for name, source in sources.items()}
            training = {name: [] for name in sources}
            for name in ("static", "dynamic", "static", "dynamic"):  # alternated: a load change hits both
                training[name] += _training_rates(args, objective, sources[name], folder / f"{objective}_{name}_{len(training[name])}")
            rates = {name: statistics.median(values) for name, values in training.items()}
            figures[objective] = {
                "records_pairing": RECORDS_PAIRING[objective],
                "pipeline_batches_per_s": {name: round(value, 1) for name, value in pipeline.items()},
                "pipeline_ratio": round(pipeline["dynamic"] / pipeline["static"], 3),
                "training_tokens_per_s": {name: round(value, 1) for name, value in rates.items()},
                "training_segments_tokens_per_s": {name: [round(v, 1) for v in values] for name, values in training.items()},
                "training_ratio": round(rates["dynamic"] / rates["static"], 3),
            }
            print(f"{objective}: pipeline {pipeline['dynamic']:.0f} vs {pipeline['static']:.0f} batches/s; "
                  f"training {rates['dynamic']:.0f} vs {rates['static']:.0f} tokens/s "
                  f"(dynamic / static {figures[objective]['training_ratio']:.2f})")
    return {
        "command": "python tools/benchmark_dynamic_masking.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}, {platform.processor()}",
        "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "versions": {"keras": keras.__version__, "tensorflow": tf.__version__, "python": platform.python_version()},
        "settings": {"preset": args.preset, "batch_size": args.batch_size, "max_seq_length": args.max_seq_length,
                     "max_predictions": args.max_predictions, "steps": args.steps, "segment": args.segment,
                     "corpus": args.corpus},
        "results": figures,
    }


def _settings(args, objective, source):
    """The arguments of one pretraining run (also what `_pipeline_rate` reads)."""
    return dict(batch_size=args.batch_size, objective=objective, seed=1, **source,
                max_seq_length=args.max_seq_length if "corpus" in source else None,
                max_predictions=args.max_predictions if "corpus" in source else None)


def _pipeline_rate(args, objective, source):
    """Batches/s of the pipeline the trainer reads, alone (the first batches, which build it, not timed)."""
    import dataclasses

    from keras_bert_app.convert import resolve
    from keras_bert_app.training.pretrain_settings import checked_settings
    from keras_bert_app.training.pretraining_inputs import data_shape, pretraining_batches

    settings = checked_settings(
        preset=args.preset, output=pathlib.Path(tempfile.gettempdir()) / "unused", steps=100, learning_rate=None,
        warmup_steps=None, optimizer="adamw", weight_decay=0.01, accumulation_steps=1, strategy="auto", tpu=None,
        mixed_precision=False, jit_compile=True, next_sentence_prediction=True, checkpoint_every=None,
        output_bias_init="zeros", dropout=None, peak_tflops=None, verbose=0, log=None,
        **{"data": None, "corpus": None, **_settings(args, objective, source)},
    )
    resolved = resolve.resolve_preset(args.preset)
    settings = dataclasses.replace(settings, **data_shape(settings, resolved.config["encoder"]))
    iterator = iter(pretraining_batches(settings, resolved))
    for _ in range(5):
        next(iterator)
    started = time.perf_counter()
    for _ in range(args.pipeline_batches):
        next(iterator)
    return args.pipeline_batches / (time.perf_counter() - started)


def _training_rates(args, objective, source, output):
    """tokens/s of each segment after the first of one `kba.pretrain` run."""
    import csv

    import keras_bert_app as kba

    kba.pretrain(args.preset, output, args.steps, checkpoint_every=args.segment, verbose=0, log=None,
                 **_settings(args, objective, source))
    rows = list(csv.DictReader((output / "metrics.csv").open()))
    return [float(row["tokens_per_second"]) for row in rows[1:]]


if __name__ == "__main__":
    sys.exit(main())
