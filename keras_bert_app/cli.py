"""The `keras-bert-app` command.

Each subcommand lives in the module that owns its concept; the module defines
`add_arguments(parser)` and `run(args) -> int` and is imported only when its
subcommand runs, so `keras-bert-app --help` stays fast.
"""

import argparse
import importlib
import importlib.util
import sys

# subcommand -> (module, one-line help)
COMMANDS = {
    "summary": ("keras_bert_app.models.summary_command", "build an encoder from a preset and print its summary"),
    "build-vocab": ("keras_bert_app.preprocessing.vocabulary_training", "train a WordPiece vocabulary on a corpus"),
    "create-pretraining-data": ("keras_bert_app.data.create_pretraining_data", "corpus -> masked sentence-pair TFRecords"),
    "pretrain": ("keras_bert_app.training.pretrain", "pretrain a BERT (MLM + NSP)"),
    "finetune": ("keras_bert_app.training.finetune", "fine-tune on GLUE, SWAG, NER, SQuAD or your own CSV"),
    "evaluate": ("keras_bert_app.evaluation.evaluate_command", "evaluate predictions or a fine-tuned model"),
    "predict": ("keras_bert_app.training.predict", "predict with a fine-tuned model (JSON lines out)"),
    "extract-features": ("keras_bert_app.training.extract_features", "per-token features from chosen layers"),
    "export": ("keras_bert_app.export.export_command", "export a SavedModel for TF Serving"),
    "convert": ("keras_bert_app.convert.convert_command", "convert Google, HF or keras-hub checkpoints"),
    "bench": ("keras_bert_app.benchmark.command", "run the benchmarks against keras-hub and HF"),
    "quickstart": ("keras_bert_app.quickstart", "the whole paper at small scale on built-in data"),
}

# `keras-bert-app COMMAND VARIANT ...` served by another module:
# (command, variant) -> (module, add-arguments function, run function)
VARIANTS = {
    ("evaluate", "squad"): ("keras_bert_app.evaluation.squad_evaluate", "add_squad_arguments", "run_squad"),
    ("predict", "squad"): ("keras_bert_app.training.finetune_squad", "add_predict_arguments", "run_predict"),
}


def _run_variant(command, variant, argv):
    module_name, add_name, run_name = VARIANTS[(command, variant)]
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=f"keras-bert-app {command} {variant}")
    getattr(module, add_name)(parser)
    args = parser.parse_args(argv)
    args.command = f"{command} {variant}"
    return getattr(module, run_name)(args)


def _available():
    found = {}
    for name, (module, help_text) in COMMANDS.items():
        if importlib.util.find_spec(module) is not None:
            found[name] = (module, help_text)
    return found


def build_parser():
    parser = argparse.ArgumentParser(
        prog="keras-bert-app",
        description="BERT end to end in Keras 3 (TensorFlow, JAX, PyTorch).",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in _available().items():
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(_module=module)
        importlib.import_module(module).add_arguments(sub)
    return parser


def main(argv=None):

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    module = importlib.import_module(args._module)
    try:
        return int(module.run(args) or 0)
    except KeyboardInterrupt:
        print("keras-bert-app: interrupted", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, FileExistsError, PermissionError) as error:
        print(f"keras-bert-app {args.command}: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
