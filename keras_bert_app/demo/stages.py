"""The quickstart's stage runner: stages in order, finished ones skipped on a rerun."""

import json
import os
import pathlib
import time
from typing import Callable


def write_atomically(path: pathlib.Path, text: str) -> pathlib.Path:
    """Write `text` to `path` through a temporary file renamed into place; returns `path`."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return path


class Stages:
    """Runs stages in order, skipping those whose `stages/<name>.json` marker exists.

    Each finished stage leaves its result dict (plus `seconds`) in the
    marker, written atomically, so an interrupted stage is rerun from its
    start and a finished one is read back.
    """

    def __init__(self, folder: pathlib.Path, log: Callable[[str], None] = print):
        self.folder = folder
        self.folder.mkdir(exist_ok=True)
        self.log = log
        self.results = {}

    def run(self, name: str, title: str, function: Callable[[], dict]) -> dict:
        marker = self.folder / f"{name}.json"
        if marker.is_file():
            self.results[name] = json.loads(marker.read_text())
            self.log(f"\n== {title}: done in an earlier run ({self.results[name]['seconds']:.0f} s), skipped.")
            return self.results[name]
        self.log(f"\n== {title}")
        started = time.perf_counter()
        try:
            result = dict(function() or {})
        except KeyboardInterrupt:
            self.log(f"\nInterrupted during '{name}': run the same command again to continue from this stage.")
            raise
        result["seconds"] = round(time.perf_counter() - started, 1)
        self.log(f"== {title}: {result['seconds']:.0f} s")
        write_atomically(marker, json.dumps(result, indent=2) + "\n")
        self.results[name] = result
        return result
