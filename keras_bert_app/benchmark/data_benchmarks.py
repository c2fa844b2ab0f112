"""The tokenizer and pretraining-data benchmarks of tools/, run by `keras-bert-app bench` on a small corpus."""

import importlib.util
import json
import pathlib
import subprocess
import sys
import tempfile
import time

from keras_bert_app.benchmark.plan import is_installed
from keras_bert_app.benchmark.processes import PACKAGE_ROOT, subprocess_env

TOOLS_DIR = PACKAGE_ROOT / "tools"


def run_data_benchmarks(corpus, num_lines, skip_keras_hub, timeout, notes, log=print):
    """Run the tokenizer and pretraining-data benchmarks of tools/ on a small corpus.

    Args:
        corpus: path or None (the tokenizer benchmark's default corpus).
        num_lines: int. Read the first this many lines of it (0: all).
        skip_keras_hub: bool. Leave keras-hub out of the tokenizer benchmark.
        timeout: int. Seconds allowed to each benchmark's process.
        notes: list of str, appended to.
        log: callable taking one line of progress.

    Returns:
        dict: per benchmark, its command, exit status, seconds and output.
    """
    if not (TOOLS_DIR / "benchmark_tokenizer.py").is_file():
        notes.append(f"data benchmarks skipped: they need a source checkout ({TOOLS_DIR} is missing).")
        return {}
    if not is_installed("tensorflow"):
        notes.append("data benchmarks skipped: they need TensorFlow (tf.data, tensorflow-text).")
        return {}
    corpus = pathlib.Path(corpus or _tool_default_corpus())
    if not corpus.is_file():
        notes.append(f"data benchmarks skipped: corpus {corpus} does not exist.")
        return {}
    env = subprocess_env("tensorflow")
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        corpus = _corpus_head(corpus, num_lines, pathlib.Path(scratch) / "corpus.txt")
        json_path = pathlib.Path(scratch) / "data.json"
        commands = {
            "tokenizer": [
                "benchmark_tokenizer.py", "--corpus", str(corpus), "--only", "uncased",
                "--repeats", "3", "--single-lines", "200",
            ] + (["--skip-keras-hub"] if skip_keras_hub or not is_installed("keras_hub") else []),
            "pretraining_data": [
                "benchmark_pretraining_data.py", "--corpus", str(corpus), "--dupe-factor", "2",
                "--num-shards", "2", "--json", str(json_path),
            ],
        }
        for name, command in commands.items():
            log(f"\n== {name} benchmark: {' '.join(command)}")
            begin = time.perf_counter()
            process = subprocess.run(
                [sys.executable, str(TOOLS_DIR / command[0]), *command[1:]], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
            )
            log(process.stdout.rstrip())
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
