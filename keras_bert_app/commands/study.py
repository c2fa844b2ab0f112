"""`keras-bert-app study objectives`: BERT, its ablations and its successors at equal pretraining FLOPs.

    keras-bert-app study objectives                                    # hours on 2 busy CPU cores: see --help
    keras-bert-app study objectives --quickstart-run quickstart_run --output runs/objectives_study
    keras-bert-app study objectives --budget-steps 1000 --seeds 0,1,2,3,4 --objectives bert,electra
    keras-bert-app study distill                                       # Turc et al.'s comparison: see --help

Calls `kba.study_objectives` (keras_bert_app/demo/objectives_study.py says
what each stage does): writes `results.json`, `report.md` and `report.png`
in `--output`. Run the same command again after an interruption and it
continues where it stopped.
"""

import argparse

from keras_bert_app.commands.options import comma_separated


def add_arguments(parser):
    from keras_bert_app.demo import objectives_study_settings as d  # standard library only

    studies = parser.add_subparsers(dest="study", metavar="STUDY", required=True)
    sub = studies.add_parser(
        "objectives", help="BERT's ablations and successors at equal pretraining FLOPs on the quickstart's data",
        description="Pretrain each arm with the same pretraining FLOPs on the quickstart's data, each at the rate of "
        "one grid that scores best on its own held-out pretraining metric, at several pretraining seeds; then "
        "fine-tune (several seeds each) and probe each, the random encoders, and the majority-class, bag-of-words "
        "and surface-feature baselines on BBC topic classification from few labels; report.md, report.png, "
        f"results.json and the task's train.csv/dev.csv. Runtime: {d.runtime_line()}; a rerun continues an "
        "interrupted study. Arms: " + "; ".join(f"{name} ({arm.title}: {arm.description})"
                                                for name, arm in d.ARMS.items()) + ".",
    )
    sub.add_argument("--output", default=d.DEFAULT_OUTPUT, help="folder of the study (default: %(default)s)")
    sub.add_argument(
        "--quickstart-run", default=None,
        help="a finished `keras-bert-app quickstart` folder: its data, vocabulary, initial model and records are "
        "used (default: built in OUTPUT/quickstart as the quickstart builds them)",
    )
    sub.add_argument("--budget-steps", type=int, default=d.DEFAULT_BUDGET_STEPS,
                     help=f"pretraining FLOPs of each objective: those of this many BERT steps, at least "
                     f"{d.MIN_BUDGET_STEPS} (default: %(default)s)")
    # Equal time was replaced by equal FLOPs: the old flag parses, and is refused in one line naming the new one.
    sub.add_argument("--minutes", type=float, default=None, help=argparse.SUPPRESS)
    sub.add_argument("--seeds", default=",".join(map(str, d.DEFAULT_SEEDS)),
                     help="comma-separated fine-tuning seeds, for each pretraining seed (default: %(default)s)")
    sub.add_argument("--pretraining-seeds", default=",".join(map(str, d.DEFAULT_PRETRAINING_SEEDS)),
                     help="comma-separated pretraining seeds; the first runs the rate sweep (default: %(default)s)")
    sub.add_argument("--learning-rates", default=",".join(f"{rate:g}" for rate in d.LEARNING_RATES),
                     help="comma-separated peak pretraining rates, the one grid every arm is swept over "
                     "(default: %(default)s)")
    sub.add_argument("--objectives", default=",".join(d.ARMS),
                     help=f"comma-separated, of {', '.join(d.ARMS)} (default: all)")
    _add_distill(studies)


def _add_distill(studies):
    from keras_bert_app.demo import distill_study_settings as d  # standard library only

    sub = studies.add_parser(
        "distill", help="Turc et al.'s comparison: a small student fine-tuned, distilled, pretrained, or pretrained "
        "and distilled, on the quickstart's data",
        description="The same small student (" + d.STUDENT_SIZE + ", layers x hidden) on BBC News topics from the "
        "quickstart's 250 labelled articles: " + "; ".join(arm.title for arm in d.ARMS.values()) + "; beside a "
        "MiniLM-L6 teacher, the majority class and a bag of words; each row's accuracy with its interval over the "
        "seeds, parameters and serving speed. Writes results.json and report.md, and compares Turc et al.'s "
        f"ordering with ours. Runtime: {d.runtime_line()}; a rerun continues an interrupted study.",
    )
    sub.add_argument("--output", default=d.DEFAULT_OUTPUT, help="folder of the study (default: %(default)s)")
    sub.add_argument("--seeds", default=",".join(map(str, d.DEFAULT_SEEDS)),
                     help="comma-separated student seeds, every arm at each (default: %(default)s)")
    sub.add_argument("--pretrain-steps", type=int, default=d.PRETRAIN_STEPS,
                     help=f"masked-LM pretraining steps of the student, batch {d.PRETRAIN_BATCH_SIZE} "
                     "(default: %(default)s)")


def run(args):
    from keras_bert_app import errors

    if args.study == "distill":
        return _run_distill(args)
    from keras_bert_app.demo.objectives_study import study_objectives

    if args.minutes is not None:
        raise errors.ArgumentError(
            "minutes", "--minutes (equal pretraining time) was replaced by --budget-steps: every objective now gets "
            "the pretraining FLOPs of that many BERT steps.")
    numbers = {}
    for flag, kind in (("seeds", int), ("pretraining_seeds", int), ("learning_rates", float)):
        value = getattr(args, flag)
        try:
            numbers[flag] = [kind(item) for item in comma_separated(value)]
        except ValueError:
            raise errors.ArgumentError(flag, f"--{flag.replace('_', '-')} must be comma-separated "
                                       f"{'integers' if kind is int else 'numbers'}; got {value!r}.") from None
    result = study_objectives(
        args.output, quickstart_run=args.quickstart_run, budget_steps=args.budget_steps,
        objectives=comma_separated(args.objectives), log=print, **numbers,
    )
    print(f"\nDone. Report: {result['report']}")
    return 0


def _run_distill(args):
    from keras_bert_app import errors
    from keras_bert_app.demo.distill_study import study_distill

    try:
        seeds = [int(item) for item in comma_separated(args.seeds)]
    except ValueError:
        raise errors.ArgumentError("seeds", f"--seeds must be comma-separated integers; got {args.seeds!r}.") from None
    result = study_distill(args.output, seeds=seeds, pretrain_steps=args.pretrain_steps, log=print)
    print(f"\nDone. Report: {result['report']}")
    return 0
