"""Command-line options that several subcommands share, parsed the same way everywhere."""

JIT_COMPILE_VALUES = {"auto": "auto", "true": True, "false": False}


def add_jit_compile_argument(parser):
    """`--jit-compile {auto,true,false}`: Keras' `jit_compile`, passed through (`jit_compile_value`)."""
    parser.add_argument(
        "--jit-compile", choices=tuple(JIT_COMPILE_VALUES), default="auto",
        help="XLA, with Keras' meaning: auto (default) compiles on JAX and on TensorFlow with a GPU or TPU, "
        "not on a TensorFlow CPU nor PyTorch; true compiles on TensorFlow and JAX; false never",
    )


def jit_compile_value(args):
    """The `jit_compile` argument of the stage functions for the parsed `--jit-compile`."""
    return JIT_COMPILE_VALUES[args.jit_compile]


def keywords(args, *names):
    """`{name: args.name}` for parsed options that a stage function takes under the same names."""
    return {name: getattr(args, name) for name in names}


def comma_separated(text):
    """The stripped, non-empty items of a comma-separated option."""
    return [name.strip() for name in text.split(",") if name.strip()]
