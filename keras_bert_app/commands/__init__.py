"""The `keras-bert-app` command line: one thin module per subcommand.

Each module defines `add_arguments(parser)` and `run(args) -> int`: it
parses, calls one stage function of the library, and prints the result. It
imports only the standard library at module level, so building `--help`
imports no TensorFlow. `main` is the console script's entry point.
"""
