"""The benchmark run: BERT speed side by side with keras-hub and HF transformers.

In one run on one machine, for a preset (random weights) at one sequence
length, it times a pretraining step (ours `BertPretrainer` on each Keras
backend, keras-hub `BertMaskedLM`, HF `BertForPreTraining`), inference at
several batch sizes (`BertEncoder`, `BertBackbone`, `BertModel`) and, from a
source checkout, the tokenizer and pretraining-data benchmarks of tools/.
Every model runs in its own subprocess (KERAS_BACKEND set there); a row
reports the median of the timed steps, after untimed warmup steps.
"""

import json
import os
import pathlib
import sys
import time
from typing import Callable, Sequence

from keras_bert_app import errors
from keras_bert_app.benchmark.data_benchmarks import data_summary, run_data_benchmarks
from keras_bert_app.benchmark.flops import FLOPS_FORMULA, measure_cpu_peak_flops, peak_settings
from keras_bert_app.benchmark.plan import planned_runs, worker_spec
from keras_bert_app.benchmark.processes import run_worker_process
from keras_bert_app.benchmark.report import WORKER_KEYS, compute_ratios, compute_rows, describe_machine
from keras_bert_app.benchmark.worker import run_worker


def _log_line(message: str) -> None:
    print(message, flush=True)


def run_benchmarks(
    preset: str | os.PathLike = "bert_base_uncased",
    backends: Sequence[str] | None = None,
    sequence_length: int = 128,
    batch_size: int = 8,
    inference_batch_sizes: Sequence[int] = (1, 32),
    max_predictions: int = 20,
    steps: int = 3,
    warmup: int = 1,
    jit: bool = True,
    mixed_precision: bool = False,
    fused_attention: bool = False,
    peak_tflops: float | None = None,
    skip_keras_hub: bool = False,
    skip_hf: bool = False,
    skip_data: bool = False,
    data_corpus: str | os.PathLike | None = None,
    data_lines: int = 6000,
    timeout: int = 1800,
    in_process: bool = False,
    output: str | os.PathLike | None = "bench.json",
    log: Callable[[str], None] = _log_line,
) -> dict:
    """Time ours against keras-hub and HF transformers; the results, also written as JSON.

    The stage function behind `keras-bert-app bench` (which prints the
    table: `report.format_table(result["rows"])`).

    Args:
        preset: str or path. Built-in preset name or preset folder; random weights.
        backends: Keras backends for ours and keras-hub (None: those installed).
        sequence_length: int. Tokens per sequence.
        batch_size: int. Training batch, all implementations.
        inference_batch_sizes: ints. Encoder-forward batch sizes.
        max_predictions: int. Masked positions per sequence (<= sequence_length - 2).
        steps: int. Timed steps per measurement; the median is reported.
        warmup: int. Untimed steps first, for compilation.
        jit: bool. XLA (`jit_compile=True`) on TensorFlow and JAX (PyTorch runs eagerly).
        mixed_precision: bool. mixed_bfloat16 (HF: torch autocast bf16).
        fused_attention: bool. Ours with `BertEncoder(fused_attention=True)`.
        peak_tflops: float or None. Peak TFLOP/s for MFU (None: the vendor
            dense bf16 peak of a known accelerator, else a float32 matmul
            measured on this CPU in this run).
        skip_keras_hub, skip_hf, skip_data: bool. Leave keras-hub, HF
            transformers, or the tokenizer and data benchmarks out.
        data_corpus: path or None. Corpus of the data benchmarks (None: theirs).
        data_lines: int. The data benchmarks read its first this many lines (0: all).
        timeout: int. Seconds allowed to each subprocess.
        in_process: bool. Run every model in this process (only with
            `backends` the current Keras backend; quick looks and tests).
        output: path or None. The JSON results file (its folder must exist).
        log: callable taking one line of progress.

    Returns:
        dict, the JSON report: `settings`, `machine`, `workers`, `rows` (one
        per implementation, backend, task and batch), `ratios` (ours/peer),
        `data`, `notes`, `failed_runs` ("model on backend" of the runs that
        failed; their errors are in `notes`) and `wall_seconds`.

    Raises:
        keras_bert_app.errors.ArgumentError, ArgumentTypeError,
        MissingFileError: bad settings, an unknown or missing backend, or an
        output folder that does not exist.
    """
    started = time.perf_counter()
    spec, backends = worker_spec(
        preset, backends, sequence_length, batch_size, inference_batch_sizes, max_predictions, steps, warmup, jit,
        mixed_precision, fused_attention, in_process,
    )
    for name, value in (("skip_keras_hub", skip_keras_hub), ("skip_hf", skip_hf), ("skip_data", skip_data),
                        ("in_process", in_process)):
        errors.check_type(name, value, bool)
    if peak_tflops is not None:
        errors.check_number("peak_tflops", peak_tflops, minimum=0.0, minimum_inclusive=False)
    errors.check_int("data_lines", data_lines, minimum=0)
    errors.check_int("timeout", timeout, minimum=1)
    if output is not None:
        output = errors.check_path("output", output)
        if not output.parent.is_dir():
            raise errors.MissingFileError("output", f"output folder {output.parent} does not exist.")
    notes = []
    runs = planned_runs(backends, skip_keras_hub, skip_hf, notes)
    log(
        f"bench: {preset} (random weights), seq {sequence_length}, training batch "
        f"{batch_size} with {max_predictions} masked positions, inference batches "
        f"{spec['inference_batch_sizes']}, {warmup} warmup + {steps} timed steps, "
        f"jit {jit}, mixed precision {mixed_precision}, fused attention {fused_attention}"
    )
    cpu_peaks = []
    if peak_tflops is None:
        cpu_peaks.append(measure_cpu_peak_flops())
        log(f"CPU peak estimate: {cpu_peaks[0] / 1e12:.3f} TFLOP/s (best float32 2048x2048 NumPy matmul)")
    workers, failed_runs = [], []
    for model, backend in runs:
        if in_process:
            log(f"\n== {model} on {backend} (in this process)")
            result = run_worker(dict(spec, model=model))
        else:
            result = run_worker_process(dict(spec, model=model), backend, timeout, log)
        if "error" in result:
            failed_runs.append(f"{model} on {backend}")
            notes.append(f"{model} on {backend} failed: {result['error']}")
        else:
            workers.append(result)
            notes.extend(result.get("notes", []))

    if cpu_peaks:  # again after the models: on a shared machine, the less loaded moment counts
        cpu_peaks.append(measure_cpu_peak_flops())
    cpu_peak = max(cpu_peaks, default=None)
    rows = compute_rows(workers, spec, peak_tflops, cpu_peak)
    ratios = compute_ratios(rows)
    data = {} if skip_data else run_data_benchmarks(data_corpus, data_lines, skip_keras_hub, timeout, notes, log)
    if skip_data:
        notes.append("tokenizer and data benchmarks skipped (--skip-data).")
    elif data:
        data["summary"] = data_summary(data)
    report = {
        "settings": dict(
            spec,
            backends=backends,
            jit_compile={backend: jit and backend != "torch" for backend in backends},
            flops_formula=FLOPS_FORMULA,
            peak=peak_settings(peak_tflops, cpu_peaks),
            command=sys.argv,
        ),
        "machine": describe_machine(workers),
        "workers": [{key: w[key] for key in WORKER_KEYS if key in w} for w in workers],
        "rows": rows,
        "ratios": ratios,
        "data": data,
        "notes": notes,
        "failed_runs": failed_runs,
        "wall_seconds": round(time.perf_counter() - started, 1),
    }
    if output is not None:
        pathlib.Path(output).write_text(json.dumps(report, indent=2))
    return report
