"""`kba.study_objectives`: BERT and its successors pretrained at equal FLOPs, each as its paper ran it, then compared.

    kba.study_objectives("runs/objectives_study")
    kba.study_objectives("runs/objectives_study", quickstart_run="quickstart_run", budget_steps=3000)

On the quickstart's data (BBC News: the training articles' `corpus.txt`,
the WordPiece vocabulary learned from them) and its encoder size
(`bert_tiny_uncased`, L=2, H=128), four pretraining objectives (`ARMS`),
each with its own paper's data, masking and recipe:

    bert     mlm_nsp on `nsp` records (static masks), BERT's rate
    roberta  mlm on the corpus packed into full sentences, masked anew at every step, no NSP
    albert   mlm_sop on `sop` records, one set of layer weights shared by all layers, E=128
    electra  electra on the corpus packed into plain segments, masked at every step, its reference
             recipe (rate scaled to the batch, warmup share, zero output bias)

Every arm gets the same pretraining FLOPs, those of `budget_steps` BERT
steps (`benchmark.flops.model_flops`), so an arm with costlier steps runs
fewer of them. Then each encoder, the random one it started from, and a bag
of words are scored on a task where pretraining matters
(`objectives_study_task`): fine-tuned with the family's head for each seed,
and a linear probe on frozen features. Each pretrained arm is also asked
which token fits a masked slot of held-out articles beyond the word
frequencies (`evaluation.token_context`): what ELECTRA's discriminator needs
to learn at all. `report.md` gives means with 95% t-intervals;
`results.json` keeps every figure, so a rerun continues.
"""

import dataclasses
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
    BAG_OF_WORDS,
    DEFAULT_BUDGET_STEPS,
    DEFAULT_OUTPUT,
    DEFAULT_SEEDS,
    QUICKSTART_PARTS,
    RANDOM,
    RESULTS_FILE,
    STEP_MULTIPLE,
    TASK_EXAMPLES,
)
from keras_bert_app.demo.stages import write_atomically

PathLike = str | os.PathLike


def study_objectives(
    output: PathLike = DEFAULT_OUTPUT,
    *,
    quickstart_run: PathLike | None = None,
    budget_steps: int = DEFAULT_BUDGET_STEPS,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    objectives: Sequence[str] = tuple(ARMS),
    log: Callable[[str], None] = print,
) -> dict:
    """Pretrain each objective at equal FLOPs on the quickstart's data; fine-tune, probe and report.

    Args:
        output: str or path. Folder of the study (created; a rerun with the
            same arguments continues it).
        quickstart_run: str, path or None. A finished `keras-bert-app
            quickstart` folder whose data, vocabulary, initial model and
            `nsp` records are used (None: they are built in
            `output/quickstart/` as the quickstart builds them).
        budget_steps: int > 0. The pretraining FLOPs of every arm: those of
            this many BERT steps at the quickstart's batch and length.
        seeds: ints. Fine-tuning seeds (mean and 95% t-interval).
        objectives: names from `ARMS` ("bert", "roberta", "albert", "electra").
        log: callable taking one line of progress.

    Returns:
        dict: `results` (as in `results.json`: each pretraining's FLOPs,
        steps, seconds, peak memory, parameter counts and last metrics, each
        fine-tuned accuracy and probe, the bag of words), `report` and
        `plot` (pathlib.Path).

    Raises:
        keras_bert_app.errors.ArgumentTypeError: an argument of the wrong type.
        keras_bert_app.errors.ArgumentError: an unknown objective, a budget
            below 1, no seeds, an output folder that cannot be written.
        keras_bert_app.errors.MissingFileError: a `quickstart_run` without the
            parts the study reads.
        keras_bert_app.errors.OutputExistsError: `output` holds something
            else, or a study with other settings.
    """
    import time

    started = time.monotonic()
    output, base, budget_steps, seeds, objectives = _check_arguments(output, quickstart_run, budget_steps, seeds,
                                                                     objectives)
    settings = {"quickstart_run": str(base.resolve()) if quickstart_run is not None else None,
                "budget_steps": budget_steps}
    results = _open_results(output, settings)

    def save():
        write_atomically(output / RESULTS_FILE, json.dumps(results, indent=2) + "\n")

    save()
    if quickstart_run is None:
        build_quickstart_data(base, log)
    recipe = Recipe.from_quickstart(json.loads((base / defaults.SETTINGS_FILE).read_text()))
    results["recipe"] = dataclasses.asdict(recipe)
    data = {arm: _arm_data(base, output, ARMS[arm], recipe, log) for arm in objectives}
    presets = {arm: _initial_preset(base, output, arm, recipe.seed, log) for arm in objectives}
    _pretrain_all(output, base, results, save, objectives, data, presets, recipe, budget_steps, log)
    task = _task(base, output, recipe.seed)
    if BAG_OF_WORDS not in results:
        from keras_bert_app.demo.objectives_study_task import bag_of_words_accuracy

        results[BAG_OF_WORDS] = bag_of_words_accuracy(task / "train.csv", task / "dev.csv")
        save()
    _evaluate_all(output, base, task, results, save, objectives, recipe, seeds, log)
    from keras_bert_app.demo.objectives_study_report import write_plot, write_report

    rows = [*objectives, RANDOM]
    # Each call's seconds (a study resumed or extended takes several); the study's runtime is their sum.
    calls = results.setdefault("call_seconds", [results["runtime_seconds"]] if "runtime_seconds" in results else [])
    calls.append(round(time.monotonic() - started, 1))
    results["runtime_seconds"] = round(sum(calls), 1)
    results["load_average"] = [round(value, 2) for value in os.getloadavg()]
    save()
    report = write_report(output / "report.md", results, rows, seeds, log)
    plot = write_plot(output / "report.png", results, rows, seeds)
    log(f"Report: {report}, plot: {plot} ({results['runtime_seconds'] / 60:.1f} min)")
    return {"results": results, "report": report, "plot": plot}


def _check_arguments(output, quickstart_run, budget_steps, seeds, objectives):
    output = errors.check_path("output", output)
    errors.check_int("budget_steps", budget_steps, minimum=1)
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
    if quickstart_run is None:
        return output, output / "quickstart", budget_steps, seeds, objectives
    base = errors.check_path("quickstart_run", quickstart_run)
    missing = [part for part in QUICKSTART_PARTS if not list(base.glob(part))]
    if missing:
        raise errors.MissingFileError(
            "quickstart_run", f"quickstart_run {base}: not a finished quickstart folder, it lacks {', '.join(missing)} "
            "(run `keras-bert-app quickstart --output FOLDER` first, or leave --quickstart-run out).")
    return output, base, budget_steps, seeds, objectives


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


def _arm_data(base, output, arm, recipe, log):
    """What an arm reads: the corpus (masked at every step), or the glob of its pairing's records."""
    if arm.source == "corpus":
        return str(base / "data" / "corpus.txt")
    return _records(base, output, arm.pairing, recipe, log)


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


def flops_per_step(arm: str, preset: pathlib.Path, recipe: Recipe) -> int:
    """Training FLOPs of one step of `arm` (bench FLOP model; ELECTRA: discriminator + its generator)."""
    from keras_bert_app import presets as preset_files
    from keras_bert_app.benchmark.flops import model_flops
    from keras_bert_app.models.electra_generator import generator_config

    encoder = preset_files.read_config(preset)["encoder"]
    flops = model_flops(encoder, recipe.batch_size, recipe.sequence_length, training=True)
    if ARMS[arm].objective == "electra":
        flops += model_flops(generator_config(encoder), recipe.batch_size, recipe.sequence_length, training=True)
    return flops


def learning_rate(arm: str, batch_size: int) -> float:
    """`arm`'s peak pretraining rate: its objective's default at `batch_size`, times the arm's `rate_factor`."""
    from keras_bert_app.training.objectives import get_objective

    return get_objective(ARMS[arm].objective).default_rate_at(batch_size) * ARMS[arm].rate_factor


def equal_flops_steps(budget: float, step_flops: float, multiple: int = STEP_MULTIPLE) -> int:
    """Steps that spend `budget` FLOPs at `step_flops` each, rounded to a multiple of `multiple` (at least one)."""
    return max(multiple, round(budget / step_flops / multiple) * multiple)


def _pretrain_all(output, base, results, save, objectives, data, presets, recipe, budget_steps, log):
    from keras_bert_app.training.pretraining_inputs import records_shape

    bert_step = flops_per_step("bert", base / defaults.MODEL_PRESET_DIR, recipe)
    budget = budget_steps * bert_step
    max_predictions = records_shape(str(base / "pretraining_data" / "*.tfrecord"))[1]
    plan = {}
    for arm in objectives:
        step = flops_per_step(arm, presets[arm], recipe)
        plan[arm] = (step, equal_flops_steps(budget, step), learning_rate(arm, recipe.batch_size))
    log(f"\nPlan at equal pretraining FLOPs ({budget / 1e12:.1f} TFLOPs each: {budget_steps} BERT steps, bench FLOP "
        "model): " + "; ".join(f"{arm} {step / 1e9:.1f} GFLOPs/step -> {steps} steps at lr {rate:.3g}"
                               for arm, (step, steps, rate) in plan.items()))
    for arm in objectives:
        key = f"pretrain_{arm}"
        run_dir = output / "pretrain" / arm
        step, steps, rate = plan[arm]
        if results.get(key, {}).get("steps") != steps or results[key].get("learning_rate") != rate:
            spec = ARMS[arm]
            log(f"\n== Pretraining {arm} ({spec.description}): {steps} steps, {steps * step / 1e12:.1f} TFLOPs")
            arguments = {"objective": spec.objective, "preset": str(presets[arm]), "data": data[arm],
                         "run_dir": str(run_dir), "steps": steps, "recipe": dataclasses.asdict(recipe),
                         "source": spec.source, "pairing": spec.pairing, "max_predictions": max_predictions,
                         "learning_rate": rate}
            measured = runs.pretrain_in_child(arguments, log=log)
            results[key] = {"steps": steps, "flops_per_step": step, "flops": steps * step, "learning_rate": rate,
                            **measured,
                            "final": runs.last_metrics(run_dir),
                            "parameters": runs.parameter_counts(spec.objective, run_dir / "preset")}
        if "run_step_time" not in results[key]:  # the run's own pace
            results[key]["run_step_time"] = statistics.median(runs.step_times(run_dir, recipe.tokens_per_step))
        save()


def _task(base, output, seed):
    """The study's task files (`objectives_study_task`), written once in `output/task/`."""
    from keras_bert_app.demo.objectives_study_task import write_word_order_task

    folder = output / "task"
    if not (folder / "dev.csv").is_file():
        write_word_order_task(base / "data", folder, TASK_EXAMPLES, seed)
    return folder


def _evaluate_all(output, base, task, results, save, objectives, recipe, seeds, log):
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
                results[key] = runs.finetune_accuracy(preset, task, output / "finetune" / f"{name}_seed{seed}",
                                                      seed, recipe, log)
                save()
        if f"probe_{name}" not in results:
            results[f"probe_{name}"] = runs.probe_accuracies(preset, model_preset, task, recipe.sequence_length, log)
            save()
        if name != RANDOM and f"context_{name}" not in results:
            results[f"context_{name}"] = runs.context_check(ARMS[name].objective, preset, base / "data" / "dev.csv",
                                                            recipe.sequence_length, log)
            save()
