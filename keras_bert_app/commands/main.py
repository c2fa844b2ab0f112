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
import ctypes
import functools
import gc
import importlib
import importlib.abc
import os
import sys
import warnings

# subcommand -> (module in keras_bert_app.commands, one-line help)
COMMANDS = {
    "summary": ("summary", "build an encoder from a preset and print its summary"),
    "build-vocab": ("build_vocab", "train a WordPiece vocabulary on a corpus"),
    "create-pretraining-data": ("create_pretraining_data", "corpus -> masked sentence-pair TFRecords"),
    "pretrain": ("pretrain", "pretrain a BERT (MLM + NSP)"),
    "finetune": ("finetune", "fine-tune on GLUE, SWAG, NER, SQuAD or your own CSV"),
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
# Collector thresholds of a `keras-bert-app` process (Python's default: 700, 10, 10). Importing
# TensorFlow creates about a million objects, and the default youngest-generation threshold runs the
# collector over them again and again while it does (0.5-0.8 s of the import on 2 cores). The youngest
# generation is collected after 50,000 new objects instead of 700; peak memory did not grow (fine-tuning
# MiniLM-L6: 1.97 GB either way; 600 pretraining steps: 1.52 GB before, 1.50 GB after).
PROCESS_GC_THRESHOLDS = (50_000, 20, 20)
# glibc's `mallopt` settings of a `keras-bert-app` process: (option, value). By default malloc maps
# an allocation over a threshold (dynamic, at most 32 MB) straight from the kernel and unmaps it when
# freed, and the kernel zeroes every page again at its next use. A training step frees and remakes
# its large tensors every step (MiniLM-L6's 47 MB token-embedding gradient, AdamW's temporaries), so
# fine-tuning it on 1,600 headlines took 1.5 million page faults and 6.5 s of system time. Kept in
# malloc's heap (allocations up to 1 GiB, the heap's top given back past 2 GiB free), they are reused:
# 0.4 million faults, 3 s, the whole run an eighth shorter; peak memory 1.44 -> 1.65 GB (blocks kept).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
PROCESS_MALLOC_OPTIONS = ((M_MMAP_THRESHOLD, 1 << 30), (M_TRIM_THRESHOLD, (1 << 31) - 1))
# Optional integrations that importing TensorFlow loads and no command uses: (the importing
# module, or its package, and the package it asks for). Each is imported in a `try` that leaves
# the integration off when the package is missing; a `keras-bert-app` process makes it missing for
# those importers alone (`skipping_unused_integrations`). Measured on 2 cores: `import tensorflow`
# took 3.7-4.0 s with them, 2.2-2.3 s without.
UNUSED_INTEGRATIONS = (
    ("keras.src.wrappers", "sklearn"),  # keras.wrappers.SKLearnClassifier & co. (scikit-learn and SciPy)
    ("keras.src.visualization", "matplotlib"),  # keras.visualization's plots
    ("tensorflow.lite", "jax"),  # TF Lite's JAX converter
    ("keras.src.callbacks.orbax_checkpoint", "jax"),  # a patch of old JAX for Orbax checkpoints (JAX backend: loaded before)
    ("tensorflow.python.keras", "scipy"),  # the legacy tf.keras engine's sparse-input check
)
# Environment defaults of a `keras-bert-app` process (a value already set is kept). The functions a
# TensorFlow CPU runs op by op are traced without recording each graph op's Python stack
# (`keras_bert_app.models.xla.without_op_stacks`: MiniLM-L6 fine-tuning on 1,600 headlines 19.9 -> 19.0 s);
# an error such an op raises still names its node. `KERAS_BERT_APP_OP_STACKS=1` keeps the stacks.
# TensorFlow's oneDNN kernels are on: TensorFlow turns them on by itself only on CPUs with AVX-512 (or
# newer) features, and on a 2-core AVX2-only AMD EPYC its Eigen kernels ran that fine-tuning's op-by-op
# steps 17-19% slower (0.23 against 0.19 s a step; the whole run 18.9-19.2 -> 17.2-17.7 s, the same dev
# accuracy to the last digit). TensorFlow reads the variable when it loads (first command that imports it).
# `TF_ENABLE_ONEDNN_OPTS=0` keeps Eigen's.
PROCESS_ENVIRONMENT = {"KERAS_BERT_APP_OP_STACKS": "0", "TF_ENABLE_ONEDNN_OPTS": "1"}


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
        sub.set_defaults(_command=name)
        command_module(name).add_arguments(sub)
    return parser


def main(argv=None):
    """Run `keras-bert-app ARGV`; returns the exit code."""
    from keras_bert_app import errors

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    formatwarning = warnings.formatwarning
    warnings.formatwarning = functools.partial(_one_line_warning, args.command, formatwarning)
    try:
        return int(command_module(args._command).run(args) or 0)
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
    finally:
        warnings.formatwarning = formatwarning


_PACKAGE_FOLDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _one_line_warning(command, formatwarning, message, category, filename, lineno, line=None):
    """`keras-bert-app COMMAND: warning: MESSAGE` for the library's own warnings; others as `formatwarning` has them."""
    if not issubclass(category, UserWarning) or not os.path.abspath(filename).startswith(_PACKAGE_FOLDER + os.sep):
        return formatwarning(message, category, filename, lineno, line)
    text = " ".join(str(message).split("\n")).strip()
    return f"keras-bert-app {command}: warning: {text}\n"


class _UnusedIntegrationFinder(importlib.abc.MetaPathFinder):
    """Answers "no such module" to the `UNUSED_INTEGRATIONS` importers, and defers to the next finder otherwise."""

    def find_spec(self, name, path=None, target=None):
        package = name.partition(".")[0]
        importers = [importer for importer, skipped in UNUSED_INTEGRATIONS if skipped == package]
        if not importers:
            return None
        importer = _importing_module()
        if importer and any(importer == prefix or importer.startswith(prefix + ".") for prefix in importers):
            raise ModuleNotFoundError(f"{name} is not loaded for {importer} in a keras-bert-app process", name=name)
        return None


def _importing_module():
    """The name of the module whose code runs the `import` being resolved (past importlib's own frames)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not name.startswith(("importlib", "_frozen_importlib")):
            return name
        frame = frame.f_back
    return None


@contextlib.contextmanager
def skipping_unused_integrations():
    """While open, `UNUSED_INTEGRATIONS` are not loaded; every other import, these packages' included, is as usual."""
    finder = _UnusedIntegrationFinder()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


@contextlib.contextmanager
def compiling_each_annotation_once():
    """While open, `typing` compiles each distinct string annotation once and shares the (immutable) code object.

    TensorFlow's generated op modules declare about 18,000 `TypeVar`
    constraints as strings ("_atypes.Float32", ...: a few dozen distinct
    ones), and `typing` compiles each into a `ForwardRef` anew: 0.17 s of
    every `import tensorflow` on 2 cores (2.0 -> 1.83 s). A code object
    never changes, so one per source is the same to every reader; anything
    but a plain `compile(str, str, "eval")` goes to the built-in.
    """
    import typing

    had_own = "compile" in vars(typing)
    given = vars(typing).get("compile", compile)
    compiled = {}

    def compile_once(source, filename, mode, *args, **kwargs):
        if args or kwargs or mode != "eval" or type(source) is not str or type(filename) is not str:
            return given(source, filename, mode, *args, **kwargs)
        key = (source, filename)
        if key not in compiled:
            compiled[key] = given(source, filename, mode)
        return compiled[key]

    typing.compile = compile_once
    try:
        yield
    finally:
        if had_own:
            typing.compile = given
        else:
            del typing.compile


def keep_large_allocations():
    """Sets `PROCESS_MALLOC_OPTIONS` where the C library is glibc; True if it took them all."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own C library
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return all([mallopt(option, value) == 1 for option, value in PROCESS_MALLOC_OPTIONS])


def run_process(argv=None):
    """`main(argv)` as the whole life of a process, which exits right after it.

    The console script's body. Raises the collector's thresholds while the
    command runs (`PROCESS_GC_THRESHOLDS`) and freezes every object left at
    the end (`gc.freeze`): the interpreter's last act is a full collection
    of them, which walks all of TensorFlow's (about 2 s on 2 cores) only to
    hand the memory back to the operating system, which does that anyway.
    Large allocations stay in malloc's heap (`PROCESS_MALLOC_OPTIONS`), and
    `PROCESS_ENVIRONMENT` gives the variables it names where they are unset.
    Files are closed by then (`main` returns after the command's last write).
    TensorFlow's import skips the optional integrations no command uses
    (`UNUSED_INTEGRATIONS`: about 1.5 s of it) and compiles each string
    annotation of its op modules once (`compiling_each_annotation_once`).
    Not for use in a process that goes on: frozen objects are never
    collected, and those integrations stay off.

    Returns:
        int, the exit code.
    """
    gc.set_threshold(*PROCESS_GC_THRESHOLDS)
    keep_large_allocations()
    for name, value in PROCESS_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    try:
        with skipping_unused_integrations(), compiling_each_annotation_once():
            return main(argv)
    finally:
        gc.freeze()


def console_script():
    sys.exit(run_process())


if __name__ == "__main__":
    console_script()
