"""`keras-bert-app study objectives`: BERT, RoBERTa-, ALBERT-style and ELECTRA at equal pretraining time.

    keras-bert-app study objectives                                    # about 30 minutes on 2 idle CPU cores
    keras-bert-app study objectives --quickstart-run quickstart_run --output runs/objectives_study
    keras-bert-app study objectives --minutes 10 --seeds 0,1,2,3,4 --objectives bert,electra

Calls `kba.study_objectives` (keras_bert_app/demo/objectives_study.py says
what each stage does): writes `results.json`, `report.md` and `report.png`
in `--output`. Run the same command again after an interruption and it
continues where it stopped.
"""


def add_arguments(parser):
    from keras_bert_app.demo import objectives_study_settings as d  # standard library only

    studies = parser.add_subparsers(dest="study", metavar="STUDY", required=True)
    sub = studies.add_parser(
        "objectives", help="BERT's successors at equal pretraining time on the quickstart's data",
        description="Pretrain BERT (mlm_nsp), RoBERTa-style (mlm, full sentences), ALBERT-style (mlm_sop, shared "
        "layers, E=128) and ELECTRA for the same wall time on the quickstart's data, then fine-tune (several "
        "seeds) and probe each on the BBC News topics; report.md, report.png and results.json.",
    )
    sub.add_argument("--output", default=d.DEFAULT_OUTPUT, help="folder of the study (default: %(default)s)")
    sub.add_argument(
        "--quickstart-run", default=None,
        help="a finished `keras-bert-app quickstart` folder: its data, vocabulary, initial model and records are "
        "used (default: built in OUTPUT/quickstart as the quickstart builds them)",
    )
    sub.add_argument("--minutes", type=float, default=d.DEFAULT_MINUTES,
                     help="pretraining wall time of each objective (default: %(default)s)")
    sub.add_argument("--seeds", default=",".join(map(str, d.DEFAULT_SEEDS)),
                     help="comma-separated fine-tuning seeds (default: %(default)s)")
    sub.add_argument("--objectives", default=",".join(d.ARMS),
                     help=f"comma-separated, of {', '.join(d.ARMS)} (default: all)")
    sub.add_argument("--calibration-steps", type=int, default=d.DEFAULT_CALIBRATION_STEPS,
                     help="steps of each timing run (default: %(default)s)")


def run(args):
    from keras_bert_app import errors
    from keras_bert_app.demo.objectives_study import study_objectives

    try:
        seeds = [int(seed) for seed in _names(args.seeds)]
    except ValueError:
        raise errors.ArgumentError("seeds", f"--seeds must be comma-separated integers; got {args.seeds!r}.") from None
    result = study_objectives(
        args.output, quickstart_run=args.quickstart_run, minutes=args.minutes, seeds=seeds,
        objectives=_names(args.objectives), calibration_steps=args.calibration_steps, log=print,
    )
    print(f"\nDone. Report: {result['report']}")
    return 0


def _names(text):
    return [name.strip() for name in text.split(",") if name.strip()]
