"""`keras-bert-app finetune TASK`: fine-tune a preset on a downstream task (`kba.finetune`).

    keras-bert-app finetune classify --train train.csv --dev dev.csv --text-column text \\
        --label-column label --preset P --output RUN
    keras-bert-app finetune glue --task MRPC --data-dir glue_data/MRPC --preset P --output RUN
    keras-bert-app finetune swag --train train.csv --dev val.csv --preset P --output RUN
    keras-bert-app finetune ner --train train.txt --dev dev.txt --preset P --output RUN
    keras-bert-app finetune squad --version 2.0 --train train-v2.0.json --dev dev-v2.0.json --preset P --output RUN

One subcommand per task of `keras_bert_app.tasks.registry.TASKS`; its flags
come from the task's `OPTIONS` (plain data: building `--help` imports no
TensorFlow), the shared ones (and their defaults) from its `DEFAULTS`.
"""

import argparse

from keras_bert_app.commands.options import add_jit_compile_argument, jit_compile_value, keywords


def add_arguments(parser):
    from keras_bert_app.tasks.registry import TASKS

    subparsers = parser.add_subparsers(dest="finetune_task", metavar="TASK", required=True)
    for name, task in TASKS.items():
        sub = subparsers.add_parser(name, help=task.DESCRIPTION, description=task.DESCRIPTION)
        for option in task.OPTIONS:
            _add_option(sub, option)
        _add_common_arguments(sub, task.DEFAULTS)


def run(args):
    from keras_bert_app.tasks.registry import get_task
    from keras_bert_app.training.finetune import finetune

    task = get_task(args.finetune_task)
    options = {option.name: getattr(args, option.name) for option in task.OPTIONS}
    finetune(
        args.finetune_task,
        args.preset,
        args.output,
        jit_compile=jit_compile_value(args),
        verbose=2,
        log=print,
        bucketing=not args.no_bucketing,
        **keywords(
            args, "epochs", "batch_size", "learning_rate", "sequence_length", "seed", "layerwise_lr_decay",
            "group_by_length", "mixed_precision", "strategy", "tpu",
        ),
        **{name: value for name, value in options.items() if value is not None},
    )
    return 0


def _names(text):
    return [name.strip() for name in text.split(",")]


def _add_option(parser, option):
    help_text = option.help
    if option.default is not None and option.kind != "bool":
        help_text += f" (default {option.default})"
    arguments = {"dest": option.name, "help": help_text, "default": None}
    if option.kind == "bool":
        parser.add_argument(option.command_line_flag, action="store_true", **arguments)
        return
    arguments["type"] = {"int": int, "float": float, "names": _names}.get(option.kind, str)
    if option.choices is not None:
        arguments["choices"] = option.choices
    parser.add_argument(option.command_line_flag, required=option.required, **arguments)


def _add_common_arguments(parser, defaults):
    """The options every task shares (the paper's A.3 recipe as the task's defaults)."""
    parser.add_argument("--preset", required=True, help="preset name or folder (with encoder weights)")
    parser.add_argument("--output", required=True, help="run folder to write")
    parser.add_argument("--epochs", type=int, help=f"training epochs (default {defaults['epochs']})")
    parser.add_argument("--batch-size", type=int, help=f"batch size (default {defaults['batch_size']})")
    parser.add_argument(
        "--learning-rate", type=float,
        help=f"peak AdamW learning rate, 10%% warmup then linear decay (default {defaults['learning_rate']})",
    )
    parser.add_argument(
        "--layerwise-lr-decay", type=float, default=None, metavar="DECAY",
        help="layer-wise learning-rate decay, as ELECTRA fine-tunes (e.g. 0.8): layer i of n (0-based) learns at "
        "lr*DECAY^(n+1-i), the embeddings at lr*DECAY^(n+2), the head at lr (default: off)",
    )
    parser.add_argument(
        "--sequence-length", type=int,
        help=f"tokens per packed example; longer ones are truncated (default {defaults['sequence_length']}, or the "
        "preset's max_sequence_length when shorter)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of initialisation, dropout and shuffling")
    add_jit_compile_argument(parser)
    parser.add_argument(
        "--no-bucketing", action="store_true",
        help="pad every batch to --sequence-length (default: pad each batch to its longest example rounded up to "
        "8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, ...: powers of two and 1.5 times them)",
    )
    parser.add_argument(
        "--group-by-length", action=argparse.BooleanOptionalAction, default=None,
        help="training batches of similar lengths (the default), as HF's group_by_length: each epoch the examples "
        "shuffled, sorted by length within random quarters of the data (at most 50 batches each), the batches "
        "shuffled; with one label per example (classify, GLUE, swag), sorted per class, so each batch holds the "
        "classes in their shares. --no-group-by-length: batches of random examples, each cut to its longest",
    )
    parser.add_argument(
        "--strategy", default="auto", choices=("auto", "tpu", "mirrored", "cpu"),
        help="tf.distribute strategy (default auto: a TPU where one is reachable, else all GPUs, else one device; one "
        "device on JAX and PyTorch); --batch-size is the global batch, a multiple of the replicas",
    )
    parser.add_argument("--tpu", default=None, help="TPU name or grpc:// address (for --strategy tpu)")
    parser.add_argument(
        "--mixed-precision", action="store_true",
        help="compute in bfloat16 with float32 weights (Keras' mixed_bfloat16): faster on GPUs, TPUs and CPUs with "
        "bfloat16 units (AMX, AVX512-BF16); the saved preset is float32 (default: float32)",
    )
