"""The results of `keras-bert-app bench`: rows per measurement, ours/peer ratios, the table, the machine."""

import os
import platform
import statistics

from keras_bert_app.benchmark.flops import model_flops, row_peak

WORKER_KEYS = ("model", "backend", "device_kind", "parameters", "attention", "tensorflow_imported", "versions")
MODEL_NOTES = {
    "ours": "ours: BertPretrainer (MLM at the masked positions + NSP) / BertEncoder",
    "keras-hub": "keras-hub: BertMaskedLM (MLM only: keras-hub has no NSP head) / BertBackbone, "
    "compiled with the same AdamW",
    "HF": "HF: transformers BertForPreTraining (MLM logits at every position, labels -100 "
    "off the masks, + NSP; torch AdamW, clip 1.0) / BertModel",
}


def compute_rows(workers, spec, peak_tflops, cpu_peak):
    """One row per (implementation, backend, task, batch) from the workers' step times."""
    rows = []
    for worker in workers:
        peak, peak_source = row_peak(worker, peak_tflops, cpu_peak)
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


def describe_machine(workers):
    """Platform, CPU, devices and library versions of this run."""
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
