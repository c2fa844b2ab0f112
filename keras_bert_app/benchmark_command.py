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
    keras-bert-app bench --backends jax --mixed-precision --peak-tflops 989 --skip-data
    python tools/benchmark.py --preset bert_tiny_uncased --steps 2 --skip-data
"""

import argparse
import importlib.util
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BACKEND_MODULES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}
RESULT_PREFIX = "BENCH_RESULT "
WORKER_KEYS = ("model", "backend", "device_kind", "parameters", "attention", "tensorflow_imported", "versions")
PACKAGE_ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOLS_DIR = PACKAGE_ROOT / "tools"
FLOPS_FORMULA = (
    "training FLOPs/step = 6 * N * T + 12 * L * H * S * T; inference FLOPs/step = "
    "2 * N * T + 4 * L * H * S * T; N = non-embedding parameters of the encoder "
    "(Transformer blocks + pooler), T = batch * S tokens, L layers, H hidden size, "
    "S sequence length (second term: attention scores and weighted sum). Embedding "
    "lookups, LayerNorms, softmax and the pretraining heads are not counted, so every "
    "implementation gets the same FLOPs for the same model (HF's MLM over all "
    "positions is extra work it does, not model FLOPs)."
)
MODEL_NOTES = {
    "ours": "ours: BertPretrainer (MLM at the masked positions + NSP) / BertEncoder",
    "keras-hub": "keras-hub: BertMaskedLM (MLM only: keras-hub has no NSP head) / BertBackbone, "
    "compiled with the same AdamW",
    "HF": "HF: transformers BertForPreTraining (MLM logits at every position, labels -100 "
    "off the masks, + NSP; torch AdamW, clip 1.0) / BertModel",
}


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
    spec, backends = _spec(args)
    output = pathlib.Path(args.output)
    if not output.parent.is_dir():
        raise FileNotFoundError(f"--output folder {output.parent} does not exist.")
    notes = []
    runs = _planned_runs(args, backends, notes)
    print(
        f"bench: {args.preset} (random weights), seq {args.sequence_length}, training batch "
        f"{args.batch_size} with {args.max_predictions} masked positions, inference batches "
        f"{spec['inference_batch_sizes']}, {args.warmup} warmup + {args.steps} timed steps, "
        f"jit {args.jit}, mixed precision {args.mixed_precision}",
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
            result = _run_worker(dict(spec, model=model), backend, args.timeout)
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
            peak=_peak_settings(args.peak_tflops, cpu_peaks),
            command=sys.argv,
        ),
        "machine": _machine(workers),
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


def _spec(args):
    """The checked settings every worker gets, and the backends to run ours on."""
    backends = _backends(args.backends)
    if args.in_process:
        import keras

        if backends != [keras.config.backend()]:
            raise ValueError(
                f"--in-process runs on the current backend only: pass --backends "
                f"{keras.config.backend()}; got {backends}."
            )
    for name in ("batch_size", "steps", "sequence_length", "max_predictions"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1; got {getattr(args, name)}.")
    if args.warmup < 0:
        raise ValueError(f"--warmup must be >= 0; got {args.warmup}.")
    if args.max_predictions > args.sequence_length - 2:
        raise ValueError(
            f"--max-predictions must be <= sequence length - 2 ([CLS] and [SEP] are never masked); "
            f"got {args.max_predictions} for sequence length {args.sequence_length}."
        )
    from keras_bert_app import presets  # no Keras, no TensorFlow

    encoder_config = presets.read_config(args.preset)["encoder"]
    max_length = encoder_config.get("max_sequence_length", 512)
    if args.sequence_length > max_length:
        raise ValueError(
            f"--sequence-length {args.sequence_length} exceeds the preset's max_sequence_length {max_length}."
        )
    spec = {
        "preset": str(args.preset),
        "encoder": encoder_config,
        "sequence_length": args.sequence_length,
        "batch_size": args.batch_size,
        "inference_batch_sizes": _positive_ints(args.inference_batch_sizes, "--inference-batch-sizes"),
        "max_predictions": args.max_predictions,
        "steps": args.steps,
        "warmup": args.warmup,
        "jit": args.jit,
        "mixed_precision": args.mixed_precision,
    }
    return spec, backends


def _planned_runs(args, backends, notes):
    """(model, backend) pairs to run: ours and keras-hub on each backend, HF on torch."""
    runs = [("ours", backend) for backend in backends]
    if _keras_hub_available(args, notes):
        runs += [("keras-hub", backend) for backend in backends]
    if args.skip_hf:
        notes.append("HF transformers skipped (--skip-hf).")
    elif not (_installed("transformers") and _installed("torch")):
        notes.append("HF transformers skipped: transformers and torch are not both installed.")
    else:
        runs.append(("HF", "torch"))
    return runs


def _backends(text):
    installed = [name for name, module in BACKEND_MODULES.items() if _installed(module)]
    if text is None:
        if not installed:
            raise ValueError("No Keras backend is installed (tensorflow, jax or torch).")
        return installed
    backends = [name.strip() for name in text.split(",") if name.strip()]
    for name in backends:
        if name not in BACKEND_MODULES:
            raise ValueError(f"Unknown backend {name!r}: expected some of {list(BACKEND_MODULES)}.")
        if name not in installed:
            raise ValueError(f"Backend {name!r} is not installed here; installed: {installed}.")
    if not backends:
        raise ValueError("--backends is empty.")
    return backends


def _positive_ints(text, flag):
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise ValueError(f"{flag} must be comma-separated positive integers; got {text!r}.")
    return values


def _installed(module):
    return importlib.util.find_spec(module) is not None


def _keras_hub_available(args, notes):
    if args.skip_keras_hub:
        notes.append("keras-hub skipped (--skip-keras-hub).")
        return False
    if not _installed("keras_hub"):
        notes.append("keras-hub skipped: not installed.")
        return False
    if not _installed("tensorflow"):
        notes.append("keras-hub skipped: it imports TensorFlow, which is not installed.")
        return False
    return True


def measure_cpu_peak_flops(size=2048, repeats=5):
    """FLOP/s of the fastest of `repeats` float32 [size, size] matmuls (NumPy BLAS, all cores)."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    a @ b  # warm up threads and caches
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best


def non_embedding_parameters(encoder_config):
    """Parameters of the Transformer blocks and the pooler (biases and LayerNorms included)."""
    hidden = encoder_config["hidden_dim"]
    intermediate = encoder_config["intermediate_dim"]
    attention = 4 * hidden * hidden + 4 * hidden  # q, k, v, output projections
    feed_forward = 2 * hidden * intermediate + intermediate + hidden
    layer_norms = 2 * 2 * hidden
    pooler = hidden * hidden + hidden
    return encoder_config["num_layers"] * (attention + feed_forward + layer_norms) + pooler


def model_flops(encoder_config, batch_size, sequence_length, training):
    """FLOPs of one step on a batch (see FLOPS_FORMULA)."""
    tokens = batch_size * sequence_length
    attention = 4 * encoder_config["num_layers"] * encoder_config["hidden_dim"] * sequence_length * tokens
    dense = 2 * non_embedding_parameters(encoder_config) * tokens
    return 3 * (dense + attention) if training else dense + attention


def compute_rows(workers, spec, peak_tflops, cpu_peak):
    """One row per (implementation, backend, task, batch) from the workers' step times."""
    rows = []
    for worker in workers:
        peak, peak_source = _row_peak(worker, peak_tflops, cpu_peak)
        timings = [("train", spec["batch_size"], worker["train"])]
        timings += [("inference", int(size), times) for size, times in worker["inference"].items()]
        for task, batch_size, times in timings:
            median = statistics.median(times["step_seconds"])
            flops = model_flops(spec["encoder"], batch_size, spec["sequence_length"], task == "train")
            rows.append({
                "task": task,
                "model": worker["model"],
                "backend": worker["backend"],
                "batch_size": batch_size,
                "step_seconds": times["step_seconds"],
                "warmup_seconds": times["warmup_seconds"],
                "median_step_seconds": median,
                "sequences_per_second": batch_size / median,
                "tokens_per_second": batch_size * spec["sequence_length"] / median,
                "flops_per_step": flops,
                "achieved_tflops": flops / median / 1e12,
                "peak_flops": peak,
                "peak_source": peak_source,
                "mfu": flops / median / peak if peak else None,
                "device": worker["device_kind"],
            })
    return rows


def _row_peak(worker, peak_tflops, cpu_peak):
    if peak_tflops is not None:
        return peak_tflops * 1e12, "--peak-tflops"
    if worker["device_kind"] == "cpu":
        return cpu_peak, "measured CPU float32 matmul"
    if worker.get("vendor_peak_flops"):
        return worker["vendor_peak_flops"], f"vendor dense bf16 peak of {worker['device_kind']}"
    return None, f"unknown peak for {worker['device_kind']} (pass --peak-tflops)"


def compute_ratios(rows):
    """ours/peer sequences-per-second ratios for every (our backend, peer row) pair of a task and batch."""
    ratios = []
    for peer in rows:
        if peer["model"] == "ours":
            continue
        for ours in rows:
            if ours["model"] != "ours" or (ours["task"], ours["batch_size"]) != (peer["task"], peer["batch_size"]):
                continue
            ratios.append({
                "task": peer["task"],
                "batch_size": peer["batch_size"],
                "ours_backend": ours["backend"],
                "peer": peer["model"],
                "peer_backend": peer["backend"],
                "ratio": ours["sequences_per_second"] / peer["sequences_per_second"],
            })
    return ratios


def format_table(rows):
    """The results table; for peer rows, ours/peer on the same backend and for our fastest backend."""
    header = (
        f"{'task':9s} {'batch':>5s} {'model':9s} {'backend':10s} {'step ms':>9s} {'seq/s':>8s} "
        f"{'tokens/s':>9s} {'TFLOP/step':>10s} {'TFLOP/s':>8s} {'MFU':>6s} {'ours/peer':>9s} {'best ours/peer':>19s}"
    )
    lines = [header, "-" * len(header)]
    for row in rows:
        same, best = "", ""
        if row["model"] != "ours":
            key = (row["task"], row["batch_size"])
            ours = [r for r in rows if r["model"] == "ours" and (r["task"], r["batch_size"]) == key]
            match = [r for r in ours if r["backend"] == row["backend"]]
            if match:
                same = f"{match[0]['sequences_per_second'] / row['sequences_per_second']:.2f}x"
            if ours:
                fastest = max(ours, key=lambda r: r["sequences_per_second"])
                best = f"{fastest['sequences_per_second'] / row['sequences_per_second']:.2f}x ({fastest['backend']})"
        mfu = f"{100 * row['mfu']:.1f}%" if row["mfu"] is not None else "-"
        lines.append(
            f"{row['task']:9s} {row['batch_size']:5d} {row['model']:9s} {row['backend']:10s} "
            f"{1e3 * row['median_step_seconds']:9.1f} {row['sequences_per_second']:8.2f} "
            f"{row['tokens_per_second']:9.0f} {row['flops_per_step'] / 1e12:10.4f} "
            f"{row['achieved_tflops']:8.3f} {mfu:>6s} {same:>9s} {best:>19s}"
        )
    return "\n".join(lines)


def _peak_settings(peak_tflops, cpu_peaks):
    if peak_tflops is not None:
        return {"flops": peak_tflops * 1e12, "description": f"{peak_tflops} TFLOP/s from --peak-tflops"}
    return {
        "cpu_flops": max(cpu_peaks),
        "cpu_flops_measured": cpu_peaks,
        "description": (
            f"CPU rows: {max(cpu_peaks) / 1e12:.3f} TFLOP/s, the best float32 2048x2048 NumPy matmul "
            "measured before and after the models in this run (all cores); accelerator rows: the "
            "vendor dense bf16 peak (keras_bert_app.training.throughput.PEAK_FLOPS)"
        ),
    }


def _machine(workers):
    cpu_model = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            names = [line.split(":", 1)[1].strip() for line in file if line.startswith("model name")]
        cpu_model = names[0] if names else cpu_model
    except OSError:
        pass
    versions = {}
    for worker in workers:
        versions.update(worker.get("versions", {}))
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu_model,
        "cpu_count": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "devices": sorted({f"{w['backend']}: {w['device_kind']}" for w in workers}),
        "versions": versions,
    }


def _subprocess_env(backend):
    path = os.environ.get("PYTHONPATH", "")
    return dict(
        os.environ,
        KERAS_BACKEND=backend,
        TF_CPP_MIN_LOG_LEVEL="2",
        PYTHONPATH=str(PACKAGE_ROOT) + (os.pathsep + path if path else ""),
    )


def _run_worker(spec, backend, timeout):
    """Run one implementation in a fresh process; its result dict, or {"error": ...}.

    The worker's progress lines are echoed as they come; its stderr (framework
    logs) is kept for the error message.
    """
    print(f"\n== {spec['model']} on {backend}", flush=True)
    command = [sys.executable, "-m", "keras_bert_app.benchmark_command", "--worker", json.dumps(spec)]
    result = None
    with tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(
            command, env=_subprocess_env(backend), stdout=subprocess.PIPE, stderr=stderr, text=True
        )
        watchdog = threading.Timer(timeout, process.kill)
        watchdog.start()
        try:
            for line in process.stdout:
                if line.startswith(RESULT_PREFIX):
                    result = json.loads(line[len(RESULT_PREFIX):])
                else:
                    print(f"  {line.rstrip()}", flush=True)
            process.wait()
        finally:
            timed_out = watchdog.finished.is_set()  # set only once the timer fired
            watchdog.cancel()
            if process.poll() is None:
                process.kill()
        stderr.seek(0)
        errors = stderr.read()
    if timed_out:
        return {"error": f"killed after {timeout} s (--timeout)"}
    if process.returncode != 0 or result is None:
        tail = " | ".join(errors.strip().splitlines()[-3:])
        return {"error": f"exit status {process.returncode}: {tail}"}
    return result


def run_data_benchmarks(args, notes):
    """Run the tokenizer and pretraining-data benchmarks of tools/ on a small corpus."""
    if not (TOOLS_DIR / "benchmark_tokenizer.py").is_file():
        notes.append(f"data benchmarks skipped: they need a source checkout ({TOOLS_DIR} is missing).")
        return {}
    if not _installed("tensorflow"):
        notes.append("data benchmarks skipped: they need TensorFlow (tf.data, tensorflow-text).")
        return {}
    corpus = pathlib.Path(args.data_corpus or _tool_default_corpus())
    if not corpus.is_file():
        notes.append(f"data benchmarks skipped: corpus {corpus} does not exist.")
        return {}
    env = _subprocess_env("tensorflow")
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        corpus = _corpus_head(corpus, args.data_lines, pathlib.Path(scratch) / "corpus.txt")
        json_path = pathlib.Path(scratch) / "data.json"
        commands = {
            "tokenizer": [
                "benchmark_tokenizer.py", "--corpus", str(corpus), "--only", "uncased",
                "--repeats", "3", "--single-lines", "200",
            ] + (["--skip-keras-hub"] if args.skip_keras_hub or not _installed("keras_hub") else []),
            "pretraining_data": [
                "benchmark_pretraining_data.py", "--corpus", str(corpus), "--dupe-factor", "2",
                "--num-shards", "2", "--json", str(json_path),
            ],
        }
        for name, command in commands.items():
            print(f"\n== {name} benchmark: {' '.join(command)}", flush=True)
            begin = time.perf_counter()
            process = subprocess.run(
                [sys.executable, str(TOOLS_DIR / command[0]), *command[1:]], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=args.timeout,
            )
            print(process.stdout.rstrip(), flush=True)
            results[name] = {
                "command": command,
                "exit_status": process.returncode,
                "seconds": round(time.perf_counter() - begin, 1),
                "output": process.stdout.splitlines(),
            }
            if process.returncode != 0:
                tail = " | ".join(process.stderr.strip().splitlines()[-3:])
                notes.append(f"{name} benchmark exited with {process.returncode}: {tail}")
        if json_path.is_file():
            results["pretraining_data"]["rows"] = json.loads(json_path.read_text())
    return results


def data_summary(data):
    """One line per data-benchmark result worth quoting (ratios, instances/s)."""
    lines = []
    tokenizer = data.get("tokenizer", {})
    for line in tokenizer.get("output", []):
        if "speed ratio" in line or "ids identical" in line or "MISMATCH" in line:
            lines.append(f"tokenizer: {line.strip()}")
    for row in data.get("pretraining_data", {}).get("rows", []):
        lines.append(
            f"pretraining data: {row['name']}: {row['instances_per_s']} instances/s, "
            f"{row['corpus_mb_per_s']} corpus MB/s"
        )
    return lines


def _tool_default_corpus():
    spec = importlib.util.spec_from_file_location("benchmark_tokenizer", TOOLS_DIR / "benchmark_tokenizer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.parse_args([]).corpus


def _corpus_head(corpus, num_lines, path):
    """The first `num_lines` lines of `corpus`, continued to the end of the document they end in."""
    if num_lines <= 0:
        return corpus
    lines = []
    with open(corpus, encoding="utf-8") as file:
        for line in file:
            if len(lines) >= num_lines and not line.strip():
                break
            lines.append(line)
    path.write_text("".join(lines), encoding="utf-8")
    return path


# ---------------------------------------------------------------- worker side


def run_worker(spec):
    """Time one implementation (`spec["model"]`) on the current Keras backend; a result dict."""
    import keras
    import numpy as np

    # (No keras.utils.set_random_seed: it imports TensorFlow when installed.)
    backend = "torch" if spec["model"] == "HF" else keras.config.backend()
    measure = {"ours": _measure_ours, "keras-hub": _measure_keras_hub, "HF": _measure_hf}[spec["model"]]
    batch = make_batch(spec, spec["batch_size"], np.random.default_rng(0))
    inference_batches = {
        size: make_batch(spec, size, np.random.default_rng(size)) for size in spec["inference_batch_sizes"]
    }
    policy = keras.config.dtype_policy()
    if spec["mixed_precision"]:
        keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        train, inference, extra = measure(spec, batch, inference_batches)
    finally:
        keras.config.set_dtype_policy(policy)  # matters with --in-process
    device_kind = _device_kind(backend)
    result = {
        "model": spec["model"],
        "backend": backend,
        "device_kind": device_kind,
        "vendor_peak_flops": _vendor_peak(device_kind),
        "train": train,
        "inference": {str(size): times for size, times in inference.items()},
        "tensorflow_imported": "tensorflow" in sys.modules,
        "versions": _versions(spec["model"], backend),
        "notes": [],
    }
    result.update(extra)
    if backend in ("jax", "torch") and spec["model"] == "ours" and result["tensorflow_imported"]:
        result["notes"].append(f"ours on {backend} imported TensorFlow (it should not).")
    return result


def make_batch(spec, batch_size, rng):
    """Random pretraining inputs: full-length sequences, `max_predictions` distinct masked positions each."""
    import numpy as np

    length, vocabulary_size = spec["sequence_length"], spec["encoder"]["vocabulary_size"]
    shape = (batch_size, length)
    token_ids = rng.integers(1, vocabulary_size, shape).astype("int32")
    segment_ids = (np.arange(length)[None, :] >= length // 2).astype("int32").repeat(batch_size, 0)
    positions = np.stack([
        np.sort(rng.choice(np.arange(1, length - 1), spec["max_predictions"], replace=False))
        for _ in range(batch_size)
    ]).astype("int32")  # (batch, max_predictions), never [CLS] or the last [SEP]
    return {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": np.ones(shape, "int32"),
        "mask_positions": positions,
        "mlm_labels": rng.integers(0, vocabulary_size, positions.shape).astype("int32"),
        "mlm_weights": np.ones(positions.shape, "float32"),
        "nsp_labels": rng.integers(0, 2, (batch_size,)).astype("int32"),
    }


def time_steps(step, warmup, steps):
    """`{"warmup_seconds": [...], "step_seconds": [...]}` of calls of `step` (which must block)."""
    timings = {"warmup_seconds": [], "step_seconds": []}
    for key, count in (("warmup_seconds", warmup), ("step_seconds", steps)):
        for index in range(count):
            start = time.perf_counter()
            step()
            timings[key].append(time.perf_counter() - start)
            kind = "warmup" if key == "warmup_seconds" else "timed"
            _progress(f"  {kind} step {index + 1}/{count}: {timings[key][-1]:.3f} s")
    return timings


def _encoder_inputs(batch):
    return {name: batch[name] for name in ("token_ids", "segment_ids", "padding_mask")}


def _progress(message):
    print(message, flush=True)


def _measure_ours(spec, batch, inference_batches):
    import keras

    from keras_bert_app.models.bert_encoder import INPUT_NAMES, BertEncoder
    from keras_bert_app.models.bert_pretrainer import BertPretrainer

    jit = spec["jit"] and keras.config.backend() != "torch"
    encoder = BertEncoder.from_preset(spec["preset"], load_weights=False)
    pretrainer = BertPretrainer(encoder)
    pretrainer.compile(jit_compile=jit)
    x = {**_encoder_inputs(batch), "mask_positions": batch["mask_positions"]}
    y = {"mlm": batch["mlm_labels"], "nsp": batch["nsp_labels"]}
    weights = {"mlm": batch["mlm_weights"]}
    _progress(f"training step, batch {spec['batch_size']}, jit_compile={jit}")
    train = time_steps(lambda: pretrainer.train_on_batch(x, y, sample_weight=weights), spec["warmup"], spec["steps"])

    # Encoder forward with the two outputs every peer returns (sequence, pooled).
    inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}
    outputs = encoder(inputs)
    forward = keras.Model(inputs, {key: outputs[key] for key in ("sequence_output", "pooled_output")})
    forward.compile(jit_compile=jit)
    inference = _time_inference(spec, inference_batches, lambda b: forward.predict_on_batch(_encoder_inputs(b)))
    return train, inference, {"parameters": encoder.count_params()}


def _measure_keras_hub(spec, batch, inference_batches):
    import keras
    import keras_hub

    from keras_bert_app.models import bert_pretrainer
    from keras_bert_app.training.optimizer import create_optimizer

    jit = spec["jit"] and keras.config.backend() != "torch"
    config = spec["encoder"]
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config["vocabulary_size"],
        num_layers=config["num_layers"],
        num_heads=config["num_heads"],
        hidden_dim=config["hidden_dim"],
        intermediate_dim=config["intermediate_dim"],
        dropout=config.get("dropout", 0.1),
        max_sequence_length=config.get("max_sequence_length", 512),
        num_segments=config.get("num_segments", 2),
    )
    masked_lm = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
    masked_lm.compile(
        optimizer=create_optimizer(
            bert_pretrainer.PAPER_LEARNING_RATE,
            total_steps=bert_pretrainer.PAPER_TOTAL_STEPS,
            warmup_steps=bert_pretrainer.PAPER_WARMUP_STEPS,
        ),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()],
        jit_compile=jit,
    )
    x = {**_encoder_inputs(batch), "mask_positions": batch["mask_positions"]}
    _progress(f"training step (MLM only), batch {spec['batch_size']}, jit_compile={jit}")
    train = time_steps(
        lambda: masked_lm.train_on_batch(x, batch["mlm_labels"], sample_weight=batch["mlm_weights"]),
        spec["warmup"],
        spec["steps"],
    )
    backbone.compile(jit_compile=jit)
    inference = _time_inference(spec, inference_batches, lambda b: backbone.predict_on_batch(_encoder_inputs(b)))
    return train, inference, {"parameters": backbone.count_params()}


def _measure_hf(spec, batch, inference_batches):
    import contextlib

    import torch
    import transformers

    config = spec["encoder"]
    hf_config = transformers.BertConfig(
        vocab_size=config["vocabulary_size"],
        hidden_size=config["hidden_dim"],
        num_hidden_layers=config["num_layers"],
        num_attention_heads=config["num_heads"],
        intermediate_size=config["intermediate_dim"],
        hidden_act="gelu",
        hidden_dropout_prob=config.get("dropout", 0.1),
        attention_probs_dropout_prob=config.get("dropout", 0.1),
        max_position_embeddings=config.get("max_sequence_length", 512),
        type_vocab_size=config.get("num_segments", 2),
        layer_norm_eps=config.get("layer_norm_epsilon", 1e-12),
    )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)

    def autocast():
        if spec["mixed_precision"]:
            return torch.autocast(device_type=device, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def tensors(b):
        return {
            "input_ids": torch.as_tensor(b["token_ids"], dtype=torch.long, device=device),
            "token_type_ids": torch.as_tensor(b["segment_ids"], dtype=torch.long, device=device),
            "attention_mask": torch.as_tensor(b["padding_mask"], dtype=torch.long, device=device),
        }

    model = transformers.BertForPreTraining(hf_config).to(device)
    model.train()
    no_decay = ("bias", "LayerNorm.weight")
    groups = [
        {"params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if n.endswith(no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=1e-4, betas=(0.9, 0.999), eps=1e-6)
    labels = torch.full(batch["token_ids"].shape, -100, dtype=torch.long)
    labels.scatter_(1, torch.as_tensor(batch["mask_positions"], dtype=torch.long),
                    torch.as_tensor(batch["mlm_labels"], dtype=torch.long))
    train_inputs = dict(
        tensors(batch),
        labels=labels.to(device),
        next_sentence_label=torch.as_tensor(batch["nsp_labels"], dtype=torch.long, device=device),
    )

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            loss = model(**train_inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss.item()  # blocks until the step is done

    _progress(f"training step, batch {spec['batch_size']}, torch {device}, attention "
              f"{getattr(model.config, '_attn_implementation', 'default')}")
    train = time_steps(train_step, spec["warmup"], spec["steps"])
    del model, optimizer

    encoder = transformers.BertModel(hf_config).to(device).eval()

    def forward(b):
        with torch.inference_mode(), autocast():
            out = encoder(**tensors(b))
            return out.last_hidden_state.float().cpu().numpy(), out.pooler_output.float().cpu().numpy()

    inference = _time_inference(spec, inference_batches, forward)
    extra = {
        "parameters": sum(p.numel() for p in encoder.parameters()),
        "attention": getattr(encoder.config, "_attn_implementation", "default"),
    }
    return train, inference, extra


def _time_inference(spec, inference_batches, forward):
    inference = {}
    for size, batch in inference_batches.items():
        _progress(f"encoder forward, batch {size}")
        inference[size] = time_steps(lambda: forward(batch), spec["warmup"], spec["steps"])
    return inference


def _device_kind(backend):
    """"cpu", or the accelerator's name as its framework reports it."""
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        return "cpu" if device.platform == "cpu" else device.device_kind
    if backend == "torch":
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return "cpu"
    return tf.config.experimental.get_device_details(gpus[0]).get("device_name", "gpu")


def _vendor_peak(device_kind):
    if device_kind == "cpu":
        return None
    from keras_bert_app.training.throughput import peak_flops

    return peak_flops(device_kind)


def _versions(model, backend):
    """Versions of the libraries this worker ran on (all already imported)."""
    modules = {
        "ours": ["keras", backend],
        "keras-hub": ["keras", "keras_hub", backend],
        "HF": ["transformers", "torch"],
    }
    return {name: getattr(sys.modules[name], "__version__", "?") for name in modules[model]}


def main(argv=None):
    """Entry point of `tools/benchmark.py` and of `python -m keras_bert_app.benchmark_command`."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        result = run_worker(json.loads(argv[1]))
        print(RESULT_PREFIX + json.dumps(result), flush=True)
        return 0
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
