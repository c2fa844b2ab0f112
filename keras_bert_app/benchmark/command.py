"""`keras-bert-app bench`: BERT speed side by side with keras-hub and HF transformers.

In one run on one machine, for a preset (random weights) at one sequence
length, it times:
- a pretraining step (AdamW as `BertPretrainer.compile()` uses it): ours
  (`BertPretrainer`, MLM + NSP, MLM logits at the masked positions only) on
  each Keras backend, keras-hub `BertMaskedLM` (MLM only: keras-hub has no
  NSP head) on the same backends, HF transformers `BertForPreTraining` (torch
  AdamW; MLM logits at every position, NSP);
- inference (encoder forward, sequence + pooled output to host memory) at
  several batch sizes: ours `BertEncoder`, keras-hub `BertBackbone`, HF
  `BertModel`;
- and, from a source checkout, the tokenizer and pretraining-data benchmarks
  (`tools/benchmark_tokenizer.py`, `tools/benchmark_pretraining_data.py`).

Every model runs in its own subprocess (KERAS_BACKEND set there), so our JAX
and PyTorch runs never import TensorFlow; keras-hub imports TensorFlow and is
skipped where TensorFlow is not installed. Warmup steps (compilation) are not
timed; a row reports the median of the timed steps. It prints one table and
writes JSON.

    keras-bert-app bench                                   # bert_base_uncased, all backends
    keras-bert-app bench --backends jax --mixed-precision --fused-attention --skip-data   # a GPU: bf16, cuDNN attention
    python tools/benchmark.py --preset bert_tiny_uncased --steps 2 --skip-data

This module runs the command; the rest of `keras_bert_app.benchmark` holds
the planning (`plan`), the measured sides (`worker`, `peers`), FLOPs and
peaks (`flops`), the table (`report`) and the data benchmarks.
"""

import argparse
import json
import pathlib
import sys
import time

from keras_bert_app.benchmark.data_benchmarks import data_summary, run_data_benchmarks
from keras_bert_app.benchmark.flops import FLOPS_FORMULA, measure_cpu_peak_flops, peak_settings
from keras_bert_app.benchmark.plan import planned_runs, worker_spec
from keras_bert_app.benchmark.processes import run_worker_process
from keras_bert_app.benchmark.report import (
    MODEL_NOTES,
    WORKER_KEYS,
    compute_ratios,
    compute_rows,
    describe_machine,
    format_table,
)
from keras_bert_app.benchmark.worker import run_worker


def add_arguments(parser):
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
        "--batch-size", type=int, default=8, help="training batch, all implementations (default: %(default)s)"
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
        "--timeout", type=int, default=1800, help="seconds allowed to each subprocess (default: %(default)s)"
    )
    parser.add_argument(
        "--in-process", action="store_true",
        help="run every model in this process instead of one subprocess each (only with "
        "--backends set to the current KERAS_BACKEND; for quick looks and tests)",
    )
    parser.add_argument("--output", default="bench.json", help="JSON results file (default: %(default)s)")


def run(args):
    started = time.perf_counter()
    spec, backends = worker_spec(args)
    output = pathlib.Path(args.output)
    if not output.parent.is_dir():
        raise FileNotFoundError(f"--output folder {output.parent} does not exist.")
    notes = []
    runs = planned_runs(args, backends, notes)
    print(
        f"bench: {args.preset} (random weights), seq {args.sequence_length}, training batch "
        f"{args.batch_size} with {args.max_predictions} masked positions, inference batches "
        f"{spec['inference_batch_sizes']}, {args.warmup} warmup + {args.steps} timed steps, "
        f"jit {args.jit}, mixed precision {args.mixed_precision}, fused attention {args.fused_attention}",
        flush=True,
    )
    cpu_peaks = []
    if args.peak_tflops is None:
        cpu_peaks.append(measure_cpu_peak_flops())
        print(f"CPU peak estimate: {cpu_peaks[0] / 1e12:.3f} TFLOP/s (best float32 2048x2048 NumPy matmul)", flush=True)
    workers, failures = [], 0
    for model, backend in runs:
        if args.in_process:
            print(f"\n== {model} on {backend} (in this process)", flush=True)
            result = run_worker(dict(spec, model=model))
        else:
            result = run_worker_process(dict(spec, model=model), backend, args.timeout)
        if "error" in result:
            failures += 1
            notes.append(f"{model} on {backend} failed: {result['error']}")
        else:
            workers.append(result)
            notes.extend(result.get("notes", []))

    if cpu_peaks:  # again after the models: on a shared machine, the less loaded moment counts
        cpu_peaks.append(measure_cpu_peak_flops())
    cpu_peak = max(cpu_peaks, default=None)
    rows = compute_rows(workers, spec, args.peak_tflops, cpu_peak)
    ratios = compute_ratios(rows)
    data = {} if args.skip_data else run_data_benchmarks(args, notes)
    if args.skip_data:
        notes.append("tokenizer and data benchmarks skipped (--skip-data).")
    elif data:
        data["summary"] = data_summary(data)
    report = {
        "settings": dict(
            spec,
            backends=backends,
            jit_compile={backend: args.jit and backend != "torch" for backend in backends},
            flops_formula=FLOPS_FORMULA,
            peak=peak_settings(args.peak_tflops, cpu_peaks),
            command=sys.argv,
        ),
        "machine": describe_machine(workers),
        "workers": [{key: w[key] for key in WORKER_KEYS if key in w} for w in workers],
        "rows": rows,
        "ratios": ratios,
        "data": data,
        "notes": notes,
        "wall_seconds": round(time.perf_counter() - started, 1),
    }
    print()
    print(format_table(rows))
    for note in [*MODEL_NOTES.values(), *notes, *data.get("summary", [])]:
        print(f"- {note}")
    print(f"- MFU: {FLOPS_FORMULA}")
    print(f"- peak: {report['settings']['peak']['description']}")
    output.write_text(json.dumps(report, indent=2))
    print(f"total wall time {report['wall_seconds']:.0f} s; results in {output}")
    return 1 if failures else 0


def main(argv=None):
    """Entry point of `tools/benchmark.py` and of `python -m keras_bert_app.benchmark.command`."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="benchmark", description=__doc__.split("\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (ValueError, FileNotFoundError) as error:
        print(f"benchmark: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
