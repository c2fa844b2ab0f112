"""The objectives study's `report.md` and `report.png`, computed from `results.json` by stated rules.

The rules (`RULES`, printed on the page):
- An arm "did not train" when its held-out pretraining metric shows no
  learning: ELECTRA's discriminator AUC on frequency-drawn fakes below
  `TRAINED_AUC` on a pretraining seed; a masked-LM or left-to-right head
  whose top-1 on held-out text is not above the unigram baseline's beyond
  its 95% Wilson interval on a pretraining seed. It gets no ranking.
- Fine-tuned accuracy: mean and 95% t-interval over every (pretraining
  seed, fine-tuning seed) run. Probe and baselines: 95% Wilson interval
  over the dev examples.
- An arm is "ahead" of the baselines only when its interval's lower end
  is above the strongest baseline's upper end.
- Two arms differ ("beyond the intervals") only when their means are
  further apart than the sum of their half-widths; else "within".
"""

import math
import pathlib
import statistics
from collections.abc import Callable, Sequence

from keras_bert_app.demo.objectives_study_settings import ARMS, BASELINES, RANDOM, SELECTION, TRAINED_AUC
from keras_bert_app.extras import require

RULES = (
    f"An arm did not train when its held-out pretraining metric shows no learning (ELECTRA: discriminator AUC on "
    f"frequency-drawn fakes below {TRAINED_AUC} on any pretraining seed; a masked-LM or left-to-right head: top-1 on "
    "the held-out articles not above the unigram baseline's beyond its 95% Wilson interval on any pretraining "
    "seed); it gets no ranking. Fine-tuned: mean and 95% t-interval over every (pretraining seed, fine-tuning "
    "seed) run; probe and baselines: 95% Wilson interval over the dev articles. An arm is ahead of the baselines "
    "only when its interval's lower end is above the strongest baseline's upper end. Two figures differ only when "
    "their means are further apart than the sum of their half-widths (else: within the intervals)."
)
# The paper's directions the study can test: (what, arm a, arm b, measure, sign of a - b in the paper, the paper's
# figures). Sign 0: the paper finds them about equal.
DIRECTIONS = (
    ("NSP helps (BERT Table 5: MNLI 84.4 vs 83.9, SQuAD 88.5 vs 87.9)", "bert", "no_nsp", "finetune", 1),
    ("Bidirectional beats left-to-right (BERT Table 5: MNLI 83.9 vs 82.1, MRPC 86.5 vs 77.5)", "no_nsp", "ltr",
     "finetune", 1),
    ("[MASK] mismatch, feature-based: 80/10/10 above 100/0/0 (BERT Table 8: NER 94.9 vs 94.0)", "roberta",
     "mask_100_0_0", "probe", 1),
    ("[MASK] mismatch, fine-tuning: 80/10/10 about equal to 100/0/0 (BERT Table 8: MNLI 84.2 vs 84.3)", "roberta",
     "mask_100_0_0", "finetune", 0),
    ("Feature-based: 80/10/10 about equal to 80/20/0 (BERT Table 8: NER 94.9 vs 94.7)", "roberta", "mask_80_20_0",
     "probe", 0),
    ("Fine-tuning: 80/10/10 about equal to 80/20/0 (BERT Table 8: MNLI 84.2 vs 84.4)", "roberta", "mask_80_20_0",
     "finetune", 0),
    ("RoBERTa's recipe beats BERT's (Liu et al. 2019, Table 2: without NSP, full sentences)", "roberta", "bert",
     "finetune", 1),
    ("ALBERT's sharing costs accuracy at equal L and H (Lan et al. 2019, Table 4: all-shared below not-shared)",
     "albert", "bert", "finetune", -1),
    ("ELECTRA beats BERT at equal compute (Clark et al. 2020, Table 1 and Figure 3)", "electra", "bert",
     "finetune", 1),
)


def mean_interval(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% t-interval (Student's t, n - 1 degrees of freedom; 0 for one value)."""
    mean = statistics.mean(values)
    if len(values) < 2:
        return mean, 0.0
    stats = require("scipy.stats", extra="eval", feature="The objectives study's t intervals")

    return mean, float(stats.t.ppf(0.975, len(values) - 1)) * statistics.stdev(values) / math.sqrt(len(values))


def proportion_interval(accuracy: float, count: int) -> float:
    """Half-width of the 95% Wilson interval's larger side of an accuracy over `count` examples (a probe has no seed)."""
    z = 1.959964
    centre = (accuracy + z * z / (2 * count)) / (1 + z * z / count)
    half = z * math.sqrt(accuracy * (1 - accuracy) / count + z * z / (4 * count * count)) / (1 + z * z / count)
    return max(abs(centre + half - accuracy), abs(accuracy - (centre - half)))


def chance_auc_interval(positives: int) -> float:
    """Half-width of the 95% range of a ROC AUC by chance, with `positives` and at least as many negatives
    (Mann-Whitney: variance (n1 + n2 + 1) / (12 n1 n2), at its largest when n2 = n1)."""
    return 1.959964 * math.sqrt((2 * positives + 1) / (12 * positives * positives))


# === What the results hold ===
def arms(results: dict) -> list[str]:
    """The study's evaluated arms (a rate selected, fine-tuned), in `ARMS`' order."""
    tuned = {key.rsplit("_p", 1)[0] for key in results.get("finetune", {})}
    return [name for name in ARMS if name in results.get("selected", {}) and name in tuned]


def pretraining_seeds(results: dict) -> list[int]:
    return sorted({run["pretraining_seed"] for run in results["pretraining"].values()})


def selected_runs(results: dict, arm: str) -> list[dict]:
    """`arm`'s pretraining runs at its selected rate, one per pretraining seed."""
    rate = results["selected"][arm]["learning_rate"]
    return sorted((run for run in results["pretraining"].values()
                   if run["arm"] == arm and run["learning_rate"] == rate), key=lambda run: run["pretraining_seed"])


def finetuned(results: dict, name: str) -> list[float]:
    """Every fine-tuned dev accuracy of `name` (all pretraining and fine-tuning seeds)."""
    return [value for key, value in sorted(results["finetune"].items()) if key.rsplit("_p", 1)[0] == name]


def probe(results: dict, name: str, pooling: str) -> tuple[float, float]:
    """Mean probe accuracy over the pretraining seeds and its Wilson half-width over the dev articles."""
    values = [value for key, value in sorted(results["probe"].items()) if key.rsplit("_p", 1)[0] == name]
    mean = statistics.mean(value[pooling] for value in values)
    return mean, proportion_interval(mean, values[0]["dev_size"])


def strongest_baseline(results: dict) -> tuple[str, float, float]:
    baselines = results["baselines"]
    name = max(BASELINES, key=lambda key: baselines[key])
    return name, baselines[name], proportion_interval(baselines[name], baselines["dev_size"])


def heldout_learned(arm: str, heldout: dict) -> bool:
    """Whether one run's held-out metrics show learning (the rule above)."""
    if ARMS[arm].objective == "electra":
        return heldout["detects_fakes"] >= TRAINED_AUC
    top1 = heldout["next_token_accuracy" if ARMS[arm].objective == "ltr" else "masked_accuracy"]
    return top1 - proportion_interval(top1, heldout["slots"]) > heldout["frequency_accuracy"]


def trained(results: dict, arm: str) -> bool:
    return all(heldout_learned(arm, run["heldout"]) for run in selected_runs(results, arm))


def heldout_cell(arm: str, heldout: dict) -> str:
    """One run's held-out figures: the selection metric and what decides whether it trained."""
    if ARMS[arm].objective == "electra":
        return (f"AUC {heldout['detects_fakes']:.3f} (chance ± {chance_auc_interval(heldout['slots']):.3f}); "
                f"generator top-1 {heldout['masked_accuracy']:.3f}")
    if ARMS[arm].objective == "ltr":
        return (f"next-token loss {heldout['next_token_loss']:.2f}, top-1 {heldout['next_token_accuracy']:.3f} "
                f"(unigram {heldout['frequency_loss']:.2f}, {heldout['frequency_accuracy']:.3f})")
    return (f"MLM loss {heldout['masked_loss']:.2f}, top-1 {heldout['masked_accuracy']:.3f} "
            f"(unigram {heldout['frequency_loss']:.2f}, {heldout['frequency_accuracy']:.3f})")


def verdict(results: dict, arm: str) -> str:
    if not trained(results, arm):
        return "did not train: no ranking"
    fine_mean, fine_half = mean_interval(finetuned(results, arm))
    name, value, half = strongest_baseline(results)
    if fine_mean - fine_half > value + half:
        return f"ahead of the strongest baseline ({BASELINES[name]})"
    return f"not ahead of the strongest baseline ({BASELINES[name]} {value:.3f})"


# === Tables ===
def _row(cells):
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def table(results: dict) -> str:
    """One row per arm, the random encoders and the baselines."""
    seeds = pretraining_seeds(results)
    runs_per_arm = len(finetuned(results, RANDOM))
    lines = [_row(["encoder", "pretraining", "steps", "selected rate", "held-out pretraining metric, per "
                   f"pretraining seed ({', '.join(map(str, seeds))})",
                   f"fine-tuned ({runs_per_arm} runs, 95% t)", "probe `[CLS]` (95% Wilson)", "probe mean",
                   "verdict"]),
             "|---|---|---:|---:|---|---:|---:|---:|---|"]
    for arm in arms(results):
        spec, runs = ARMS[arm], selected_runs(results, arm)
        fine = mean_interval(finetuned(results, arm))
        cls, mean = probe(results, arm, "cls"), probe(results, arm, "mean")
        lines.append(_row([spec.title, f"{spec.description}; {spec.paper}", f"{runs[0]['steps']:,}",
                           f"{results['selected'][arm]['learning_rate']:g}",
                           "; ".join(heldout_cell(arm, run["heldout"]) for run in runs),
                           f"{fine[0]:.3f} ± {fine[1]:.3f}", f"{cls[0]:.3f} ± {cls[1]:.3f}",
                           f"{mean[0]:.3f} ± {mean[1]:.3f}", verdict(results, arm)]))
    fine = mean_interval(finetuned(results, RANDOM))
    cls, mean = probe(results, RANDOM, "cls"), probe(results, RANDOM, "mean")
    lines.append(_row(["random init", "none: the initial weights of each pretraining seed", 0, "-", "-",
                       f"{fine[0]:.3f} ± {fine[1]:.3f}", f"{cls[0]:.3f} ± {cls[1]:.3f}",
                       f"{mean[0]:.3f} ± {mean[1]:.3f}", "reference"]))
    baselines = results["baselines"]
    for name, title in BASELINES.items():
        value = baselines[name]
        lines.append(_row([title, "none", "-", "-", "-", "-",
                           f"{value:.3f} ± {proportion_interval(value, baselines['dev_size']):.3f}", "-",
                           "strongest baseline" if name == strongest_baseline(results)[0] else "baseline"]))
    return "\n".join(lines)


def sweep_table(results: dict) -> str:
    """Each arm's held-out selection metric at each rate of the grid (first pretraining seed)."""
    rates = results["settings"]["learning_rates"]
    seed = pretraining_seeds(results)[0]
    lines = [_row(["encoder", "selection metric", *[f"lr {rate:g}" for rate in rates], "selected"]),
             "|---|---|" + "---:|" * len(rates) + "---:|"]
    for arm in arms(results):
        metric, higher = SELECTION[ARMS[arm].selection]
        cells = []
        for rate in rates:
            run = next((run for run in results["pretraining"].values() if run["arm"] == arm
                        and run["learning_rate"] == rate and run["pretraining_seed"] == seed), None)
            cells.append(f"{run['heldout'][metric]:.4f}" if run else "-")
        lines.append(_row([ARMS[arm].title, f"{metric} ({'higher' if higher else 'lower'} is better)", *cells,
                           f"{results['selected'][arm]['learning_rate']:g}"]))
    return "\n".join(lines)


def _figure(results, arm, measure):
    return mean_interval(finetuned(results, arm)) if measure == "finetune" else probe(results, arm, "mean")


def directions(results: dict) -> list[tuple[str, str]]:
    """(the paper's direction, what this study finds) for each direction whose two arms it ran."""
    found = []
    present = set(arms(results))
    for what, a, b, measure, sign in DIRECTIONS:
        if not {a, b} <= present:
            continue
        untrained = [ARMS[arm].title for arm in (a, b) if not trained(results, arm)]
        if untrained:
            found.append((what, f"no verdict: {' and '.join(untrained)} did not train"))
            continue
        (value_a, half_a), (value_b, half_b) = _figure(results, a, measure), _figure(results, b, measure)
        gap = value_a - value_b
        beyond = abs(gap) > half_a + half_b
        figures = (f"{ARMS[a].title} {value_a:.3f} ± {half_a:.3f}, {ARMS[b].title} {value_b:.3f} ± {half_b:.3f} "
                   f"({'fine-tuned' if measure == 'finetune' else 'probe, mean features'})")
        if sign == 0:
            outcome = "differs (beyond the intervals)" if beyond else "holds (within the intervals)"
        elif not beyond:
            outcome = "not resolved (within the intervals)"
        else:
            outcome = "holds (beyond the intervals)" if (gap > 0) == (sign > 0) else "reversed (beyond the intervals)"
        found.append((what, f"{outcome}: {figures}"))
    return found


def directions_table(results: dict) -> str:
    return "\n".join([_row(["the paper's direction", "at this scale"]), "|---|---|",
                      *(_row(pair) for pair in directions(results))])


def reading(results: dict) -> str:
    """Sentences that follow from the table by `RULES`."""
    text = []
    untrained = [arm for arm in arms(results) if not trained(results, arm)]
    if untrained:
        text.append("Did not train (no ranking): " + "; ".join(
            f"{ARMS[arm].title} ({heldout_cell(arm, selected_runs(results, arm)[0]['heldout'])})"
            for arm in untrained) + ".")
    name, value, half = strongest_baseline(results)
    ahead = [arm for arm in arms(results) if verdict(results, arm).startswith("ahead")]
    text.append(f"The strongest baseline is the {BASELINES[name]} at {value:.3f} ± {half:.3f}. "
                + (f"Ahead of it beyond the intervals: {', '.join(ARMS[arm].title for arm in ahead)}."
                   if ahead else "No arm is ahead of it beyond the intervals."))
    random_mean, random_half = mean_interval(finetuned(results, RANDOM))
    above = [arm for arm in arms(results) if arm not in untrained
             and mean_interval(finetuned(results, arm))[0] - mean_interval(finetuned(results, arm))[1]
             > random_mean + random_half]
    text.append(f"Against the random encoders' {random_mean:.3f} ± {random_half:.3f} fine-tuned, ahead beyond the "
                f"intervals: {', '.join(ARMS[arm].title for arm in above) if above else 'none'}.")
    return " ".join(text)


def setup(results: dict) -> str:
    """The paragraph that says what was run: budget, grid, seeds, task, sizes."""
    recipe, settings, task = results["recipe"], results["settings"], results["task"]
    tune_seeds = len(finetuned(results, RANDOM)) // max(1, len(pretraining_seeds(results)))
    return (
        f"Every arm gets the pretraining FLOPs of {settings['budget_steps']:,} BERT steps (bench FLOP model, "
        "`benchmark.flops`; ELECTRA counts its generator too) at batch "
        f"{recipe['batch_size']} and length {recipe['sequence_length']}, on the quickstart's data (the BBC News "
        "training articles, the WordPiece vocabulary learned from them) and encoder size (L=2, H=128; ALBERT-style "
        "E=64, one set of layer weights). This is a small model and budget, set by the time the whole study may take "
        "on 2 CPU cores, not by any result; the papers' base models train for a million steps. Each arm runs every "
        "rate "
        f"of one grid ({', '.join(f'{rate:g}' for rate in settings['learning_rates'])}) on pretraining seed "
        f"{pretraining_seeds(results)[0]}; its rate is the one with the best held-out pretraining metric on the dev "
        "articles (masked-LM loss; ELECTRA: discriminator AUC; left-to-right: next-token loss), never the task; "
        "BERT and ALBERT-style are selected by their masked-LM loss, not their NSP/SOP accuracy. Optimizers: BERT, "
        "No NSP, left-to-right and ELECTRA AdamW with the objective's warmup; RoBERTa-style and its masking variants "
        "Adam beta2 0.98, epsilon 1e-6; ALBERT-style LAMB. The masking variants are of the RoBERTa-style arm "
        "(dynamic masking, no NSP); the paper's Table 8 ran them with NSP. Then "
        f"{len(pretraining_seeds(results))} pretraining seeds per arm (fresh initial weights, data order and masks) "
        f"at that rate, each fine-tuned with {tune_seeds} seeds ({recipe['finetune_epochs']} epochs, batch "
        f"{recipe['finetune_batch_size']}, lr {recipe['finetune_learning_rate']:g}; each family's head) and probed "
        "(a logistic regression on frozen last-layer `[CLS]` and mean features). The task: the topic of a BBC News "
        f"article (5 topics) from {task['train']['examples']} labelled articles, scored on {task['dev']['examples']} "
        "dev articles (first 48 words of each); its `train.csv` and `dev.csv` are beside the results."
    )


def runtime_sentence(results: dict) -> str:
    """The study's runtime: its calls' recorded time, and never less than its pretraining runs' own recorded time
    (a call interrupted before the study kept every call's time is missing from the first)."""
    calls = results.get("call_seconds", ())
    called = results.get("runtime_seconds", sum(calls))
    pretraining = sum(run.get("seconds", 0) for run in results.get("pretraining", {}).values())
    load = f"on a machine shared with other work (load average at the end {results.get('load_average', ['?'])[0]})"
    over = f" over {len(calls)} call{'s' if len(calls) != 1 else ''}"
    if pretraining > called:
        return (f"Runtime: at least {pretraining / 60:.0f} min, the pretraining runs' own recorded time; the calls "
                f"recorded {called / 60:.0f} min{over} (an interrupted call whose time was not kept is missing "
                f"there), {load}.")
    return f"Runtime: {called / 60:.0f} min{over}, {load}."


def write_report(path: pathlib.Path, results: dict, log: Callable[[str], None] = print) -> pathlib.Path:
    """`report.md`: the setup, the rules, the tables and the reading; the main table is logged too."""
    text = "\n\n".join([
        "# BERT's ablations and successors at equal pretraining FLOPs",
        setup(results), "Rules: " + RULES, table(results), reading(results),
        "## The paper's directions at this scale", directions_table(results),
        "## Rate sweep (held-out pretraining metric, first pretraining seed)", sweep_table(results),
        runtime_sentence(results),
    ]) + "\n"
    path.write_text(text, encoding="utf-8")
    log("\n" + table(results) + "\n\n" + reading(results))
    return path


def write_plot(path: pathlib.Path, results: dict) -> pathlib.Path:
    """`report.png`: fine-tuned accuracy (mean, 95% t-interval, each run) and the mean-feature probe, per encoder."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [*arms(results), RANDOM]
    positions = range(len(rows))
    width = 0.38
    figure, axes = plt.subplots(figsize=(1.5 * len(rows) + 2, 4.2))
    fine = [mean_interval(finetuned(results, name)) for name in rows]
    axes.bar([x - width / 2 for x in positions], [m for m, _ in fine], width, yerr=[h for _, h in fine], capsize=4,
             label="fine-tuned (95% t over pretraining x fine-tuning seeds)")
    for x, name in zip(positions, rows):
        values = finetuned(results, name)
        axes.plot([x - width / 2] * len(values), values, "k.", markersize=4)
    probes = [probe(results, name, "mean") for name in rows]
    axes.bar([x + width / 2 for x in positions], [p for p, _ in probes], width, yerr=[h for _, h in probes], capsize=4,
             label="probe, mean features (95% Wilson)")
    name, value, _ = strongest_baseline(results)
    axes.axhline(value, color="grey", linestyle="--", label=f"strongest baseline ({BASELINES[name]})")
    axes.set_xticks(list(positions), ["random init" if n == RANDOM else ARMS[n].title for n in rows], rotation=20,
                    fontsize=8)
    axes.set_ylabel("dev accuracy (topic)")
    axes.set_ylim(0, 1)
    axes.set_title(f"Equal pretraining FLOPs ({results['settings']['budget_steps']:,} BERT steps each)")
    axes.legend(loc="upper right", fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
