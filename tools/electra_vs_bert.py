"""ELECTRA vs BERT at equal pretraining FLOPs, with ELECTRA's generator size and its steps as the ablations.

Runs the objectives study's BERT and ELECTRA arms (`kba.study_objectives`:
each with its paper's data, masking and recipe, the same pretraining FLOPs
by the bench's FLOP model, the topic task, fine-tuning over seeds and
the frozen-feature probe), then ELECTRA again:
- with each `--generator-sizes` (a fraction of the discriminator's width;
  the paper's best is 1/4 to 1/2, and a generator too strong or too weak
  starves the discriminator), each at the same FLOPs, so a larger generator
  gets fewer steps;
- for each `--steps-factors` times its own steps (generator 1/4): whether
  more pretraining than the budget brings ELECTRA ahead.
Every row also says which token fits a masked slot of the held-out articles
beyond the word frequencies (`evaluation.token_context`; ELECTRA's
discriminator: its AUC on frequency-drawn fakes). Prints a Markdown table
(means with 95% t-intervals) and writes `ablation.json` beside the study's
`results.json`. Resumable: rerun the same command.

    KERAS_BACKEND=tensorflow python tools/electra_vs_bert.py --output runs/electra_vs_bert
    ... --quickstart-run quickstart_run --budget-steps 1500 --seeds 0,1,2,3,4 --generator-sizes 0.125,0.5 \
        --steps-factors 4
"""

import argparse
import json
import pathlib
import sys

from keras_bert_app import presets
from keras_bert_app.benchmark.flops import model_flops
from keras_bert_app.demo import objectives_study_runs as runs
from keras_bert_app.demo.objectives_study import finetune_key, run_key, study_objectives
from keras_bert_app.demo.objectives_study_inputs import equal_flops_steps, flops_per_step
from keras_bert_app.demo.objectives_study_report import mean_interval, proportion_interval, pretraining_seeds
from keras_bert_app.models.electra_generator import generator_config
from keras_bert_app.training.pretraining_inputs import records_shape


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", required=True, type=pathlib.Path, help="folder of this comparison (created)")
    parser.add_argument("--quickstart-run", type=pathlib.Path, default=None, help="a finished quickstart folder")
    parser.add_argument("--budget-steps", type=int, default=200,
                        help="pretraining FLOPs: those of this many BERT steps (default: %(default)s)")
    parser.add_argument("--seeds", default="0,1,2", help="fine-tuning seeds (default: %(default)s)")
    parser.add_argument("--generator-sizes", default="0.125,0.5",
                        help="ELECTRA generator sizes of the ablation (default: %(default)s)")
    parser.add_argument("--steps-factors", default="",
                        help="ELECTRA runs of these multiples of its own steps (default: none)")
    args = parser.parse_args(argv)
    seeds = [int(seed) for seed in args.seeds.split(",")]
    study = study_objectives(args.output, quickstart_run=args.quickstart_run, budget_steps=args.budget_steps,
                             seeds=seeds, pretraining_seeds=[0], objectives=["bert", "electra"])
    results = study["results"]
    first = pretraining_seeds(results)[0]
    rate = results["selected"]["electra"]["learning_rate"]  # the study's, selected on held-out AUC
    base = args.quickstart_run or args.output / "quickstart"
    recipe = runs.Recipe(**results["recipe"])
    model_preset, task = base / "model_preset", args.output / "task"
    path = args.output / "ablation.json"
    ablation = json.loads(path.read_text()) if path.is_file() else {}
    budget = results["plan"]["bert"]["steps"] * results["plan"]["bert"]["flops_per_step"]
    electra_steps = results["plan"]["electra"]["steps"]
    variants = {}  # name: (title, generator size or None for the study's, steps)
    for size in _numbers(args.generator_sizes):
        generator = generator_config(presets.read_config(model_preset)["encoder"], size)
        step = flops_per_step("bert", model_preset, recipe) + model_flops(
            generator, recipe.batch_size, recipe.sequence_length, training=True)
        steps = equal_flops_steps(budget, step)
        variants[f"electra_generator_{size:g}"] = (f"ELECTRA, generator {size:g}", size, steps)
    for factor in _numbers(args.steps_factors):
        steps = round(factor * electra_steps)
        variants[f"electra_steps_{factor:g}x"] = (f"ELECTRA, {factor:g}x its steps", None, steps)
    rows = {"BERT": ("bert", None), "ELECTRA, generator 0.25": ("electra", None)}
    for name, (title, size, steps) in variants.items():
        entry = ablation.setdefault(name, {})
        preset = args.output / "ablation" / name / "preset"
        if entry.get("steps") != steps:
            entry.clear()
            entry["steps"] = steps
            run_dir = args.output / "ablation" / name
            runs.pretrain_arm("electra", str(model_preset), str(base / "data" / "corpus.txt"), str(run_dir), steps,
                              recipe, source="corpus", pairing="segments", generator_size=size, learning_rate=rate,
                              max_predictions=records_shape(str(base / "pretraining_data" / "*.tfrecord"))[1])
            entry["final"] = runs.last_metrics(run_dir)
            path.write_text(json.dumps(ablation, indent=2) + "\n")
        for seed in seeds:
            if f"finetune_{seed}" not in entry:
                entry[f"finetune_{seed}"] = runs.finetune_accuracy(
                    preset, task, args.output / "ablation" / f"{name}_ft{seed}", seed, recipe)
                path.write_text(json.dumps(ablation, indent=2) + "\n")
        if "probe" not in entry:
            entry["probe"] = runs.probe_accuracies(preset, model_preset, task, recipe.sequence_length)
        if "context" not in entry:
            entry["context"] = runs.context_check("electra", preset, base / "data" / "dev.csv", recipe.sequence_length)
        path.write_text(json.dumps(ablation, indent=2) + "\n")
        rows[title] = (name, entry)
    print("| encoder | steps | fine-tuned (95% t-interval) | probe [CLS] | which token fits | discriminator AUC on "
          "frequency-drawn fakes |\n|---|---:|---:|---:|---:|---:|")
    for title, (name, entry) in rows.items():
        if entry is None:
            run = results["pretraining"][run_key(name, first, results["selected"][name]["learning_rate"])]
            entry = {"steps": run["steps"], "probe": results["probe"][f"{name}_p{first}"], "context": run["heldout"],
                     **{f"finetune_{seed}": results["finetune"][finetune_key(name, first, seed)] for seed in seeds}}
        mean, half = mean_interval([entry[f"finetune_{seed}"] for seed in seeds])
        probe, context = entry["probe"], entry["context"]
        fits = f"{context['prefers_true']:.3f}" if "prefers_true" in context else "-"
        auc = f"{context['detects_fakes']:.3f}" if "detects_fakes" in context else "-"
        print(f"| {title} | {entry['steps']:,} | {mean:.3f} ± {half:.3f} "
              f"| {probe['cls']:.3f} ± {proportion_interval(probe['cls'], probe['dev_size']):.3f} | {fits} | {auc} |")
    return 0


def _numbers(text):
    return [float(part) for part in text.split(",") if part.strip()]


if __name__ == "__main__":
    sys.exit(main())
