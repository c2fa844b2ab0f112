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
back (pretraining resumes from its checkpoint).

Usage (CPU; several hours at the defaults on 2 busy cores):
    KERAS_BACKEND=tensorflow python tools/electra_vs_bert.py --output runs/electra_vs_bert
    KERAS_BACKEND=tensorflow python tools/electra_vs_bert.py --output runs/electra_vs_bert \\
        --quickstart-run quickstart_run --reuse-bert-run    # data, vocabulary and BERT run of `keras-bert-app quickstart`
    ... --bert-steps 1000 --seeds 0,1,2 --calibration-steps 40
"""

import argparse
import json
import pathlib
import statistics
import sys
import time

QUICKSTART = {
    "sequence_length": 64, "batch_size": 32, "learning_rate": 1e-3, "dropout": 0.0, "finetune_epochs": 8,
    "finetune_batch_size": 16, "finetune_learning_rate": 5e-4, "labeled_articles": 250, "vocab_size": 8000,
    "dupe_factor": 2, "seed": 0,
}


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
    parser.add_argument("--electra-learning-rate", type=float, default=QUICKSTART["learning_rate"])
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

    base = prepare_data(args.quickstart_run or out / "quickstart", log=print)
    records = str(base / "pretraining_data" / "*.tfrecord")
    model_preset = base / "model_preset"

    if "calibration" not in results:
        results["calibration"] = calibrate(model_preset, records, out / "calibration", args)
        save()
    calibration = results["calibration"]
    electra_steps = args.electra_steps or equal_time_steps(args.bert_steps, calibration)
    print(f"Step time: bert {calibration['bert']:.3f} s, electra {calibration['electra']:.3f} s "
          f"(ratio {calibration['electra'] / calibration['bert']:.2f}); {args.bert_steps} BERT steps = "
          f"{electra_steps} ELECTRA steps.")

    runs = {"bert": (out / "bert", args.bert_steps), "electra": (out / "electra", electra_steps)}
    if args.reuse_bert_run:
        runs["bert"] = (base / "pretrain", args.bert_steps)
    for name, (run_dir, steps) in runs.items():
        key = f"pretrain_{name}"
        if key in results and results[key]["steps"] == steps:
            continue
        if name == "bert" and args.reuse_bert_run:
            config = json.loads((run_dir / "run_config.json").read_text())
            if config["steps"] != steps or not (run_dir / "preset").is_dir():
                sys.exit(f"{run_dir} is not a finished {steps}-step run (it has {config['steps']}).")
            seconds = None
        else:
            started = time.monotonic()
            pretrain_run(name, model_preset, records, run_dir, steps, args)
            seconds = time.monotonic() - started
        results[key] = {"steps": steps, "seconds": seconds, "final": last_metrics(run_dir)}
        save()

    encoders = {"bert": runs["bert"][0] / "preset", "electra": runs["electra"][0] / "preset"}
    if not args.no_random:
        encoders["random"] = model_preset
    for name, preset in encoders.items():
        for seed in seeds:
            key = f"finetune_{name}_{seed}"
            if key not in results:
                results[key] = finetune_run(preset, base / "data", out / "finetune" / f"{name}_seed{seed}", seed)
                save()
        if f"probe_{name}" not in results:
            results[f"probe_{name}"] = probe(preset, model_preset, base / "data")
            save()
    print()
    print(table(results, encoders, seeds, runs))


def prepare_data(base, log):
    """The quickstart's corpus, vocabulary, initial model and records in `base` (kept when there)."""
    from keras_bert_app.demo import pipeline
    from keras_bert_app.demo.corpus import make_corpus

    base = pathlib.Path(base)
    settings = {"preset": "bert_tiny_uncased", "vocab_size": QUICKSTART["vocab_size"], "seed": QUICKSTART["seed"],
                "sequence_length": QUICKSTART["sequence_length"], "dupe_factor": QUICKSTART["dupe_factor"]}
    if not (base / "data" / "labeled.csv").is_file():
        make_corpus(base / "data", None, None, QUICKSTART["labeled_articles"], QUICKSTART["seed"], log)
    if not (base / "model_preset" / "model.weights.h5").is_file():
        pipeline.make_model_preset(base, settings, log)
    if not list((base / "pretraining_data").glob("*.tfrecord")):
        pipeline.make_pretraining_data(base, settings, log)
    return base


def pretrain_run(objective, model_preset, records, run_dir, steps, args, checkpoint_every=None, log=print):
    """One quickstart-recipe pretraining run (`kba.pretrain`) of `objective` ("bert" or "electra")."""
    import keras_bert_app as kba

    electra = objective == "electra"
    extra = {"objective": "electra", "generator_size": args.generator_size} if electra else {}
    return kba.pretrain(
        model_preset, run_dir, steps, data=records, batch_size=QUICKSTART["batch_size"],
        learning_rate=args.electra_learning_rate if electra else QUICKSTART["learning_rate"],
        warmup_steps=max(1, steps // 10), checkpoint_every=checkpoint_every or _every(steps),
        output_bias_init="unigram", dropout=QUICKSTART["dropout"], seed=QUICKSTART["seed"], verbose=0, log=log,
        **extra,
    )


def _every(steps, points=20):
    limit = max(1, steps // points)
    return max(d for d in range(1, limit + 1) if steps % d == 0)


def calibrate(model_preset, records, folder, args):
    """Median seconds per step of each objective, from alternated short runs (first interval dropped)."""
    import shutil

    steps = args.calibration_steps
    interval = max(1, steps // 4)
    times = {"bert": [], "electra": []}
    for round_ in range(2):
        for name in ("bert", "electra"):
            lines = []
            run_dir = folder / f"{name}_{round_}"
            shutil.rmtree(run_dir, ignore_errors=True)
            pretrain_run(name, model_preset, records, run_dir, steps, args, checkpoint_every=interval, log=lines.append)
            rates = [float(line.split()[1].replace(",", "")) for line in lines if line.startswith("throughput:")]
            tokens = QUICKSTART["batch_size"] * QUICKSTART["sequence_length"]
            times[name] += [tokens / rate for rate in rates[1:]]
            print(f"  calibration {name} round {round_}: " + ", ".join(f"{tokens / r:.3f}" for r in rates) + " s/step")
    return {name: statistics.median(values) for name, values in times.items()}


def equal_time_steps(bert_steps, calibration, multiple=20):
    steps = bert_steps * calibration["bert"] / calibration["electra"]
    return max(multiple, round(steps / multiple) * multiple)


def last_metrics(run_dir):
    import csv

    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    return {key: float(value) for key, value in rows[-1].items() if value not in ("", "NA") and key != "epoch"}


def finetune_run(preset, data, run_dir, seed):
    import keras_bert_app as kba

    started = time.monotonic()
    result = kba.finetune(
        "classify", preset=preset, output=run_dir, train=data / "labeled.csv", dev=data / "dev.csv",
        text_column="text", label_column="label", epochs=QUICKSTART["finetune_epochs"],
        batch_size=QUICKSTART["finetune_batch_size"], learning_rate=QUICKSTART["finetune_learning_rate"],
        sequence_length=QUICKSTART["sequence_length"], seed=seed, jit_compile=False, verbose=0,
    )
    accuracy = result.metrics["dev"]["accuracy"]
    print(f"  fine-tuned {preset} seed {seed}: dev accuracy {accuracy:.4f} ({time.monotonic() - started:.0f} s)")
    return accuracy


def probe(preset, model_preset, data):
    """Linear-probe dev accuracy on frozen `[CLS]` and mean features (the quickstart's feature stage)."""
    from keras_bert_app.data.text_classification import read_text_classification
    from keras_bert_app.evaluation.linear_probe import encoder_features, probe_accuracy
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor

    train = read_text_classification(data / "labeled.csv", "text", "label")
    dev = read_text_classification(data / "dev.csv", "text", "label", label_names=train.label_names)
    preprocessor = BertPreprocessor.from_preset(model_preset, sequence_length=QUICKSTART["sequence_length"])
    encoder = BertEncoder.from_preset(preset)
    train_features = encoder_features(encoder, preprocessor, train.texts)
    dev_features = encoder_features(encoder, preprocessor, dev.texts)
    result = {pooling: probe_accuracy(train_features[pooling], train.labels, dev_features[pooling], dev.labels)
              for pooling in train_features}
    print(f"  probe {preset}: " + ", ".join(f"{k} {v:.4f}" for k, v in result.items()))
    return result


def _mean_std(values):
    if not values:
        return "-"
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.3f} ± {std:.3f}"


def table(results, encoders, seeds, runs):
    calibration = results["calibration"]
    lines = [
        (
            "| encoder | pretraining | steps | step time | pretraining wall time | fine-tuned dev accuracy "
            f"({len(seeds)} seeds) | probe [CLS] | probe mean |"
        ),
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in encoders:
        accuracies = [results[f"finetune_{name}_{seed}"] for seed in seeds]
        probe_result = results[f"probe_{name}"]
        if name == "random":
            row = ["random init", "none", "0", "-", "-"]
        else:
            run = results[f"pretrain_{name}"]
            seconds = "-" if run["seconds"] is None else f"{run['seconds'] / 60:.0f} min"
            row = [name, "MLM + NSP" if name == "bert" else "ELECTRA (RTD, generator 1/4)", str(run["steps"]),
                   f"{calibration[name]:.2f} s", seconds]
        row += [_mean_std(accuracies), f"{probe_result['cls']:.3f}", f"{probe_result['mean']:.3f}"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
