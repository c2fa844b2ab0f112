"""A study's `results.json`, shared by the studies (`study objectives`, `study distill`): reopened by a rerun of
the same study and settings, refused in one line otherwise, and saved with every call's time so far."""

import json
import os
import pathlib
import time

from keras_bert_app import errors
from keras_bert_app.demo.stages import write_atomically


def open_results(output: pathlib.Path, name: str, settings: dict, study: str = "study") -> dict:
    """`output/name` of an earlier call with the same `settings` (their `version` included), or a new one;
    `OutputExistsError` (one line) for another version, other settings, other contents or a non-empty folder."""
    path = output / name
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise errors.ArgumentError("output", f"output {output}: cannot write there ({error.strerror or error}).") from None
    if path.is_file():
        try:
            results = json.loads(path.read_text(encoding="utf-8"))
            found = results["settings"]
        except (ValueError, KeyError, TypeError):
            raise errors.OutputExistsError(f"{path}: not a {study}'s results; pass a new output folder.") from None
        if found.get("version", 1) != settings["version"]:
            raise errors.OutputExistsError(
                f"{output} holds a {study} of another version ({found.get('version', 1)}; this is "
                f"{settings['version']}): its runs do not mean the same; pass a new output folder.")
        if found != settings:
            changed = sorted(key for key in {*settings, *found} if found.get(key) != settings.get(key))
            raise errors.OutputExistsError(
                f"{output} holds a {study} with other settings ({', '.join(changed)}): rerun with the same options "
                "to continue it, or pass a new output folder.")
        return results
    if any(output.iterdir()):
        raise errors.OutputExistsError(f"output {output} is not empty and holds no {name}: pass a new or empty folder.")
    return {"settings": settings}


class CallClock:
    """Saves `results` to `path`, with this call's time so far as the last of `call_seconds`: an interrupted call
    counts in the runtime. `finish()` adds `runtime_seconds` (all calls) and the load average, then saves."""

    def __init__(self, results: dict, path: pathlib.Path, started: float | None = None):
        """`started`: the call's `time.monotonic()` at its start (default: now)."""
        self.results, self.path = results, path
        self.started = time.monotonic() if started is None else started
        results.setdefault("call_seconds", []).append(0.0)

    def save(self) -> None:
        self.results["call_seconds"][-1] = round(time.monotonic() - self.started, 1)
        write_atomically(self.path, json.dumps(self.results, indent=2) + "\n")

    def finish(self) -> None:
        self.results["call_seconds"][-1] = round(time.monotonic() - self.started, 1)
        self.results["runtime_seconds"] = round(sum(self.results["call_seconds"]), 1)
        self.results["load_average"] = [round(value, 2) for value in os.getloadavg()]
        self.save()
