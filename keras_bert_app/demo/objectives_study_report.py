"""The objectives study's `report.md` (table and reading, computed from `results.json`) and `report.png`."""

import math
import pathlib
import statistics
from collections.abc import Callable, Sequence

from keras_bert_app.demo.objectives_study_settings import ARMS, BAG_OF_WORDS, MLM_RATE_FACTOR, RANDOM
from keras_bert_app.extras import require


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


def accuracies(results: dict, name: str, seeds: Sequence[int]) -> list[float]:
    return [results[f"finetune_{name}_{seed}"] for seed in seeds]


def _title(name):
    return "random init" if name == RANDOM else ARMS[name].title


def _final_metrics(final: dict) -> str:
    """The last interval's accuracies: masked LM, the pair task, ELECTRA's two models (with its AUC)."""
    parts = []
    for prefix, label in (("mlm", "MLM"), ("generator_mlm", "generator MLM"), ("nsp", "pair task"),
                          ("discriminator", "replaced-token detection")):
        if f"{prefix}_accuracy" in final:
            parts.append(f"{label} {final[prefix + '_accuracy']:.3f}")
    if "discriminator_auc" in final:
        parts.append(f"AUC {final['discriminator_auc']:.3f}")
    return ", ".join(parts) or "-"


def _probe(results, name, pooling="cls"):
    probe = results[f"probe_{name}"]
    return probe[pooling], proportion_interval(probe[pooling], probe.get("dev_size", 1))


def context_cell(results: dict, name: str) -> str:
    """Which token fits (`evaluation.token_context`): the head's preference for the true token over a frequency-drawn
    fake (95% Wilson), its masked top-1 against the most frequent token's; ELECTRA's discriminator AUC on such fakes."""
    context = results.get(f"context_{name}")
    if context is None:
        return "-"
    share = context["prefers_true"]
    cell = (f"{'generator ' if 'detects_fakes' in context else ''}{share:.3f} ± "
            f"{proportion_interval(share, context['slots']):.3f} (top-1 {context['masked_accuracy']:.3f}, "
            f"most frequent token {context['frequency_accuracy']:.3f})")
    if "detects_fakes" in context:
        cell += f"; discriminator AUC {context['detects_fakes']:.3f}"
    return cell


def table(results: dict, rows: Sequence[str], seeds: Sequence[int]) -> str:
    """The Markdown table: one row per objective, the random encoder, the bag of words."""
    lines = [
        "| encoder | pretraining | steps | pretraining TFLOPs | training time | peak memory | encoder parameters "
        f"| accuracy at the end of pretraining | which token fits: true over a frequency-drawn fake (0.5: frequencies "
        f"only) | fine-tuned ({len(seeds)} seeds, 95% t-interval) | probe `[CLS]` (95% Wilson) | probe mean |",
        "|---|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|",
    ]
    for name in rows:
        mean, half = mean_interval(accuracies(results, name, seeds))
        probe, probe_half = _probe(results, name)
        if name == RANDOM:
            cells = ["random init", "none (the initial weights; ALBERT-style starts from its own)", "0", "0", "-", "-",
                     f"{results['parameters_random']['encoder']:,}", "-"]
        else:
            run, arm = results[f"pretrain_{name}"], ARMS[name]
            source = "records (static masks)" if arm.source == "records" else "corpus, masked at every step"
            rate = f", lr {run['learning_rate']:.3g}" if "learning_rate" in run else ""
            cells = [arm.title, f"`{arm.objective}`, `{arm.pairing}` {source}{rate}", f"{run['steps']:,}",
                     f"{run['flops'] / 1e12:.1f}", f"{run['steps'] * run['run_step_time'] / 60:.1f} min",
                     f"{run['peak_rss_mib']:,.0f} MiB", f"{run['parameters']['encoder']:,}", _final_metrics(run["final"])]
        cells.append(context_cell(results, name))
        cells += [f"{mean:.3f} ± {half:.3f}", f"{probe:.3f} ± {probe_half:.3f}",
                  f"{results[f'probe_{name}']['mean']:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(f"| bag of words | none: logistic regression on word counts | - | - | - | - | - | - | - | - "
                 f"| {results[BAG_OF_WORDS]:.3f} | - |")
    return "\n".join(lines)


def reading(results: dict, objectives: Sequence[str], seeds: Sequence[int]) -> str:
    """Each arm against the random encoder (probe and fine-tuning, beyond the intervals or not), ELECTRA vs BERT."""
    fine = {name: mean_interval(accuracies(results, name, seeds)) for name in [*objectives, RANDOM]}
    probe = {name: _probe(results, name) for name in [*objectives, RANDOM]}
    text = []
    for what, figures in (("probe", probe), ("fine-tuning", fine)):
        random_value, random_half = figures[RANDOM]
        verdicts = []
        for name in objectives:
            value, half = figures[name]
            apart = value - half > random_value + random_half
            verdicts.append(f"{_title(name)} {value:.3f} ({'ahead beyond' if apart else 'not ahead beyond'} the intervals)")
        text.append(f"On {what}, against the random encoder's {random_value:.3f} ± {random_half:.3f}: "
                    + "; ".join(verdicts) + ".")
    if "bert" in objectives and "electra" in objectives:
        gap = fine["electra"][0] - fine["bert"][0]
        apart = abs(gap) > fine["electra"][1] + fine["bert"][1]
        text.append(f"At equal pretraining FLOPs ELECTRA {'leads' if gap >= 0 else 'trails'} BERT by "
                    f"{100 * abs(gap):.1f} points fine-tuned ({'beyond' if apart else 'within'} the intervals), "
                    f"{100 * (probe['electra'][0] - probe['bert'][0]):+.1f} points on the probe.")
    context = {name: results[f"context_{name}"] for name in objectives if f"context_{name}" in results}
    if context:
        beyond = {name: value["prefers_true"] - proportion_interval(value["prefers_true"], value["slots"]) > 0.5
                  for name, value in context.items()}
        text.append("Which token fits a masked slot of the held-out articles (a head that knows only the word "
                    "frequencies prefers the true token to a frequency-drawn fake at half the slots): " + "; ".join(
                        f"{_title(name)}{' generator' if 'detects_fakes' in value else ''} {value['prefers_true']:.3f}"
                        f" ({'above' if beyond[name] else 'not above'} 0.5 beyond its interval)"
                        for name, value in context.items()) + ".")
        detects = False
        if "detects_fakes" in context.get("electra", {}):
            auc = context["electra"]["detects_fakes"]
            detects = auc - chance_auc_interval(context["electra"]["slots"]) > 0.5
            text.append(f"ELECTRA's discriminator tells such fakes from the real tokens at AUC {auc:.3f} (0.5: not "
                        f"by their context; {'above' if detects else 'not above'} 0.5 beyond chance).")
        if not any(beyond.values()) and detects:
            text.append("No head learned which token fits beyond the word frequencies in this budget, but ELECTRA's "
                        "discriminator tells frequency-drawn fakes by their context.")
        elif not any(beyond.values()):
            text.append("No arm learned which token fits beyond the word frequencies in this budget. ELECTRA's "
                        "discriminator learns from context alone once its generator samples those frequencies, so "
                        "here it had little to learn from; a verdict on ELECTRA needs a budget at which the masked-LM "
                        "heads rise above 0.5.")
    text.append(f"A bag of words scores {results[BAG_OF_WORDS]:.3f}: the task is not told apart by its words.")
    return " ".join(text)


def _arm_figures(results, name, seeds):
    """(fine-tuned mean and half-width, probe [CLS] and half-width, the context figures or None) of one arm."""
    return (mean_interval(accuracies(results, name, seeds)), _probe(results, name), results.get(f"context_{name}"))


def budget_ablation(smaller: dict, larger: dict) -> str:
    """The steps ablation: the arms of two runs of the study at different `--budget-steps` (Markdown table and a
    reading); why an arm gains more or less from a larger budget, as far as the which-token-fits check says."""
    budgets = [results["settings"]["budget_steps"] for results in (smaller, larger)]
    arms = [name for name in ARMS if f"pretrain_{name}" in smaller and f"pretrain_{name}" in larger]
    seeds = [sorted(int(key.rsplit("_", 1)[1]) for key in results if key.startswith(f"finetune_{RANDOM}_"))
             for results in (smaller, larger)]
    lines = [
        f"| encoder | steps at {budgets[0]:,} → {budgets[1]:,} BERT steps' FLOPs | fine-tuned | probe `[CLS]` | which "
        "token fits (0.5: frequencies only) | ELECTRA's discriminator AUC on frequency-drawn fakes |",
        "|---|---:|---:|---:|---|---|",
    ]
    gains = {}
    for name in arms:
        (fine_a, probe_a, context_a), (fine_b, probe_b, context_b) = (
            _arm_figures(results, name, arm_seeds) for results, arm_seeds in zip((smaller, larger), seeds))
        gains[name] = fine_b[0] - fine_a[0]
        fits = (f"{context_a['prefers_true']:.3f} → {context_b['prefers_true']:.3f}"
                if context_a and context_b else "-")
        auc = (f"{context_a['detects_fakes']:.3f} → {context_b['detects_fakes']:.3f}"
               if context_a and context_b and "detects_fakes" in context_b else "-")
        lines.append(f"| {_title(name)} | {smaller[f'pretrain_{name}']['steps']:,} → "
                     f"{larger[f'pretrain_{name}']['steps']:,} | {fine_a[0]:.3f} ± {fine_a[1]:.3f} → {fine_b[0]:.3f} ± "
                     f"{fine_b[1]:.3f} | {probe_a[0]:.3f} → {probe_b[0]:.3f} | {fits} | {auc} |")
    text = ["From the smaller budget to the larger, fine-tuned accuracy moves by " + "; ".join(
        f"{_title(name)} {100 * gain:+.1f} points" for name, gain in gains.items()) + "."]
    context = {name: larger.get(f"context_{name}") for name in arms}
    learned = [name for name, value in context.items() if value and name != "electra"
               and value["prefers_true"] - proportion_interval(value["prefers_true"], value["slots"]) > 0.5]
    electra = context.get("electra")
    if learned and electra and electra["prefers_true"] - proportion_interval(electra["prefers_true"],
                                                                             electra["slots"]) <= 0.5:
        rates = {name: larger[f"pretrain_{name}"]["learning_rate"] for name in arms}
        text.append(
            f"At the larger budget the masked-LM heads know which token fits ({', '.join(map(_title, learned))}), "
            f"but ELECTRA's generator (a quarter of the encoder, at ELECTRA's rate {rates['electra']:g} against "
            f"{rates[learned[0]]:g}) prefers the true token at only {electra['prefers_true']:.3f} of the slots: its "
            "samples are nearly frequency-drawn, fakes the discriminator can tell only by their context (AUC "
            f"{electra['detects_fakes']:.3f} on such fakes). ELECTRA gains from the larger budget, less than the "
            "masked-LM arms; the paper compares them after a million steps.")
    return "\n".join(lines) + "\n\n" + " ".join(text)


def write_report(path: pathlib.Path, results: dict, rows: Sequence[str], seeds: Sequence[int],
                 log: Callable[[str], None] = print) -> pathlib.Path:
    """`report.md`: the setup, the table and the reading; the table is logged too."""
    objectives = [name for name in rows if name != RANDOM]
    recipe = results["recipe"]
    budget = results["settings"]["budget_steps"]
    text = "\n".join([
        "# BERT's successors at equal pretraining FLOPs",
        "",
        f"Every objective gets the pretraining FLOPs of {budget:,} BERT steps (bench FLOP model, "
        "`benchmark.flops`: 6 N T + 12 L H S T per step; ELECTRA counts its generator too), with its own paper's "
        "data, masking and recipe (the objective's warmup and a zero output bias; its paper's peak learning rate at "
        f"this batch, times {MLM_RATE_FACTOR} for the masked-LM arms, which learn next to nothing at the rates of "
        "base models trained a million steps; ELECTRA at its own: faster, its discriminator stalls), on the "
        "quickstart's data: the BBC News training articles and the WordPiece vocabulary learned from them (one "
        f"tokenizer for all), sequences of {recipe['sequence_length']} tokens, batch {recipe['batch_size']}, seed "
        f"{recipe['seed']}; the quickstart's encoder size (L=2, H=128). ALBERT-style: E=128, one set of layer weights.",
        "",
        "The task: is a sentence of the dev articles in its own word order, or are its words shuffled? (sentences "
        "of 6-30 words from the labeled articles for training, from the dev articles for scoring, half shuffled). "
        "BBC topics are told apart by their words (a bag of words gets 0.80), so pretraining barely matters there; "
        "here a bag of words is at chance by construction, and a few hundred labels are too few to learn word "
        "order from scratch.",
        "",
        f"Each encoder, and the random one BERT started from, is fine-tuned ({recipe['finetune_epochs']} epochs, "
        f"batch {recipe['finetune_batch_size']}, lr {recipe['finetune_learning_rate']:g}; each family's head and "
        f"layer-wise decay: ELECTRA the raw `[CLS]` and 0.8; seeds {', '.join(map(str, seeds))}) and probed: a "
        "logistic regression on its frozen last-layer `[CLS]` and mean features.",
        "",
        table(results, rows, seeds),
        "",
        reading(results, objectives, seeds),
        "",
        f"Runtime: {results.get('runtime_seconds', 0) / 60:.1f} min"
        + (f" over {len(results['call_seconds'])} calls" if len(results.get("call_seconds", ())) > 1 else "")
        + f", load average at the end {results.get('load_average', ['?'])[0]}.",
        "",
    ])
    path.write_text(text, encoding="utf-8")
    log("\n" + table(results, rows, seeds) + "\n\n" + reading(results, objectives, seeds))
    return path


def write_plot(path: pathlib.Path, results: dict, rows: Sequence[str], seeds: Sequence[int]) -> pathlib.Path:
    """`report.png`: fine-tuned accuracy (mean, 95% t-interval, each seed) and the [CLS] probe, per encoder."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    positions = range(len(rows))
    width = 0.38
    figure, axes = plt.subplots(figsize=(1.9 * len(rows) + 2, 4.2))
    fine = [mean_interval(accuracies(results, name, seeds)) for name in rows]
    axes.bar([x - width / 2 for x in positions], [m for m, _ in fine], width, yerr=[h for _, h in fine], capsize=4,
             label=f"fine-tuned ({len(seeds)} seeds, 95% t-interval)")
    for x, name in zip(positions, rows):
        values = accuracies(results, name, seeds)
        axes.plot([x - width / 2] * len(values), values, "k.", markersize=4)
    probes = [_probe(results, name) for name in rows]
    axes.bar([x + width / 2 for x in positions], [p for p, _ in probes], width, yerr=[h for _, h in probes], capsize=4,
             label="probe [CLS] (95% Wilson)")
    axes.axhline(results[BAG_OF_WORDS], color="grey", linestyle="--", label="bag of words")
    axes.set_xticks(list(positions), [_title(name) for name in rows])
    axes.set_ylabel("dev accuracy (word order)")
    axes.set_ylim(0, 1)
    axes.set_title(f"Equal pretraining FLOPs ({results['settings']['budget_steps']:,} BERT steps each)")
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
