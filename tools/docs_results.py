"""The results pages' inputs: the JSON files the measuring commands write, checked and collected.

Each result (`RESULTS`) names the command that measures it, the files it
reads under `docs/results/data/` and the keys this version of that command
writes. A file that is missing, is not JSON, or lacks one of those keys (the
output of another version of the command, or of another command) is a
`ResultsError` whose one-line message names the file and what is wrong.

`collect(name, source)` copies a finished run's files into the data folder
(`python tools/build_docs.py collect quickstart quickstart_run`), with
`provenance.json`: where they came from and, for a command whose JSON does
not record them, the machine and package versions of the environment that
collected the run (collect on the machine that ran it).
"""

import dataclasses
import importlib.metadata
import json
import os
import pathlib
import platform
import re
import shutil

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = REPO_ROOT / "docs" / "results" / "data"
PROVENANCE = "provenance.json"
VERSIONED_PACKAGES = ("keras_bert_app", "keras", "tensorflow", "tensorflow-text", "keras-hub", "jax", "torch",
                      "transformers")


class ResultsError(Exception):
    """A results input that cannot make its page; the message is one line naming the file."""


@dataclasses.dataclass(frozen=True)
class Result:
    """One results page's input: `files` (glob patterns, relative to its folder) and the keys each must hold."""

    name: str
    title: str
    command: str
    folder: str
    files: dict  # file name -> required key paths ("a.b", "rows[].x": every element of a list)
    plots: tuple = ()
    optional_files: dict = dataclasses.field(default_factory=dict)  # as `files`, read where the run has them
    extras: tuple = ()  # other files of the run, copied as they are where the run has them


QUICKSTART_FILES = {
    "quickstart.json": ("preset", "steps", "seed", "sequence_length", "batch_size", "labeled_articles"),
    "stages/pretrain.json": ("final.mlm_accuracy", "final.loss", "seconds"),
    "stages/finetune_pretrained.json": ("dev_accuracy", "dev_examples", "train_examples", "seconds"),
    "stages/finetune_random.json": ("dev_accuracy", "seconds"),
    "stages/features.json": ("pretrained_cls", "pretrained_mean", "random_cls", "random_mean", "seconds"),
}
MASKING_ARM_FILES = {
    "stages/pretrain.json": ("final.mlm_accuracy", "seconds"),
    "stages/finetune_pretrained.json": ("dev_accuracy",),
    "stages/features.json": ("pretrained_cls", "pretrained_mean"),
}
RESULTS = {
    "benchmarks": Result(
        "benchmarks", "Benchmarks", "keras-bert-app bench", "bench",
        {"bench.json": ("settings.preset", "settings.sequence_length", "settings.batch_size", "machine.versions",
                        "machine.platform", "rows[].task", "rows[].model", "rows[].backend", "rows[].batch_size",
                        "rows[].median_step_seconds", "rows[].tokens_per_second", "rows[].mfu", "ratios[].task",
                        "ratios[].batch_size", "ratios[].ours_backend", "ratios[].peer", "ratios[].peer_backend",
                        "ratios[].ratio")},
    ),
    "serving": Result(
        "serving", "Serving", "keras-bert-app bench --task serving", "serving",
        {"bench_serving.json": ("command", "machine.note", "versions", "model", "sequence_length", "dev_size",
                                "short_words", "long_words", "rows[].row", "rows[].description", "ratios")},
    ),
    "finetune-parity": Result(
        "finetune-parity", "Fine-tuning parity", "keras-bert-app bench --task finetune", "bench_finetune",
        {"bench_finetune.json": ("settings.checkpoint", "settings.train_size", "settings.dev_size", "settings.epochs",
                                 "settings.batch_size", "settings.learning_rate", "settings.machine",
                                 "rows[].dataset", "rows[].implementation", "rows[].seconds", "ratios")},
    ),
    "objectives-study": Result(
        "objectives-study", "Objectives study", "keras-bert-app study objectives", "objectives_study",
        {"results.json": ("recipe", "settings", "runtime_seconds")},  # runtime_seconds: written when it ends
        plots=("report.png",),
        extras=("task/train.csv", "task/dev.csv", "report.md"),  # the study's task, kept with its results
    ),
    "chinese-masking": Result(
        "chinese-masking", "Chinese masking study", "python tools/chinese_masking_study.py", "chinese_masking",
        {"whole_word/quickstart.json": ("masking", "seed", "steps"),
         **{f"{arm}/{name}": keys for arm in ("token", "whole_word", "ngram") for name, keys in MASKING_ARM_FILES.items()},
         "whole_word/stages/finetune_random.json": ("dev_accuracy",),
         "whole_word/stages/features.json": ("random_cls", "random_mean")},
        plots=("whole_word/finetuning.png",),
    ),
    "quickstart": Result(
        "quickstart", "Quickstart", "keras-bert-app quickstart", "quickstart", QUICKSTART_FILES,
        plots=("pretraining.png", "finetuning.png"),
    ),
    "distillation": Result(
        "distillation", "Distillation", "python tools/distillation_must_show.py", "distillation",
        {"results.json": ("command", "machine.load_average_before_runs", "settings.student_layers", "data.train",
                          "data.unlabeled", "data.dev", "teacher.accuracy", "teacher.parameters",
                          "arms.distilled_transfer.accuracy", "arms.labels_only.accuracy",
                          "transfer_minus_labels_only.mean", "serving.speedup")},
    ),
    "distillation-study": Result(
        "distillation-study", "Distillation study", "keras-bert-app study distill", "distillation_study",
        {"results.json": ("settings.version", "seeds", "runs", "teacher.accuracy", "baselines.majority",
                          "baselines.bag_of_words", "pretraining.steps", "serving.student", "runtime_seconds")},
        extras=("report.md",),
    ),
}


def relative(path):
    path = pathlib.Path(path)
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def load(path, command, required=()):
    """The JSON object at `path`, with every key path of `required`; a one-line `ResultsError` otherwise."""
    path = pathlib.Path(path)
    name = relative(path)
    if not path.is_file():
        raise ResultsError(f"{name}: missing; run `{command}` and collect its output "
                           f"(python tools/build_docs.py collect ...)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ResultsError(f"{name}: not JSON ({' '.join(str(error).split())})") from None
    if not isinstance(data, dict):
        raise ResultsError(f"{name}: not written by this version of `{command}`: a JSON object expected, "
                           f"got {type(data).__name__}")
    for key in required:
        problem = _missing(data, key)
        if problem:
            raise ResultsError(f"{name}: not written by this version of `{command}`: {problem}")
    return data


def _missing(data, key):
    """What is missing of the key path `key` in `data` ("" when it is all there)."""
    node, done = [data], []
    for part in key.split("."):
        each = part.endswith("[]")
        part = part[:-2] if each else part
        next_nodes = []
        for value in node:
            if not isinstance(value, dict) or part not in value:
                where = ".".join(done) or "the top level"
                return f"no {part!r} in {where}" + (" (each element)" if done and done[-1].endswith("[]") else "")
            child = value[part]
            if each:
                if not isinstance(child, list) or not child:
                    return f"{'.'.join(done + [part])} is not a non-empty list"
                next_nodes.extend(child)
            else:
                next_nodes.append(child)
        node = next_nodes
        done.append(part + ("[]" if each else ""))
    return ""


def load_result(result, data_dir=DATA):
    """{file name: JSON object} of `result`, each file checked; `provenance` as recorded by `collect` (or {})."""
    folder = pathlib.Path(data_dir) / result.folder
    files = {name: load(folder / name, result.command, keys) for name, keys in result.files.items()}
    files.update({name: load(folder / name, result.command, keys) for name, keys in result.optional_files.items()
                  if (folder / name).is_file()})
    provenance_path = folder / PROVENANCE
    provenance = load(provenance_path, result.command, ("source",)) if provenance_path.is_file() else {}
    return files, provenance


def stage_files(folder):
    """The `stages/*.json` names of a run folder, relative to it."""
    return sorted(f"stages/{path.name}" for path in (pathlib.Path(folder) / "stages").glob("*.json"))


def environment():
    """The machine and versions of this environment, as the commands record theirs."""
    versions = {}
    for package in VERSIONED_PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            pass
    cpu = platform.processor() or platform.machine()
    if os.path.exists("/proc/cpuinfo"):
        names = re.findall(r"^model name\s*:\s*(.+)$", pathlib.Path("/proc/cpuinfo").read_text(), re.M)
        cpu = names[0].strip() if names else cpu
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"platform": platform.platform(), "cpu": cpu, "cpu_count": cpus, "python": platform.python_version()}, versions


def collect(name, source, data_dir=DATA, command=None):
    """Copy a finished run's result files (`source`: a JSON file or a run folder) into the data folder.

    Returns the folder written. The files are checked first, so a wrong or
    unfinished run leaves the committed results as they were.
    """
    if name not in RESULTS:
        raise ResultsError(f"collect: unknown result {name!r}; one of {', '.join(RESULTS)}")
    result = RESULTS[name]
    source = pathlib.Path(source)
    json_names = list(result.files)
    if source.is_file():
        if len(json_names) != 1:
            raise ResultsError(f"{source}: `collect {name}` takes the run folder, not one file")
        pairs = {json_names[0]: source}
    else:
        pairs = {entry: source / entry for entry in json_names}
        pairs.update({entry: source / entry for entry in result.optional_files if (source / entry).is_file()})
        for arm in ("", *(f"{arm}/" for arm in ("token", "whole_word", "ngram") if name == "chinese-masking")):
            for entry in stage_files(source / arm) if (source / arm / "stages").is_dir() else []:
                pairs.setdefault(arm + entry, source / arm / entry)
        for extra in ("quickstart.json", *result.plots, *result.extras):
            if (source / extra).is_file():
                pairs.setdefault(extra, source / extra)
    for entry, path in pairs.items():
        if entry in result.files or entry in result.optional_files:
            load(path, result.command, {**result.files, **result.optional_files}[entry])
    target = pathlib.Path(data_dir) / result.folder
    staging = target.with_name(target.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    for entry, path in pairs.items():
        (staging / entry).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, staging / entry)
    machine, versions = environment()
    provenance = {"source": str(source), "collected_machine": machine, "collected_versions": versions}
    if command:
        provenance["command"] = command
    (staging / PROVENANCE).write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target
