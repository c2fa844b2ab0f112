"""`keras-bert-app distill`: distil a fine-tuned classifier into a smaller student (`kba.distill`).

    keras-bert-app distill --teacher runs/topics --student-layers 0,2,4 --train train.csv \\
        --dev dev.csv --unlabeled sentences.txt --output runs/topics-3
    keras-bert-app distill --teacher runs/topics --student runs/mini/preset --train train.csv \\
        --dev dev.csv --output runs/topics-mini

The output is a run folder like `finetune`'s: `predict`, `evaluate` and
`export` take it (or its `preset/`).
"""

from keras_bert_app.commands.options import add_jit_compile_argument, jit_compile_value, keywords


def add_arguments(parser):
    parser.add_argument("--teacher", required=True,
                        help="a `finetune classify` run folder or its preset/ (classification or regression)")
    parser.add_argument("--output", required=True, help="run folder to write")
    parser.add_argument("--train", required=True, help="labelled training file (CSV, TSV or JSON lines)")
    parser.add_argument("--dev", required=True, help="labelled dev file, scored after training")
    students = parser.add_mutually_exclusive_group(required=True)
    students.add_argument("--student", help="preset name or folder that starts the student (the teacher's "
                          "vocabulary); one of --student, --student-layers, --student-size is required")
    students.add_argument("--student-layers", type=_layers, metavar="I,J,...",
                          help="0-based teacher layers that make the student, with the teacher's embeddings, "
                          "pooler and head (DistilBERT's initialisation), e.g. 0,2,4")
    students.add_argument("--student-size", metavar="LAYERSxHIDDEN",
                          help="a randomly initialised student of this size, e.g. 3x384 (heads of 64 dimensions, "
                          "a 4H feed-forward layer)")
    parser.add_argument("--unlabeled", help="UTF-8 text file, one text a line: the transfer set the teacher labels "
                        "(default: none, the labelled set only)")
    parser.add_argument("--text-column", help="column of the text (default: the teacher's)")
    parser.add_argument("--text-pair-column", help="column of segment B (default: the teacher's)")
    parser.add_argument("--label-column", help="column of the label (default: the teacher's)")
    parser.add_argument("--temperature", type=float, default=2.0,
                        help="temperature T of the soft cross-entropy, scaled by T^2 (default: %(default)s)")
    parser.add_argument("--hard-label-weight", type=float, default=0.5,
                        help="weight w of the hard-label loss; the soft loss gets 1 - w (default: %(default)s)")
    parser.add_argument("--hidden-state-weight", type=float, default=0.0,
                        help="weight of TinyBERT's hidden-state matching: each student layer learns a teacher "
                        "layer (uniform map), through a learned projection when the widths differ; the teacher "
                        "then runs on every step (default: %(default)s, off)")
    parser.add_argument("--epochs", type=int, default=3, help="passes over the labelled and transfer sets "
                        "(default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size (default: %(default)s)")
    parser.add_argument("--learning-rate", type=float, default=5e-5,
                        help="peak AdamW learning rate, 10%% warmup then linear decay (default: %(default)s)")
    parser.add_argument("--sequence-length", type=int,
                        help="tokens per example; longer ones are truncated (default: the teacher's)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the student's initialisation, dropout and shuffling (default: %(default)s)")
    parser.add_argument("--teacher-cache", metavar="DIR",
                        help="folder keeping the teacher's logits: a later call with the same teacher, sequence "
                        "length and texts reads them instead of running the teacher (default: none, the teacher "
                        "labels on every call)")
    add_jit_compile_argument(parser)
    parser.add_argument("--no-bucketing", action="store_true",
                        help="pad every batch to --sequence-length (default: pad each batch to its longest example "
                        "rounded up to a bucket length, as finetune)")


def run(args):
    from keras_bert_app.training.distill import distill

    distill(
        args.teacher, args.output, log=print, jit_compile=jit_compile_value(args), bucketing=not args.no_bucketing,
        **keywords(args, "train", "dev", "student", "student_layers", "student_size", "unlabeled", "text_column",
                   "text_pair_column", "label_column", "temperature", "hard_label_weight", "hidden_state_weight",
                   "epochs", "batch_size", "learning_rate", "sequence_length", "seed", "teacher_cache"),
    )
    return 0


def _layers(text):
    import argparse

    try:
        return [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated layer numbers, e.g. 0,2,4; got {text!r}") from None
