"""The quickstart's report: `pretraining.png`, `finetuning.png` and `report.md`."""

import csv
import json
import os

from keras_bert_app.demo.settings import DEFAULT_PRETRAIN_DROPOUT
from keras_bert_app.demo.settings import DEFAULT_PRETRAIN_LEARNING_RATE
from keras_bert_app.demo.settings import DEFAULT_SOURCES
from keras_bert_app.demo.settings import REPORT_FILE
from keras_bert_app.demo.settings import STAGES_DIR
from keras_bert_app.demo.stages import write_atomically

TOKEN_COUNTS_ROW = "dev accuracy, token counts + logistic regression, no encoder (baseline)"

NOISE_ARTICLES = 5  # dev-accuracy gaps of this many articles or fewer are read as noise


def read_csv(path):
    if not path.is_file():
        return []
    with path.open(encoding="utf-8", newline="") as file:
        return list(csv.DictReader(file))


def number(text):
    """A float from a CSV cell; None for an empty or "NA" one."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def series(rows, key):
    return [number(row.get(key)) for row in rows]


def plot(output, labeled):
    """`pretraining.png` (loss and accuracies per step) and `finetuning.png` (per epoch)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    rows = read_csv(output / "pretrain" / "metrics.csv")
    checkpoint_every = json.loads((output / STAGES_DIR / "pretrain.json").read_text())["checkpoint_every"]
    steps = [(int(row["epoch"]) + 1) * checkpoint_every for row in rows]
    figure, (loss_axis, accuracy_axis) = pyplot.subplots(1, 2, figsize=(10, 4))
    for key in ("loss", "mlm_loss", "nsp_loss"):
        if rows and key in rows[0]:
            loss_axis.plot(steps, series(rows, key), marker=".", label=key)
    for key in ("mlm_accuracy", "nsp_accuracy"):
        if rows and key in rows[0]:
            accuracy_axis.plot(steps, series(rows, key), marker=".", label=key)
    _save(figure, {loss_axis: "Pretraining loss", accuracy_axis: "Pretraining accuracy"}, "step",
          output / "pretraining.png")
    if not labeled:
        return
    figure, (loss_axis, accuracy_axis) = pyplot.subplots(1, 2, figsize=(10, 4))
    for run_name, color in (("finetune_pretrained", "C0"), ("finetune_random", "C1")):
        history = read_csv(output / run_name / "logs" / "history.csv")
        epochs = [int(row["epoch"]) + 1 for row in history]
        short = run_name.replace("finetune_", "")
        for prefix in ("", "val_"):
            split = "dev" if prefix else "train"
            style = "--" if prefix else "-"
            for axis, metric in ((loss_axis, "loss"), (accuracy_axis, "accuracy")):
                if history and prefix + metric in history[0]:
                    axis.plot(epochs, series(history, prefix + metric), style, color=color, marker="o", label=f"{short} {split}")
    _save(figure, {loss_axis: "Fine-tuning loss", accuracy_axis: "Fine-tuning accuracy"}, "epoch",
          output / "finetuning.png")


def _save(figure, titles, x_label, path):
    """Title, label and grid each axis of `titles`, then write `figure` to `path` and close it."""
    from matplotlib import pyplot

    for axis, title in titles.items():
        axis.set_xlabel(x_label)
        axis.set_title(title)
        axis.grid(alpha=0.3)
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def time_rows(results, load_start):
    """The report's stage-time rows, the total, the load average, and the next section's heading."""
    return [
        *(f"| {name} | {result['seconds']:.0f} |" for name, result in results.items()),
        f"| total | {sum(result['seconds'] for result in results.values()):.0f} |",
        "",
        "Load average (1, 5, 15 min) at the start: {:.2f}, {:.2f}, {:.2f}; at the end: {:.2f}, {:.2f}, {:.2f}.".format(
            *load_start, *os.getloadavg()
        ),
        "",
        "## Where the defaults come from",
        "",
    ]


def write_report(output, settings, data, results, labeled, load_start):
    """`report.md`, written last and atomically (a temporary file renamed into place).

    `settings` holds the run's settings as `quickstart.json` stores them.
    """
    from keras_bert_app.convert import resolve

    encoder = resolve.read_config(settings['preset'])["encoder"]
    pretrain = results["pretrain"]
    final = pretrain["final"]
    lines = [
        "# keras-bert-app quickstart report",
        "",
        f"Pretrained `{settings['preset']}` (L={encoder['num_layers']}, H={encoder['hidden_dim']}, "
        f"A={encoder['num_heads']}) from scratch on {data['source']} ({data['documents']} documents, "
        f"{data['sentences']} sentences)" + (", then fine-tuned it as a topic classifier." if labeled else "."),
        "",
        "## What ran",
        "",
        "1. Corpus: `data/corpus.txt`, one sentence per line, a blank line between documents"
        + (" (train split only: the dev articles stay unseen)." if labeled else "."),
        (f"   `build-vocab`: a WordPiece vocabulary of {results['model']['vocabulary_size']} tokens learned from it "
         "(`data/vocab.txt`); " if settings['vocab_size'] else "   ")
        + f"`model_preset/`: the {settings['preset']} config with {results['model']['parameters']:,} freshly initialised parameters.",
        f"2. `create-pretraining-data`: {results['pretraining_data']['instances']} masked sentence-pair "
        f"instances of {settings['sequence_length']} tokens ({settings['dupe_factor']} masking passes) in `pretraining_data/`.",
        f"3. `pretrain`: {settings['steps']} steps, batch {settings['batch_size']}, learning rate {DEFAULT_PRETRAIN_LEARNING_RATE:g}, "
        f"dropout {DEFAULT_PRETRAIN_DROPOUT:g} (fine-tuning: the config's), "
        "from `model_preset/`; run folder `pretrain/`, result `pretrain/preset/`.",
    ]
    if labeled:
        lines += [
            f"4. `finetune classify`: {settings['finetune_epochs']} epochs on {data['labeled_articles']} labeled BBC News articles "
            f"(of the {data['train_articles']} the pretraining read without labels), "
            f"evaluated on {data['dev_articles']} held-out ones, from the pretrained encoder (`finetune_pretrained/`) "
            "and from the freshly initialised weights that pretraining started from (`finetune_random/`).",
            "5. Feature-based (paper section 5.3): a logistic regression (C=1, standardised features) on each "
            "encoder's frozen last-layer features of the same labeled articles, the `[CLS]` vector and the mean "
            "over the tokens (`[CLS]` and `[SEP]` included), evaluated on the same dev articles "
            "(`keras_bert_app.evaluation.linear_probe`: the classifier adds no seed or schedule of its own); "
            "and, as the baseline, the same classifier on the counts of each token in each article, no encoder.",
            f"6. `export`: the pretrained-then-fine-tuned classifier in `{results['export']['export']}`, reloaded with "
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
        ]
        for run_name, label in (("finetune_pretrained", "pretrained"), ("finetune_random", "random")):
            history = read_csv(output / run_name / "logs" / "history.csv")
            if history and number(history[-1].get("val_loss")) is not None:
                lines.append(f"| dev loss (cross-entropy), {label} encoder | {number(history[-1]['val_loss']):.4f} |")
        probe = results["features"]
        for pooling, label in (("cls", "[CLS]"), ("mean", "mean of the tokens")):
            lines += [
                f"| dev accuracy, frozen {label} features + logistic regression, pretrained encoder | {probe[f'pretrained_{pooling}']:.4f} |",
                f"| dev accuracy, frozen {label} features + logistic regression, random encoder | {probe[f'random_{pooling}']:.4f} |",
            ]
        if "token_counts" in probe:  # absent from runs made before the baseline
            lines.append(f"| {TOKEN_COUNTS_ROW} | {probe['token_counts']:.4f} |")
        probe_gains = {pooling: probe[f"pretrained_{pooling}"] - probe[f"random_{pooling}"] for pooling in ("cls", "mean")}
        lines += ["", _reading(pretrained - random, probe_gains, data["dev_articles"], final.get("mlm_accuracy"))]
        lines += [
            "",
            "Classifying raw sentences with the exported model:",
            "",
            "| sentence | label | probability |",
            "|---|---|---|",
        ]
        lines += [f"| {p['text']} | {p['label']} | {p['probability']:.2f} |" for p in results["export"]["predictions"]]
    lines += ["", "Plots: `pretraining.png`" + (", `finetuning.png`." if labeled else "."), "", "## Time", "", "| stage | seconds |", "|---|---|"]
    lines += time_rows(results, load_start)
    lines += [f"- `{name}`: {source}." for name, source in DEFAULT_SOURCES.items()]
    return write_atomically(output / REPORT_FILE, "\n".join(lines) + "\n")


def _reading(gain, probe_gains, dev_articles, mlm_accuracy):
    """One paragraph on what the pretrained vs random gaps mean at this scale.

    A gap counts as a lead only when it is more than `NOISE_ARTICLES` dev
    articles; smaller ones are reported as within noise.
    """
    noise = NOISE_ARTICLES / dev_articles

    def verdict(value):
        articles = round(value * dev_articles)
        if abs(value) <= noise:
            return f"{100 * value:+.1f} points ({articles:+d} articles), within noise"
        return f"{100 * value:+.1f} points ({articles:+d} articles), {'ahead' if value > 0 else 'behind'}"

    mlm = "" if mlm_accuracy is None else f" (masked LM accuracy {mlm_accuracy:.2f})"
    return (
        f"Pretrained minus random, dev accuracy: fine-tuned {verdict(gain)}; frozen `[CLS]` features "
        f"{verdict(probe_gains['cls'])}; frozen mean features {verdict(probe_gains['mean'])} "
        f"(a gap of {NOISE_ARTICLES} articles or fewer is counted as noise). "
        f"Minutes of pretraining on a CPU{mlm} are a tiny fraction of the paper's. The fine-tuned row "
        "is one run with one seed, and a tiny encoder fine-tuned on a few hundred labels can vary by "
        "several points with its seed; the random encoder can sit at chance for epochs before it finds "
        "the words. Fine-tuned long enough, a randomly initialised encoder is a strong baseline for "
        "topics: its attention starts near uniform, so it averages distinct random word vectors, a "
        "bag-of-words classifier, and BBC topics are told apart by their words. The frozen-feature rows "
        "add no seed or schedule to the encoders': they show what the encoder itself holds. Compare the "
        "dev loss rows and `finetuning.png` as well."
    )
