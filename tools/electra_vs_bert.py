"""ELECTRA vs BERT pretraining at equal wall time, on the quickstart's data: fine-tuned and frozen-feature accuracy.

Both encoders are the quickstart's model (the `bert_tiny_uncased` config,
L=2, H=128, with the WordPiece vocabulary learned from the BBC News training
articles), pretrained from the same initial weights on the same masked
records (`pretraining_data/*.tfrecord`, sequence length 64) with the
quickstart's recipe (batch 32, peak learning rate 1e-3, 10% warmup, no
dropout, unigram output bias):

    bert     `kba.pretrain(..., objective="mlm_nsp")`: masked LM + next sentence prediction
    electra  `kba.pretrain(..., objective="electra")`: replaced-token detection, generator 1/4

Equal wall time: one step of each objective is timed back to back (short
calibration runs, alternated, the median step time after the first
checkpoint interval, which holds the compilation), then ELECTRA runs
`bert_steps * t_bert / t_electra` steps. Step-time ratios survive a busy
machine better than wall clocks: both runs' own wall times are printed too.

Then, for each encoder (and the random initial one, for reference): the
quickstart's fine-tuning (`kba.finetune("classify", ...)` on the 250 labeled
articles, 8 epochs, batch 16, lr 5e-4; dev accuracy over `--seeds`), and the
linear probe on frozen last-layer features (`[CLS]` and mean;
`evaluation.linear_probe`, no seed). Prints a Markdown table (mean ± sample
standard deviation over seeds) and writes `results.json`.

Everything is resumable: rerun the same command and finished parts are read
back (pretraining resumes from its checkpoint). The runs themselves are the
objectives study's (`keras_bert_app.demo.objectives_study_runs`; `keras-bert-app
study objectives` compares BERT, RoBERTa-, ALBERT-style and ELECTRA at equal
wall time); this script keeps the two-way comparison with a fixed BERT step
count and an existing quickstart BERT run.

Usage (CPU; several hours at the defaults on 2 busy cores):
    KERAS_BACKEND=tensorflow python tools/electra_vs_bert.py --output runs/electra_vs_bert
    KERAS_BACKEND=tensorflow python tools/electra_vs_bert.py --output runs/electra_vs_bert \\
        --quickstart-run quickstart_run --reuse-bert-run    # data, vocabulary and BERT run of `keras-bert-app quickstart`
    ... --bert-steps 1000 --seeds 0,1,2 --calibration-steps 40
"""

import argparse
import dataclasses
import functools
import json
import pathlib
import sys

from keras_bert_app.demo import objectives_study_runs as runs
from keras_bert_app.demo.objectives_study import build_quickstart_data, equal_time_steps
from keras_bert_app.demo.objectives_study_report import mean_std

OBJECTIVES = {"bert": "mlm_nsp", "electra": "electra"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", required=True, type=pathlib.Path, help="Folder of this comparison (created).")
    parser.add_argument("--quickstart-run", type=pathlib.Path, default=None,
                        help="A finished `keras-bert-app quickstart` folder: its data/, model_preset/ and "
                             "pretraining_data/ are used (default: built here, as the quickstart does).")
    parser.add_argument("--reuse-bert-run", action="store_true",
                        help="Use the quickstart run's pretrain/ as the BERT run (it must have --bert-steps steps).")
    parser.add_argument("--bert-steps", type=int, default=3000, help="BERT pretraining steps (the quickstart's 3000).")
    parser.add_argument("--electra-steps", type=int, default=None,
                        help="ELECTRA steps (default: the equal-wall-time number from the calibration).")
    parser.add_argument("--electra-learning-rate", type=float, default=runs.Recipe().learning_rate)
    parser.add_argument("--electra-output-bias-init", choices=("unigram", "zeros"), default="unigram",
                        help="the generator's output bias at the start (default: the quickstart's unigram; "
                             "zeros: the paper's, with --electra-learning-rate 1e-4 the README's CPU recipe)")
    parser.add_argument("--generator-size", type=float, default=None, help="ELECTRA generator size (default 1/4).")
    parser.add_argument("--calibration-steps", type=int, default=40, help="Steps of each timing run (a multiple of 4).")
    parser.add_argument("--seeds", default="0,1,2", help="Fine-tuning seeds, comma-separated.")
    parser.add_argument("--no-random", action="store_true", help="Skip the random-encoder reference rows.")
    args = parser.parse_args(argv)
    seeds = [int(seed) for seed in args.seeds.split(",") if seed.strip()]
    out = args.output
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.json"
    results = json.loads(results_path.read_text()) if results_path.is_file() else {}

    def save():
        results_path.write_text(json.dumps(results, indent=2) + "\n")

    base = args.quickstart_run or build_quickstart_data(out / "quickstart", log=print)
    recipe = runs.Recipe.from_quickstart(json.loads((base / "quickstart.json").read_text()))
    records = str(base / "pretraining_data" / "*.tfrecord")
    model_preset = base / "model_preset"
    pretrain = {name: functools.partial(
        runs.pretrain_arm, objective, model_preset, records, recipe=recipe, generator_size=args.generator_size,
        learning_rate=args.electra_learning_rate if name == "electra" else None,
        output_bias_init=args.electra_output_bias_init if name == "electra" else "unigram",
    ) for name, objective in OBJECTIVES.items()}

    if "calibration" not in results:
        results["calibration"] = runs.calibrate(pretrain, out / "calibration", args.calibration_steps, recipe.tokens_per_step)
        save()
    calibration = results["calibration"]
    electra_steps = args.electra_steps or equal_time_steps(args.bert_steps * calibration["bert"], calibration["electra"], 20)
    print(f"Step time: bert {calibration['bert']:.3f} s, electra {calibration['electra']:.3f} s "
          f"(ratio {calibration['electra'] / calibration['bert']:.2f}); {args.bert_steps} BERT steps = "
          f"{electra_steps} ELECTRA steps.")

    run_dirs = {"bert": (out / "bert", args.bert_steps), "electra": (out / "electra", electra_steps)}
    if args.reuse_bert_run:
        run_dirs["bert"] = (base / "pretrain", args.bert_steps)
    for name, (run_dir, steps) in run_dirs.items():
        key = f"pretrain_{name}"
        if key in results and results[key]["steps"] == steps:
            continue
        if name == "bert" and args.reuse_bert_run:
            config = json.loads((run_dir / "run_config.json").read_text())
            if config["steps"] != steps or not (run_dir / "preset").is_dir():
                sys.exit(f"{run_dir} is not a finished {steps}-step run (it has {config['steps']}).")
            seconds = None
        else:
            seconds = runs.pretrain_in_child({
                "objective": OBJECTIVES[name], "preset": str(model_preset), "records": records, "run_dir": str(run_dir),
                "steps": steps, "recipe": dataclasses.asdict(recipe), "generator_size": args.generator_size,
                "learning_rate": args.electra_learning_rate if name == "electra" else None,
                "output_bias_init": args.electra_output_bias_init if name == "electra" else "unigram",
            })["seconds"]
        results[key] = {"steps": steps, "seconds": seconds, "final": runs.last_metrics(run_dir)}
        save()

    encoders = {name: run_dir / "preset" for name, (run_dir, _) in run_dirs.items()}
    if not args.no_random:
        encoders["random"] = model_preset
    for name, preset in encoders.items():
        for seed in seeds:
            key = f"finetune_{name}_{seed}"
            if key not in results:
                results[key] = runs.finetune_accuracy(preset, base / "data", out / "finetune" / f"{name}_seed{seed}",
                                                      seed, recipe)
                save()
        if f"probe_{name}" not in results:
            results[f"probe_{name}"] = runs.probe_accuracies(preset, model_preset, base / "data", recipe.sequence_length)
            save()
    print()
    print(table(results, encoders, seeds))


def table(results, encoders, seeds):
    calibration = results["calibration"]
    lines = [
        (
            "| encoder | pretraining | steps | step time | pretraining wall time | fine-tuned dev accuracy "
            f"({len(seeds)} seeds) | probe [CLS] | probe mean |"
        ),
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in encoders:
        mean, std = mean_std([results[f"finetune_{name}_{seed}"] for seed in seeds])
        probe_result = results[f"probe_{name}"]
        if name == "random":
            row = ["random init", "none", "0", "-", "-"]
        else:
            run = results[f"pretrain_{name}"]
            seconds = "-" if run["seconds"] is None else f"{run['seconds'] / 60:.0f} min"
            row = [name, "MLM + NSP" if name == "bert" else "ELECTRA (RTD, generator 1/4)", str(run["steps"]),
                   f"{calibration[name]:.2f} s", seconds]
        row += [f"{mean:.3f} ± {std:.3f}", f"{probe_result['cls']:.3f}", f"{probe_result['mean']:.3f}"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
