"""The `keras-bert-app` command (kept for `python -m keras_bert_app.cli` and `cli.main`).

The command line lives in `keras_bert_app.commands`; this module only
re-exports its entry point.
"""

from keras_bert_app.commands.main import build_parser, console_script, main

__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    console_script()
