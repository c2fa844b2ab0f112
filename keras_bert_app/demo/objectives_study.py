"""`kba.study_objectives`: BERT, its ablations and its successors pretrained at equal FLOPs, tuned alike, replicated.

    kba.study_objectives("runs/objectives_study")
    kba.study_objectives("runs/objectives_study", quickstart_run="quickstart_run", budget_steps=400)

On the quickstart's data (BBC News: the training articles' `corpus.txt`,
the WordPiece vocabulary learned from them) and its encoder size
(`bert_tiny_uncased`, L=2, H=128), the arms of `ARMS`, each with its
paper's data, masking and optimizer (`objectives_study_settings.py`):
BERT, its Table 5 ablations (No NSP; left-to-right and No NSP), its
Table 8 masking procedures (100/0/0 and 80/20/0 beside 80/10/10, on the
RoBERTa-style arm), RoBERTa-, ALBERT-style and ELECTRA.

1. Every arm gets the pretraining FLOPs of `budget_steps` BERT steps
   (`benchmark.flops.model_flops`; an arm with costlier steps runs fewer).
2. Rates: every arm runs each rate of one grid (`learning_rates`) on the
   first pretraining seed; its rate is the one that scores best on its own
   held-out pretraining metric on the dev articles (`evaluation.token_context`:
   masked-LM loss, ELECTRA's discriminator AUC, left-to-right next-token
   loss), never on the task. That run is the first seed's run.
3. The other pretraining seeds (fresh initial weights, data order and
   masks) at the selected rate.
4. The task (`objectives_study_task`: the topic of an article from few
   labels): each pretrained encoder and the random ones it started from are
   fine-tuned with each fine-tuning seed and probed on frozen features;
   the majority class, a bag of words and surface features are the
   baselines.

`report.md` gives the table and a reading computed by stated rules
(`objectives_study_report`); `results.json` keeps every run, so a rerun of
the same command continues where it stopped.
"""

import dataclasses
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence

from keras_bert_app import errors
from keras_bert_app.demo import objectives_study_inputs as inputs
from keras_bert_app.demo import objectives_study_runs as runs
from keras_bert_app.demo import study_results
from keras_bert_app.demo import settings as defaults
from keras_bert_app.demo.objectives_study_runs import Recipe
from keras_bert_app.demo.objectives_study_settings import (
    ARMS,
    DEFAULT_BUDGET_STEPS,
    DEFAULT_OUTPUT,
    DEFAULT_PRETRAINING_SEEDS,
    DEFAULT_SEEDS,
    FINETUNE_BATCH_SIZE,
    FINETUNE_EPOCHS,
    LEARNING_RATES,
    MIN_BUDGET_STEPS,
    PRETRAIN_BATCH_SIZE,
    QUICKSTART_PARTS,
    RANDOM,
    RESULTS_FILE,
    SELECTION,
    STUDY_VERSION,
    TASK_DEV_EXAMPLES,
    TASK_LABELS_PER_CLASS,
)

PathLike = str | os.PathLike


def study_objectives(
    output: PathLike = DEFAULT_OUTPUT,
    *,
    quickstart_run: PathLike | None = None,
    budget_steps: int = DEFAULT_BUDGET_STEPS,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    pretraining_seeds: Sequence[int] = DEFAULT_PRETRAINING_SEEDS,
    learning_rates: Sequence[float] = LEARNING_RATES,
    objectives: Sequence[str] = tuple(ARMS),
    log: Callable[[str], None] = print,
) -> dict:
    """Sweep, pretrain (replicated), fine-tune, probe and report each objective at equal FLOPs.

    Args:
        output: str or path. Folder of the study (created; a rerun with the
            same arguments continues it).
        quickstart_run: str, path or None. A finished `keras-bert-app
            quickstart` folder whose data, vocabulary, initial model and
            `nsp` records are used (None: they are built in
            `output/quickstart/` as the quickstart builds them).
        budget_steps: int >= `MIN_BUDGET_STEPS`. The pretraining FLOPs of
            every arm: those of this many BERT steps.
        seeds: ints. Fine-tuning seeds, for each pretraining seed.
        pretraining_seeds: ints. Pretraining seeds (initial weights, data
            order, masks); the first runs the rate sweep.
        learning_rates: floats > 0. The one grid of peak rates every arm is
            swept over.
        objectives: names from `ARMS`.
        log: callable taking one line of progress.

    Returns:
        dict: `results` (as in `results.json`), `report` and `plot`
        (pathlib.Path).

    Raises:
        keras_bert_app.errors.ArgumentTypeError: an argument of the wrong type.
        keras_bert_app.errors.ArgumentError: an unknown objective, a budget
            too small to sweep, no seeds or rates, an output folder that
            cannot be written.
        keras_bert_app.errors.MissingFileError: a `quickstart_run` without the
            parts the study reads.
        keras_bert_app.errors.OutputExistsError: `output` holds something
            else, a study with other settings, or one of another version.
    """
    started = time.monotonic()
    output, base, budget_steps, seeds, pretraining_seeds, rates, objectives = _check_arguments(
        output, quickstart_run, budget_steps, seeds, pretraining_seeds, learning_rates, objectives)
    settings = {"version": STUDY_VERSION, "quickstart_run": str(base.resolve()) if quickstart_run is not None else None,
                "budget_steps": budget_steps, "learning_rates": list(rates)}
    results = study_results.open_results(output, RESULTS_FILE, settings)
    results.setdefault("pretraining", {})
    results.setdefault("finetune", {})
    results.setdefault("probe", {})

    clock = study_results.CallClock(results, output / RESULTS_FILE, started)  # an interrupted call's time counts too
    save = clock.save
    save()
    if quickstart_run is None:
        inputs.build_quickstart_data(base, log)
    recipe = dataclasses.replace(Recipe.from_quickstart(json.loads((base / defaults.SETTINGS_FILE).read_text())),
                                 batch_size=PRETRAIN_BATCH_SIZE, finetune_epochs=FINETUNE_EPOCHS,
                                 finetune_batch_size=FINETUNE_BATCH_SIZE)
    results["recipe"] = dataclasses.asdict(recipe)
    task = _task(base, output, recipe.seed, results, save)
    data = {arm: inputs.arm_data(base, output, ARMS[arm], recipe, log) for arm in objectives}
    plan = inputs.plan(base, output, objectives, recipe, budget_steps, pretraining_seeds[0], log)
    results["plan"] = {arm: {"steps": steps, "flops_per_step": step} for arm, (step, steps) in plan.items()}
    context = {"output": output, "base": base, "results": results, "save": save, "recipe": recipe, "data": data,
               "plan": plan, "log": log}
    for arm in objectives:  # 2. the sweep on the first pretraining seed
        for rate in rates:
            _pretrain(context, arm, pretraining_seeds[0], rate)
        results.setdefault("selected", {})[arm] = select_rate(results, arm, pretraining_seeds[0], rates)
        save()
    for seed in pretraining_seeds[1:]:  # 3. the other seeds at each arm's rate
        for arm in objectives:
            _pretrain(context, arm, seed, results["selected"][arm]["learning_rate"])
    _evaluate_all(context, task, objectives, seeds, pretraining_seeds)
    from keras_bert_app.demo.objectives_study_report import write_plot, write_report

    clock.finish()  # runtime_seconds: written when the study ends
    report = write_report(output / "report.md", results, log)
    plot = write_plot(output / "report.png", results)
    log(f"Report: {report}, plot: {plot} ({results['runtime_seconds'] / 60:.1f} min)")
    return {"results": results, "report": report, "plot": plot}


def _check_arguments(output, quickstart_run, budget_steps, seeds, pretraining_seeds, learning_rates, objectives):
    output = errors.check_path("output", output)
    errors.check_int("budget_steps", budget_steps, minimum=1)
    if budget_steps < MIN_BUDGET_STEPS:
        raise errors.ArgumentError(
            "budget_steps", f"budget_steps {budget_steps}: too small to sweep the rates (at least {MIN_BUDGET_STEPS} "
            "BERT steps, or every arm takes a handful of steps and the sweep compares noise).")
    checked = []
    for name, values in (("seeds", seeds), ("pretraining_seeds", pretraining_seeds)):
        errors.check_type(name, values, (list, tuple), "a list of ints")
        if not values:
            raise errors.ArgumentError(name, f"{name}: give at least one seed.")
        checked.append(tuple(dict.fromkeys(errors.check_int(name, seed) for seed in values)))
    errors.check_type("learning_rates", learning_rates, (list, tuple), "a list of numbers")
    if not learning_rates or any(not isinstance(rate, (int, float)) or not rate > 0 for rate in learning_rates):
        raise errors.ArgumentError("learning_rates", f"learning_rates: give positive numbers; got {learning_rates!r}.")
    errors.check_type("objectives", objectives, (list, tuple), "a list of names")
    if not objectives:
        raise errors.ArgumentError("objectives", f"objectives: give at least one of {list(ARMS)}.")
    for name in objectives:
        errors.check_choice("objectives", name, tuple(ARMS))
    objectives = tuple(dict.fromkeys(objectives))
    rates = tuple(float(rate) for rate in learning_rates)
    if quickstart_run is None:
        return output, output / "quickstart", budget_steps, *checked, rates, objectives
    base = errors.check_path("quickstart_run", quickstart_run)
    missing = [part for part in QUICKSTART_PARTS if not list(base.glob(part))]
    if missing:
        raise errors.MissingFileError(
            "quickstart_run", f"quickstart_run {base}: not a finished quickstart folder, it lacks {', '.join(missing)} "
            "(run `keras-bert-app quickstart --output FOLDER` first, or leave --quickstart-run out).")
    return output, base, budget_steps, *checked, rates, objectives


def run_key(arm: str, seed: int, rate: float) -> str:
    """The key of one pretraining run in `results["pretraining"]` (and its folder under `pretrain/`)."""
    return f"{arm}_seed{seed}_lr{rate:g}"


def _pretrain(context, arm, seed, rate):
    """One pretraining run of `arm` (skipped when `results.json` has it), then its held-out metrics."""
    from keras_bert_app.training.pretraining_inputs import records_shape

    results, output, recipe, log = context["results"], context["output"], context["recipe"], context["log"]
    key = run_key(arm, seed, rate)
    if key in results["pretraining"]:
        return results["pretraining"][key]
    step, steps = context["plan"][arm]
    spec = ARMS[arm]
    run_dir = output / "pretrain" / key
    shutil.rmtree(run_dir, ignore_errors=True)  # an interrupted run starts again
    preset = inputs.initial_preset(context["base"], output, arm, seed, log)
    log(f"\n== Pretraining {arm} ({spec.description}), seed {seed}, lr {rate:g}: {steps} steps")
    started = time.monotonic()
    runs.pretrain_arm(spec.objective, preset, context["data"][arm], run_dir, steps,
                      dataclasses.replace(recipe, seed=seed), source=spec.source, pairing=spec.pairing,
                      max_predictions=records_shape(str(context["base"] / "pretraining_data" / "*.tfrecord"))[1],
                      learning_rate=rate, options=dict(spec.pretrain_options), log=log)
    seconds = time.monotonic() - started
    heldout = runs.context_check(spec.objective, run_dir / "preset", context["base"] / "data" / "dev.csv",
                                 recipe.sequence_length, log)
    if arm not in results.setdefault("parameters", {}):
        results["parameters"][arm] = runs.parameter_counts(spec.objective, run_dir / "preset")
    results["pretraining"][key] = {
        "arm": arm, "pretraining_seed": seed, "learning_rate": rate, "steps": steps, "flops_per_step": step,
        "flops": steps * step, "seconds": round(seconds, 1), "final": runs.last_metrics(run_dir),
        "heldout": heldout}
    _release_memory()
    context["save"]()
    return results["pretraining"][key]


def _release_memory():
    import keras

    keras.backend.clear_session()


def select_rate(results: dict, arm: str, seed: int, rates: Sequence[float]) -> dict:
    """The rate of `rates` whose run of `arm` at `seed` scores best on the arm's held-out metric (`SELECTION`)."""
    metric, higher = SELECTION[ARMS[arm].selection]
    scored = [(results["pretraining"][run_key(arm, seed, rate)]["heldout"][metric], rate) for rate in rates]
    value, rate = (max if higher else min)(scored)
    return {"learning_rate": rate, "metric": metric, "value": value}


def _task(base, output, seed, results, save):
    """The study's task files (`objectives_study_task`), written once in `output/task/`, and their baselines."""
    from keras_bert_app.demo import objectives_study_task as task

    folder = output / "task"
    if not (folder / "dev.csv").is_file():
        task.write_topic_task(base / "data", folder, TASK_LABELS_PER_CLASS, TASK_DEV_EXAMPLES, seed)
    if "baselines" not in results:
        results["baselines"] = task.baselines(folder / "train.csv", folder / "dev.csv")
        results["task"] = task.describe(folder)
        save()
    return folder


def finetune_key(name: str, pretraining_seed: int, seed: int) -> str:
    return f"{name}_p{pretraining_seed}_f{seed}"


def _evaluate_all(context, task, objectives, seeds, pretraining_seeds):
    results, output, recipe, log, save = (context[name] for name in ("results", "output", "recipe", "log", "save"))
    model_preset = context["base"] / defaults.MODEL_PRESET_DIR
    for name in [*objectives, RANDOM]:
        for pretraining_seed in pretraining_seeds:
            if name == RANDOM:
                preset = inputs.initial_preset(context["base"], output, RANDOM, pretraining_seed, log)
            else:
                rate = results["selected"][name]["learning_rate"]
                preset = output / "pretrain" / run_key(name, pretraining_seed, rate) / "preset"
            probe_key = f"{name}_p{pretraining_seed}"
            if probe_key not in results["probe"]:
                results["probe"][probe_key] = runs.probe_accuracies(preset, model_preset, task,
                                                                    recipe.sequence_length, log)
                save()
            for seed in seeds:
                key = finetune_key(name, pretraining_seed, seed)
                if key not in results["finetune"]:
                    log(f"\n== Fine-tuning {name}, pretraining seed {pretraining_seed}, seed {seed}")
                    results["finetune"][key] = runs.finetune_accuracy(
                        preset, task, output / "finetune" / key, seed, recipe, log)
                    shutil.rmtree(output / "finetune" / key, ignore_errors=True)  # its checkpoints: not needed again
                    _release_memory()
                    save()
