"""One fine-tuning run of `bench --task finetune`, in its own process: `python -m ... '<spec JSON>'`.

Every implementation fine-tunes the same checkpoint on the same CSVs with the
same recipe and prints its dev accuracy on one `BENCH_RESULT` line; the
parent times the whole process.

    ours               `keras-bert-app finetune classify` (defaults), the console script's own process
                       (`processes.run_console_process`, `ours_command_line`)
    ours-no-bucketing  the same with `--no-bucketing`: every batch padded to the max length
    ours-random-batches  the same with `--no-group-by-length`: training batches of random examples
    keras-hub          `TextClassifier.from_preset` with its own preprocessor at the max length, `fit`
                       with its compile defaults, then `predict` (`keras_hub_checkpoint`)
    hf-grouped         transformers `AutoModelForSequenceClassification` (`hf_classifier`) + torch:
                       `DataCollatorWithPadding` and `get_length_grouped_indices` (`group_by_length`)
    hf-padded          the same, every batch padded to the max length, random order

Not in the default run, for the bfloat16 side by side (`--implementations`):

    ours-mixed-precision  ours with `--mixed-precision` (Keras' mixed_bfloat16)
    ours-group-by-length  ours with `--group-by-length` (the default, said aloud)
    hf-grouped-bf16    hf-grouped under `torch.autocast("cpu", torch.bfloat16)`, as `Trainer(bf16=True)` on a CPU
"""

import json
import math
import sys

from keras_bert_app.benchmark.processes import RESULT_PREFIX
from keras_bert_app.extras import require

DEFAULT_IMPLEMENTATIONS = ("ours", "ours-no-bucketing", "ours-random-batches", "keras-hub", "hf-grouped", "hf-padded")
IMPLEMENTATIONS = DEFAULT_IMPLEMENTATIONS + ("ours-mixed-precision", "ours-group-by-length", "hf-grouped-bf16")
# Ours and its variants: the flags each adds to `finetune classify`'s defaults.
OURS_FLAGS = {
    "ours": [], "ours-no-bucketing": ["--no-bucketing"], "ours-random-batches": ["--no-group-by-length"],
    "ours-group-by-length": ["--group-by-length"], "ours-mixed-precision": ["--mixed-precision"],
}


def ours_command_line(spec, implementation="ours"):
    """The `keras-bert-app` arguments of ours: `finetune classify` with its defaults, plus the variant's flags."""
    return [
        "finetune", "classify", "--preset", str(spec["checkpoint"]), "--output", str(spec["output"]),
        "--train", str(spec["train"]), "--dev", str(spec["dev"]), "--text-column", "text", "--label-column", "label",
        "--epochs", str(spec["epochs"]), "--batch-size", str(spec["batch_size"]),
        "--learning-rate", repr(spec["learning_rate"]), "--sequence-length", str(spec["sequence_length"]),
        "--seed", str(spec["seed"]),
    ] + OURS_FLAGS[implementation]


def ours_result(spec):
    """Dev accuracy and training seconds from the `metrics.json` of ours' run folder."""
    import pathlib

    metrics = json.loads((pathlib.Path(spec["output"]) / "metrics.json").read_text(encoding="utf-8"))
    return {"accuracy": metrics["dev"]["accuracy"], "train_seconds": metrics["train_seconds"],
            "examples_per_second_after_first_step": metrics.get("examples_per_second_after_first_step")}


def keras_hub_checkpoint(spec):
    """The checkpoint folder as keras-hub can read it.

    keras-hub's HF loader reads the tokenizer from a `vocab.txt` (BERT's
    WordPiece) or a `spiece.model` (ALBERT's SentencePiece), which
    transformers 5 no longer saves (its `save_pretrained` writes the
    tokenizer as `tokenizer.json`). For such a checkpoint: a folder in the
    run's output of links to its files, plus the file ours reads in its
    place (`convert.resolve`: made of the `tokenizer.json`, cached).
    """
    import pathlib
    import shutil

    folder = pathlib.Path(spec["checkpoint"])
    if not (folder / "tokenizer.json").is_file():
        return str(folder)
    from keras_bert_app.convert.resolve import resolve_preset

    resolved = resolve_preset(folder)
    sentencepiece = resolved.config.get("tokenizer", {}).get("type") == "sentencepiece"
    name = "spiece.model" if sentencepiece else "vocab.txt"
    if (folder / name).is_file():
        return str(folder)
    derived = resolved.sentencepiece_model_path if sentencepiece else resolved.vocabulary_path

    view = pathlib.Path(spec["output"]) / "keras_hub_checkpoint"
    shutil.rmtree(view, ignore_errors=True)  # made anew: a reused workdir may hold another checkpoint's links
    view.mkdir(parents=True)
    for path in folder.iterdir():
        (view / path.name).symlink_to(path.resolve())
    (view / name).write_bytes(derived.read_bytes())
    return str(view)


def run_keras_hub(spec):
    import time

    import keras
    import numpy as np

    keras_hub = require("keras_hub", extra="bench", feature="The keras-hub peer of `bench finetune`")

    from keras_bert_app.benchmark.finetune_data import read_csv
    from keras_bert_app.training.throughput import StepTimes

    keras.utils.set_random_seed(spec["seed"])
    texts, labels = read_csv(spec["train"])
    dev_texts, dev_labels = read_csv(spec["dev"])
    names = sorted(set(labels))
    checkpoint = keras_hub_checkpoint(spec)
    # The base classes pick the checkpoint's own (BertTextClassifier for BERT, AlbertTextClassifier for ALBERT).
    preprocessor = keras_hub.models.TextClassifierPreprocessor.from_preset(
        checkpoint, sequence_length=spec["sequence_length"]
    )
    classifier = keras_hub.models.TextClassifier.from_preset(
        checkpoint, num_classes=len(names), preprocessor=preprocessor
    )
    classifier.compile(optimizer=keras.optimizers.Adam(spec["learning_rate"]))
    step_times = StepTimes(spec["batch_size"], len(texts))
    started = time.perf_counter()
    classifier.fit(
        x=texts, y=np.array([names.index(label) for label in labels]), batch_size=spec["batch_size"],
        epochs=spec["epochs"], verbose=0, callbacks=[step_times],
    )
    train_seconds = time.perf_counter() - started
    logits = classifier.predict(dev_texts, batch_size=spec["batch_size"], verbose=0)
    accuracy = float(np.mean(np.asarray(logits).argmax(-1) == np.array([names.index(label) for label in dev_labels])))
    return {"accuracy": accuracy, "train_seconds": round(train_seconds, 1),
            "examples_per_second_after_first_step": step_times.summary()["examples_per_second_after_first_step"]}


def hf_classifier(checkpoint, num_labels):
    """`(tokenizer, model)`: transformers' classifier of the checkpoint's own architecture, with its weights.

    `AutoModelForSequenceClassification` picks the class of the checkpoint's
    `model_type`: another family's class would silently load none of its
    weights and time a randomly initialised model.
    """
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=num_labels)
    return tokenizer, model


def run_hf(spec, grouped, bf16=False):
    import contextlib
    import time

    import torch
    import transformers
    from transformers.trainer_pt_utils import get_length_grouped_indices

    from keras_bert_app.benchmark.finetune_data import read_csv

    transformers.logging.set_verbosity_error()
    transformers.set_seed(spec["seed"])
    texts, labels = read_csv(spec["train"])
    dev_texts, dev_labels = read_csv(spec["dev"])
    names = sorted(set(labels))
    tokenizer, model = hf_classifier(spec["checkpoint"], len(names))
    padding = "longest" if grouped else "max_length"
    collator = transformers.DataCollatorWithPadding(tokenizer, padding=padding, max_length=spec["sequence_length"])

    def encode(rows, row_labels):
        # What the checkpoint's tokenizer gives (transformers 5's ALBERT tokenizer gives no token_type_ids).
        encoded = tokenizer(rows, max_length=spec["sequence_length"], truncation=True)
        return [{**{key: values[index] for key, values in encoded.items()}, "labels": names.index(label)}
                for index, label in enumerate(row_labels)]

    train, dev = encode(texts, labels), encode(dev_texts, dev_labels)
    batch_size = spec["batch_size"]
    total_steps = math.ceil(len(train) / batch_size) * spec["epochs"]
    no_decay = [n for n, _ in model.named_parameters() if "bias" in n or "LayerNorm" in n]
    optimizer = torch.optim.AdamW([
        {"params": [p for n, p in model.named_parameters() if n not in no_decay], "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if n in no_decay], "weight_decay": 0.0},
    ], lr=spec["learning_rate"])
    scheduler = transformers.get_linear_schedule_with_warmup(optimizer, math.ceil(0.1 * total_steps), total_steps)
    generator = torch.Generator().manual_seed(spec["seed"])

    def autocast():
        return torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()

    started = time.perf_counter()
    first_step_end, later_examples = None, 0
    model.train()
    for _ in range(spec["epochs"]):
        if grouped:
            order = get_length_grouped_indices([len(row["input_ids"]) for row in train], batch_size,
                                               generator=generator)
        else:
            order = torch.randperm(len(train), generator=generator).tolist()
        for start in range(0, len(order), batch_size):
            batch = collator([train[i] for i in order[start:start + batch_size]])
            with autocast():
                loss = model(**batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            if first_step_end is None:
                first_step_end = time.perf_counter()
            else:
                later_examples += len(batch["labels"])
    train_seconds = time.perf_counter() - started
    later_seconds = started + train_seconds - first_step_end if first_step_end else 0
    model.eval()
    correct = 0
    with torch.no_grad(), autocast():
        for start in range(0, len(dev), batch_size):
            batch = collator(dev[start:start + batch_size])
            correct += int((model(**batch).logits.argmax(-1) == batch["labels"]).sum())
    return {"accuracy": correct / len(dev), "train_seconds": round(train_seconds, 1),
            "examples_per_second_after_first_step": round(later_examples / later_seconds, 2) if later_seconds else None}


def run(spec):
    name = spec["implementation"]
    if name == "keras-hub":
        return run_keras_hub(spec)
    if name in ("hf-grouped", "hf-padded", "hf-grouped-bf16"):
        return run_hf(spec, grouped=name != "hf-padded", bf16=name == "hf-grouped-bf16")
    raise ValueError(f"unknown implementation {name!r}; expected one of {IMPLEMENTATIONS}.")


if __name__ == "__main__":
    print(RESULT_PREFIX + json.dumps(run(json.loads(sys.argv[1]))), flush=True)
