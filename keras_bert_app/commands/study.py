"""`keras-bert-app study objectives`: BERT, RoBERTa-, ALBERT-style and ELECTRA at equal pretraining FLOPs.

    keras-bert-app study objectives                                    # about 2.5 hours on 2 idle CPU cores
    keras-bert-app study objectives --quickstart-run quickstart_run --output runs/objectives_study
    keras-bert-app study objectives --budget-steps 1500 --seeds 0,1,2,3,4,5,6,7 --objectives bert,electra

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
        "objectives", help="BERT's successors at equal pretraining FLOPs on the quickstart's data",
        description="Pretrain BERT (mlm_nsp, static nsp records), RoBERTa-style (mlm, full sentences masked at every "
        "step), ALBERT-style (mlm_sop, shared layers, E=128) and ELECTRA (its reference recipe) with the same "
        "pretraining FLOPs on the quickstart's data, then fine-tune (several seeds) and probe each, the random "
        "encoder and a bag of words on a word-order task; report.md, report.png and results.json.",
    )
    sub.add_argument("--output", default=d.DEFAULT_OUTPUT, help="folder of the study (default: %(default)s)")
    sub.add_argument(
        "--quickstart-run", default=None,
        help="a finished `keras-bert-app quickstart` folder: its data, vocabulary, initial model and records are "
        "used (default: built in OUTPUT/quickstart as the quickstart builds them)",
    )
    sub.add_argument("--budget-steps", type=int, default=d.DEFAULT_BUDGET_STEPS,
                     help="pretraining FLOPs of each objective: those of this many BERT steps (default: %(default)s)")
    # Equal time was replaced by equal FLOPs: the old flag parses, and is refused in one line naming the new one.
    sub.add_argument("--minutes", type=float, default=None, help=argparse.SUPPRESS)
    sub.add_argument("--seeds", default=",".join(map(str, d.DEFAULT_SEEDS)),
                     help="comma-separated fine-tuning seeds (default: %(default)s)")
    sub.add_argument("--objectives", default=",".join(d.ARMS),
                     help=f"comma-separated, of {', '.join(d.ARMS)} (default: all)")


def run(args):
    from keras_bert_app import errors
    from keras_bert_app.demo.objectives_study import study_objectives

    if args.minutes is not None:
        raise errors.ArgumentError(
            "minutes", "--minutes (equal pretraining time) was replaced by --budget-steps: every objective now gets "
            "the pretraining FLOPs of that many BERT steps.")
    try:
        seeds = [int(seed) for seed in comma_separated(args.seeds)]
    except ValueError:
        raise errors.ArgumentError("seeds", f"--seeds must be comma-separated integers; got {args.seeds!r}.") from None
    result = study_objectives(
        args.output, quickstart_run=args.quickstart_run, budget_steps=args.budget_steps, seeds=seeds,
        objectives=comma_separated(args.objectives), log=print,
    )
    print(f"\nDone. Report: {result['report']}")
    return 0
