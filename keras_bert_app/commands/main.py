"""`keras-bert-app`: the entry point and its table of subcommands.

Errors of the library (`keras_bert_app.errors`, and the built-in
`ValueError`/`OSError` family it subclasses) become one line on stderr and
exit code 2; Ctrl-C exits 130. The library's own warnings (written for the
user: fresh weights, a head not converted) print as one line too, without
Python's file, line and source line. Adding a command: a module in this package
with `add_arguments(parser)` and `run(args)`, and a row in `COMMANDS`.
"""

import argparse
import contextlib
import importlib
import logging
import os
import re
import sys

# subcommand -> (module in keras_bert_app.commands, one-line help)
COMMANDS = {
    "summary": ("summary", "build an encoder from a preset and print its summary"),
    "build-vocab": ("build_vocab", "train a WordPiece vocabulary on a corpus"),
    "create-pretraining-data": ("create_pretraining_data", "corpus -> masked sentence-pair TFRecords"),
    "pretrain": ("pretrain", "pretrain a BERT (MLM + NSP)"),
    "finetune": ("finetune", "fine-tune on GLUE, SWAG, NER, SQuAD or your own CSV"),
    "distill": ("distill", "distil a fine-tuned classifier into a smaller student"),
    "evaluate": ("evaluate", "evaluate a fine-tuned model, SQuAD predictions or a conlleval file"),
    "predict": ("predict", "predict with a fine-tuned model"),
    "extract-features": ("extract_features", "per-token features from chosen layers"),
    "export": ("export", "export a SavedModel for TF Serving"),
    "convert": ("convert", "convert Google, HF or keras-hub checkpoints"),
    "bench": ("bench", "run the benchmarks against keras-hub and HF"),
    "quickstart": ("quickstart", "the whole paper at small scale on built-in data"),
    "study": ("study", "studies on the quickstart's data: `study objectives` (BERT's successors at equal time)"),
}
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def command_module(name):
    """The module of a subcommand (an ImportError if the package lacks it: never hidden)."""
    return importlib.import_module(f"keras_bert_app.commands.{COMMANDS[name][0]}")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="keras-bert-app",
        description="BERT end to end in Keras 3 (TensorFlow, JAX, PyTorch).",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(subcommand=name)
        command_module(name).add_arguments(sub)
    return parser


def main(argv=None, one_line_warnings=False):
    """Run `keras-bert-app ARGV`; returns the exit code.

    With `one_line_warnings` (the console script's), warnings go through
    `logging.captureWarnings` while the command runs and the library's own
    print as one line (`_OneLineWarnings`); a caller in Python (a test with
    `pytest.warns`, a notebook) keeps its own handling of warnings.
    """
    from keras_bert_app import errors

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        if not one_line_warnings:
            return int(command_module(args.subcommand).run(args) or 0)
        with _one_line_warnings(args.command):
            return int(command_module(args.subcommand).run(args) or 0)
    except KeyboardInterrupt:
        print("keras-bert-app: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (errors.KerasBertAppError, ValueError, TypeError, OSError) as error:
        # OSError: FileNotFoundError, FileExistsError, PermissionError, ...
        # TypeError only when raised as a typed argument error.
        if isinstance(error, TypeError) and not isinstance(error, errors.KerasBertAppError):
            raise
        message = " ".join(str(error).split("\n")).strip() or type(error).__name__
        print(f"keras-bert-app {args.command}: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT


@contextlib.contextmanager
def _one_line_warnings(command):
    """Within: warnings logged (`logging.captureWarnings`) to `_OneLineWarnings`; restored on leaving."""
    handler = _OneLineWarnings(command)
    logger = logging.getLogger("py.warnings")
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    logging.captureWarnings(True)
    try:
        yield
    finally:
        logging.captureWarnings(False)
        logger.propagate = propagate
        logger.removeHandler(handler)


_PACKAGE_FOLDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _OneLineWarnings(logging.Handler):
    """Warnings while a command runs (`logging.captureWarnings`): the library's own as one line.

    `keras-bert-app COMMAND: warning: MESSAGE` for a warning raised in this
    package (written for the user: fresh weights, a head not converted),
    without Python's file, line and source line; any other warning as
    Python formats it.
    """

    def __init__(self, command):
        super().__init__()
        self.command = command

    def emit(self, record):
        text = record.getMessage()
        found = _WARNING_LINE.match(text)
        if found and os.path.abspath(found["file"]).startswith(_PACKAGE_FOLDER + os.sep):
            message = " ".join(found["message"].split())
            text = f"keras-bert-app {self.command}: warning: {message}\n"
        sys.stderr.write(text if text.endswith("\n") else text + "\n")


# `warnings.formatwarning`'s layout: "FILE:LINE: CATEGORY: MESSAGE\n" and the source line indented, if known.
_WARNING_LINE = re.compile(r"(?P<file>.+?):(?P<line>\d+): (?P<category>\w+): (?P<message>.*?)\n(?:  [^\n]*\n)?\Z", re.S)


def console_script():
    """The `keras-bert-app` console script: `main()` on `sys.argv`, its code as the exit status."""
    sys.exit(main(one_line_warnings=True))


if __name__ == "__main__":
    console_script()
