"""The objectives study's `report.md` (table and reading, computed from `results.json`) and `report.png`."""

import pathlib
import statistics
from collections.abc import Callable, Sequence

from keras_bert_app.demo.objectives_study_settings import ARMS, RANDOM


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value)."""
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def accuracies(results: dict, name: str, seeds: Sequence[int]) -> list[float]:
    return [results[f"finetune_{name}_{seed}"] for seed in seeds]


def _final_metrics(final: dict) -> str:
    """The last interval's accuracies (masked-LM loss in brackets): masked LM, the pair task, ELECTRA's two models."""
    parts = []
    for prefix, label in (("mlm", "MLM"), ("generator_mlm", "generator MLM"), ("nsp", "pair task"),
                          ("discriminator", "replaced-token detection")):
        if f"{prefix}_accuracy" in final:
            loss = f" (loss {final[prefix + '_loss']:.2f})" if "mlm" in prefix and f"{prefix}_loss" in final else ""
            parts.append(f"{label} {final[prefix + '_accuracy']:.3f}{loss}")
    return ", ".join(parts) or "-"


def run_step_time(results: dict, name: str) -> float:
    """Median seconds per step of the pretraining run itself (its last interval's, for results without it)."""
    run = results[f"pretrain_{name}"]
    if "run_step_time" in run:
        return run["run_step_time"]
    recipe = results["recipe"]
    return recipe["batch_size"] * recipe["sequence_length"] / run["final"]["tokens_per_second"]


def table(results: dict, rows: Sequence[str], seeds: Sequence[int]) -> str:
    """The Markdown table: one row per objective, then the random encoder."""
    lines = [
        "| encoder | pretraining | steps | step time: timing runs / the run | training time | process wall time "
        "| peak memory | encoder parameters | pretrainer parameters | accuracy at the end of pretraining "
        f"| fine-tuned dev accuracy ({len(seeds)} seed{'s' if len(seeds) > 1 else ''}) | probe `[CLS]` | probe mean |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for name in rows:
        mean, std = mean_std(accuracies(results, name, seeds))
        probe = results[f"probe_{name}"]
        if name == RANDOM:
            parameters = results["parameters_random"]
            cells = ["random init", "none (the initial weights; ALBERT-style starts from its own)", "0", "-", "-", "-",
                     "-", f"{parameters['encoder']:,}", "-", "-"]
        else:
            run = results[f"pretrain_{name}"]
            arm = ARMS[name]
            step_time = run_step_time(results, name)
            cells = [arm.title, f"`{arm.objective}` on `{arm.pairing}` records", f"{run['steps']:,}",
                     f"{results['calibration'][name]:.3f} s / {step_time:.3f} s",
                     f"{run['steps'] * step_time / 60:.1f} min", f"{run['seconds'] / 60:.1f} min",
                     f"{run['peak_rss_mib']:,.0f} MiB", f"{run['parameters']['encoder']:,}",
                     f"{run['parameters']['pretrainer']:,}", _final_metrics(run["final"])]
        cells += [f"{mean:.3f} ± {std:.3f}", f"{probe['cls']:.3f}", f"{probe['mean']:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def reading(results: dict, objectives: Sequence[str], seeds: Sequence[int]) -> str:
    """Which objective wins, by how much, against the seed spread; computed from the numbers."""
    fine = {name: mean_std(accuracies(results, name, seeds)) for name in [*objectives, RANDOM]}
    ranked = sorted(objectives, key=lambda name: fine[name][0], reverse=True)
    best = ranked[0]
    title = lambda name: "the random encoder" if name == RANDOM else ARMS[name].title
    spread = f"sample standard deviation over {len(seeds)} seeds" if len(seeds) > 1 else "one seed: no spread measured"
    text = [f"Fine-tuned dev accuracy ranks {', '.join(f'{title(n)} {fine[n][0]:.3f}' for n in ranked)} "
            f"(random init {fine[RANDOM][0]:.3f}; ± is the {spread})."]
    for other in [*ranked[1:2], RANDOM]:
        gap = fine[best][0] - fine[other][0]
        noise = max(fine[best][1], fine[other][1])
        verdict = (", " + ("beyond" if abs(gap) > noise else "within") + f" the larger seed spread ({noise:.3f})"
                   if len(seeds) > 1 else "")
        text.append(f"{title(best)} {'leads' if gap >= 0 else 'trails'} {title(other)} by {100 * abs(gap):.1f} points"
                    f"{verdict}.")
    trained = {name: results[f"pretrain_{name}"]["steps"] * run_step_time(results, name) / 60 for name in objectives}
    text.append(f"Training time in the runs (steps x their own median step time): "
                f"{', '.join(f'{title(n)} {trained[n]:.1f} min' for n in objectives)}, against the "
                f"{results['settings']['minutes']:g} minutes planned from the timing runs.")
    probe = {name: results[f"probe_{name}"]["cls"] for name in [*objectives, RANDOM]}
    best_probe = max(objectives, key=probe.get)
    text.append(f"On frozen `[CLS]` features the best is {title(best_probe)} ({probe[best_probe]:.3f}; "
                f"random init {probe[RANDOM]:.3f}).")
    return " ".join(text)


def write_report(path: pathlib.Path, results: dict, rows: Sequence[str], seeds: Sequence[int],
                 log: Callable[[str], None] = print) -> pathlib.Path:
    """`report.md`: the setup, the table and the reading; the table is logged too."""
    objectives = [name for name in rows if name != RANDOM]
    minutes = results["settings"]["minutes"]
    recipe = results["recipe"]
    text = "\n".join([
        "# BERT's successors, measured",
        "",
        f"Each objective pretrained for {minutes:g} minutes of step time (steps = {minutes:g} x 60 s / the median "
        "step time of short alternated timing runs) on the quickstart's data: the BBC News training articles, the "
        "WordPiece vocabulary learned from them (the same tokenizer for every objective, so the comparison is of "
        f"objectives and architectures), sequences of {recipe['sequence_length']} tokens, batch {recipe['batch_size']}, "
        f"peak learning rate {recipe['learning_rate']:g} with 10% warmup, no dropout, unigram output bias, seed "
        f"{recipe['seed']}; the quickstart's encoder size (L=2, H=128). ALBERT-style: embeddings E=128, which at "
        "H=128 factorises nothing, so its fewer parameters come from the layers sharing one set of weights.",
        "",
        f"Then each encoder, and the random one BERT started from, is fine-tuned on the 250 labeled articles "
        f"({recipe['finetune_epochs']} epochs, batch {recipe['finetune_batch_size']}, lr "
        f"{recipe['finetune_learning_rate']:g}; seeds {', '.join(map(str, seeds))}) and probed: a logistic regression "
        "on its frozen last-layer `[CLS]` and mean features. Dev accuracy on the held-out dev articles.",
        "",
        table(results, rows, seeds),
        "",
        reading(results, objectives, seeds),
        "",
        "Step time: the median over the timing runs (which set the steps) and over the run itself (first interval, "
        "with the compilation, left out); training time: steps x the run's step time. Process wall time: the child "
        "process' whole run (start-up, compilation, checkpoints included). Peak memory: the "
        "child process' peak resident set size (Linux `VmHWM`: interpreter, framework, compilation, "
        "data pipeline and model together). Encoder parameters: the encoder fine-tuning uses (pooler included); "
        "pretrainer parameters: everything pretraining trains (heads, and ELECTRA's generator, whose embeddings "
        "it shares with the encoder).",
        "",
    ])
    path.write_text(text, encoding="utf-8")
    log("\n" + table(results, rows, seeds) + "\n\n" + reading(results, objectives, seeds))
    return path


def write_plot(path: pathlib.Path, results: dict, rows: Sequence[str], seeds: Sequence[int]) -> pathlib.Path:
    """`report.png`: fine-tuned accuracy (mean, sample std, each seed) and the two probes, per encoder."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["random init" if name == RANDOM else ARMS[name].title for name in rows]
    positions = range(len(rows))
    width = 0.27
    figure, axes = plt.subplots(figsize=(1.9 * len(rows) + 2, 4.2))
    fine = [mean_std(accuracies(results, name, seeds)) for name in rows]
    axes.bar([x - width for x in positions], [m for m, _ in fine], width, yerr=[s for _, s in fine], capsize=4,
             label=f"fine-tuned ({len(seeds)} seeds, ± sample std)")
    for x, name in zip(positions, rows):
        values = accuracies(results, name, seeds)
        axes.plot([x - width] * len(values), values, "k.", markersize=4)
    for offset, pooling, label in ((0, "cls", "probe [CLS]"), (width, "mean", "probe mean")):
        axes.bar([x + offset for x in positions], [results[f"probe_{name}"][pooling] for name in rows], width, label=label)
    axes.set_xticks(list(positions), names)
    axes.set_ylabel("dev accuracy (BBC News topics)")
    axes.set_ylim(0, 1)
    axes.set_title(f"Equal pretraining time ({results['settings']['minutes']:g} min each)")
    axes.legend(loc="upper right", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
