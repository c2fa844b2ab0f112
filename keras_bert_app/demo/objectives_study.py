"""`kba.study_objectives`: BERT and its successors pretrained for the same wall time, then compared.

    kba.study_objectives("runs/objectives_study")                         # about 30 minutes on 2 idle CPU cores
    kba.study_objectives("runs/objectives_study", quickstart_run="quickstart_run", minutes=5)

On the quickstart's data (BBC News: the training articles' `corpus.txt`,
the WordPiece vocabulary learned from them, the 250 labeled articles and the
dev split) and its encoder size (`bert_tiny_uncased`, L=2, H=128), four
pretraining objectives (`ARMS`) get the same pretraining wall time:

    bert     objective mlm_nsp on `nsp` records: masked LM + next sentence prediction
    roberta  objective mlm on `full_sentences` records: masked LM alone, packed full sentences
    albert   objective mlm_sop on `sop` records, the encoder with one set of layer weights
             shared by all layers (num_groups=1) and embeddings E=128 wide
    electra  objective electra on `nsp` records: replaced-token detection, generator 1/4

The tokenizer is the same for all (the quickstart's vocabulary), so the
study compares objectives and architectures, not vocabularies. Stages, each
kept in `results.json` so a rerun continues where it stopped:

1. the three record sets, from the same documents, vocabulary, masking
   and seed (`create_pretraining_data(pairing=...)`; `nsp` is the quickstart's);
2. step time of each objective: short runs, alternated, median seconds per
   step after the compilation (`objectives_study_runs.calibrate`); then
   steps = `minutes` x 60 / step time (a multiple of 10);
3. each pretraining in a child process (its peak resident memory);
4. for each encoder and the random one it started from: fine-tuned dev
   accuracy for each seed, linear-probe accuracy on frozen features;
5. `report.md` (table, what wins and by how much) and `report.png`.
"""

import dataclasses
import functools
import json
import os
import pathlib
import shutil
import statistics
from collections.abc import Callable, Sequence

from keras_bert_app import errors
from keras_bert_app.demo import objectives_study_runs as runs
from keras_bert_app.demo import settings as defaults
from keras_bert_app.demo.objectives_study_runs import Recipe
from keras_bert_app.demo.objectives_study_settings import (
    ARMS,
    DEFAULT_CALIBRATION_STEPS,
    DEFAULT_MINUTES,
    DEFAULT_OUTPUT,
    DEFAULT_SEEDS,
    QUICKSTART_PARTS,
    RANDOM,
    RESULTS_FILE,
    STEP_MULTIPLE,
)
from keras_bert_app.demo.stages import write_atomically

PathLike = str | os.PathLike


def study_objectives(
    output: PathLike = DEFAULT_OUTPUT,
    *,
    quickstart_run: PathLike | None = None,
    minutes: float = DEFAULT_MINUTES,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    objectives: Sequence[str] = tuple(ARMS),
    calibration_steps: int = DEFAULT_CALIBRATION_STEPS,
    log: Callable[[str], None] = print,
) -> dict:
    """Pretrain each objective for the same wall time on the quickstart's data; fine-tune, probe and report.

    Args:
        output: str or path. Folder of the study (created; a rerun with the
            same arguments continues it).
        quickstart_run: str, path or None. A finished `keras-bert-app
            quickstart` folder whose data, vocabulary, initial model and
            `nsp` records are used (None: they are built in
            `output/quickstart/` as the quickstart builds them).
        minutes: float > 0. Pretraining wall time of each objective.
        seeds: ints. Fine-tuning seeds (mean and sample standard deviation).
        objectives: names from `ARMS` ("bert", "roberta", "albert", "electra").
        calibration_steps: int >= 8. Steps of each timing run.
        log: callable taking one line of progress.

    Returns:
        dict: `results` (as in `results.json`: calibration, each pretraining's
        steps, seconds, peak memory, parameter counts and last metrics, each
        fine-tuned accuracy and probe), `report` and `plot` (pathlib.Path).

    Raises:
        keras_bert_app.errors.ArgumentTypeError: an argument of the wrong type.
        keras_bert_app.errors.ArgumentError: an unknown objective, minutes <= 0,
            no seeds, an output folder that cannot be written.
        keras_bert_app.errors.MissingFileError: a `quickstart_run` without the
            parts the study reads.
        keras_bert_app.errors.OutputExistsError: `output` holds something
            else, or a study with other settings.
    """
    output, base, minutes, seeds, objectives = _check_arguments(output, quickstart_run, minutes, seeds, objectives,
                                                               calibration_steps)
    settings = {"quickstart_run": str(base.resolve()) if quickstart_run is not None else None,
                "minutes": minutes, "calibration_steps": calibration_steps}
    results = _open_results(output, settings)

    def save():
        write_atomically(output / RESULTS_FILE, json.dumps(results, indent=2) + "\n")

    save()
    if quickstart_run is None:
        build_quickstart_data(base, log)
    recipe = Recipe.from_quickstart(json.loads((base / defaults.SETTINGS_FILE).read_text()))
    results["recipe"] = dataclasses.asdict(recipe)
    records = {arm: _records(base, output, ARMS[arm].pairing, recipe, log) for arm in objectives}
    presets = {arm: _initial_preset(base, output, arm, recipe.seed, log) for arm in objectives}
    _pretrain_all(output, results, save, objectives, records, presets, recipe, minutes, calibration_steps, log)
    _evaluate_all(output, base, results, save, objectives, presets, recipe, seeds, log)
    from keras_bert_app.demo.objectives_study_report import write_plot, write_report

    rows = [*objectives, RANDOM]
    report = write_report(output / "report.md", results, rows, seeds, log)
    plot = write_plot(output / "report.png", results, rows, seeds)
    log(f"Report: {report}, plot: {plot}")
    return {"results": results, "report": report, "plot": plot}


def _check_arguments(output, quickstart_run, minutes, seeds, objectives, calibration_steps):
    output = errors.check_path("output", output)
    errors.check_number("minutes", minutes, minimum=0, minimum_inclusive=False)
    errors.check_type("seeds", seeds, (list, tuple), "a list of ints")
    if not seeds:
        raise errors.ArgumentError("seeds", "seeds: give at least one fine-tuning seed.")
    seeds = tuple(errors.check_int("seeds", seed) for seed in seeds)
    errors.check_type("objectives", objectives, (list, tuple), "a list of names")
    if not objectives:
        raise errors.ArgumentError("objectives", f"objectives: give at least one of {list(ARMS)}.")
    for name in objectives:
        errors.check_choice("objectives", name, tuple(ARMS))
    objectives = tuple(dict.fromkeys(objectives))
    errors.check_int("calibration_steps", calibration_steps, minimum=8)
    if quickstart_run is None:
        return output, output / "quickstart", float(minutes), seeds, objectives
    base = errors.check_path("quickstart_run", quickstart_run)
    missing = [part for part in QUICKSTART_PARTS if not list(base.glob(part))]
    if missing:
        raise errors.MissingFileError(
            "quickstart_run", f"quickstart_run {base}: not a finished quickstart folder, it lacks {', '.join(missing)} "
            "(run `keras-bert-app quickstart --output FOLDER` first, or leave --quickstart-run out).")
    return output, base, float(minutes), seeds, objectives


def _open_results(output, settings):
    """`results.json` of an earlier run of the same study (or a new one); typed errors for other contents."""
    path = output / RESULTS_FILE
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise errors.ArgumentError("output", f"output {output}: cannot write there ({error.strerror or error}).") from None
    if path.is_file():
        results = json.loads(path.read_text())
        if results.get("settings") != settings:
            raise errors.OutputExistsError(
                f"{output} holds a study with other settings ({results.get('settings')} there, {settings} now): "
                "rerun with the same options to continue it, or pass a new output folder.")
        return results
    if any(output.iterdir()):
        raise errors.OutputExistsError(f"output {output} is not empty and holds no {RESULTS_FILE}: pass a new or empty folder.")
    return {"settings": settings}


def build_quickstart_data(base: pathlib.Path, log: Callable[[str], None] = print) -> pathlib.Path:
    """The quickstart's corpus, vocabulary, initial model and `nsp` records in `base`, at its defaults; returns `base`.

    The quickstart's own stages (`demo.pipeline`), each skipped when a
    previous call finished it (`base/stages/`).
    """
    from keras_bert_app.demo import pipeline
    from keras_bert_app.demo.corpus import make_corpus
    from keras_bert_app.demo.stages import Stages

    settings = {"preset": defaults.DEFAULT_PRESET, "seed": defaults.DEFAULT_SEED,
                "sequence_length": defaults.DEFAULT_SEQUENCE_LENGTH, "batch_size": defaults.DEFAULT_PRETRAIN_BATCH_SIZE,
                "dupe_factor": defaults.DEFAULT_DUPE_FACTOR, "finetune_epochs": defaults.DEFAULT_FINETUNE_EPOCHS,
                "labeled_articles": defaults.DEFAULT_LABELED_ARTICLES, "vocab_size": defaults.DEFAULT_VOCAB_SIZE}
    base.mkdir(parents=True, exist_ok=True)
    stages = Stages(base / defaults.STAGES_DIR, log)
    stages.run("corpus", "The quickstart's corpus", lambda: make_corpus(
        base / "data", None, None, settings["labeled_articles"], settings["seed"], log))
    stages.run("model", "Its WordPiece vocabulary and initial model", lambda: pipeline.make_model_preset(base, settings, log))
    stages.run("pretraining_data", "Its nsp records", lambda: pipeline.make_pretraining_data(base, settings, log))
    write_atomically(base / defaults.SETTINGS_FILE, json.dumps(settings, indent=2) + "\n")
    return base


def _records(base, output, pairing, recipe, log):
    """The glob of `pairing`'s records: the quickstart's for nsp, else written once in `output/records/`."""
    if pairing == "nsp":
        return str(base / "pretraining_data" / "*.tfrecord")
    folder = output / "records" / pairing
    if not (folder / "done").is_file():
        from keras_bert_app.convert import resolve
        from keras_bert_app.data.create_pretraining_data import create_pretraining_data
        from keras_bert_app.demo import pipeline

        quickstart = json.loads((base / "pretraining_data" / "pretraining_data.json").read_text())
        model_preset = base / defaults.MODEL_PRESET_DIR
        log(f"\n== {pairing} records from the same documents, vocabulary, masking and seed")
        summary = create_pretraining_data(
            input_files=base / "data" / "corpus.txt", output_dir=folder, tokenizer=resolve.vocabulary_path(model_preset),
            lowercase=pipeline.lowercase(model_preset), max_seq_length=recipe.sequence_length,
            max_predictions_per_seq=quickstart["max_predictions_per_seq"], dupe_factor=quickstart["dupe_factor"],
            seed=quickstart["seed"], overwrite=True, workers=min(2, os.cpu_count() or 1), pairing=pairing,
        )
        log(f"{summary['instances']} {pairing} records in {folder}")
        (folder / "done").write_text("")
    return str(folder / "*.tfrecord")


def _initial_preset(base, output, arm, seed, log):
    """The weights `arm` starts from: the quickstart's initial model, or its config with the arm's encoder options."""
    model_preset = base / defaults.MODEL_PRESET_DIR
    options = dict(ARMS[arm].encoder_options)
    if not options:
        return model_preset
    folder = output / "presets" / arm
    if not (folder / "model.weights.h5").is_file():
        import keras

        from keras_bert_app.models.bert_encoder import BertEncoder
        from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

        shutil.rmtree(folder, ignore_errors=True)
        keras.utils.set_random_seed(seed)
        BertTokenizer.from_preset(model_preset).save_to_preset(folder)
        encoder = BertEncoder.from_preset(model_preset, load_weights=False, **options)
        encoder.save_to_preset(folder)  # last: its weights file marks the folder done
        log(f"{folder}: the quickstart's config with {options}, freshly initialised, {encoder.count_params():,} parameters")
    return folder


def equal_time_steps(seconds: float, step_time: float, multiple: int = STEP_MULTIPLE) -> int:
    """Steps that take `seconds` at `step_time` seconds each, rounded to a multiple of `multiple` (at least one)."""
    return max(multiple, round(seconds / step_time / multiple) * multiple)


def _pretrain_all(output, results, save, objectives, records, presets, recipe, minutes, calibration_steps, log):
    calibration = results.setdefault("calibration", {})
    missing = [arm for arm in objectives if arm not in calibration]
    if missing:
        log(f"\n== Step time of each objective ({calibration_steps}-step runs, alternated, twice)")
        timing = {arm: functools.partial(runs.pretrain_arm, ARMS[arm].objective, presets[arm], records[arm], recipe=recipe)
                  for arm in missing}
        calibration.update(runs.calibrate(timing, output / "calibration", calibration_steps, recipe.tokens_per_step, log=log))
        save()
    plan = {arm: equal_time_steps(minutes * 60, calibration[arm]) for arm in objectives}
    log(f"\nPlan: {minutes:g} min of pretraining each: " + "; ".join(
        f"{arm} {calibration[arm]:.3f} s/step -> {plan[arm]} steps" for arm in objectives))
    for arm in objectives:
        key = f"pretrain_{arm}"
        run_dir = output / "pretrain" / arm
        if results.get(key, {}).get("steps") != plan[arm]:
            log(f"\n== Pretraining {arm} ({ARMS[arm].description}): {plan[arm]} steps")
            arguments = {"objective": ARMS[arm].objective, "preset": str(presets[arm]), "records": records[arm],
                         "run_dir": str(run_dir), "steps": plan[arm], "recipe": dataclasses.asdict(recipe)}
            measured = runs.pretrain_in_child(arguments, log=log)
            results[key] = {"steps": plan[arm], **measured, "final": runs.last_metrics(run_dir),
                            "parameters": runs.parameter_counts(ARMS[arm].objective, run_dir / "preset")}
        if "run_step_time" not in results[key]:  # the run's own pace, against the timing runs'
            results[key]["run_step_time"] = statistics.median(runs.step_times(run_dir, recipe.tokens_per_step))
        save()


def _evaluate_all(output, base, results, save, objectives, presets, recipe, seeds, log):
    model_preset = base / defaults.MODEL_PRESET_DIR
    encoders = {arm: output / "pretrain" / arm / "preset" for arm in objectives}
    encoders[RANDOM] = model_preset
    if "parameters_random" not in results:
        results["parameters_random"] = runs.parameter_counts(None, model_preset)
    for name, preset in encoders.items():
        for seed in seeds:
            key = f"finetune_{name}_{seed}"
            if key not in results:
                log(f"\n== Fine-tuning {name}, seed {seed}")
                results[key] = runs.finetune_accuracy(preset, base / "data", output / "finetune" / f"{name}_seed{seed}",
                                                      seed, recipe, log)
                save()
        if f"probe_{name}" not in results:
            results[f"probe_{name}"] = runs.probe_accuracies(preset, model_preset, base / "data", recipe.sequence_length, log)
            save()
