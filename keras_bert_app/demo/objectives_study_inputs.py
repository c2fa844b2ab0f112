"""What each arm of the objectives study starts from and reads: the quickstart's data, each pairing's records,
each arm's initial weights at a pretraining seed, and the plan at equal pretraining FLOPs."""

import json
import os
import pathlib
import shutil
from collections.abc import Callable

from keras_bert_app.demo import settings as defaults
from keras_bert_app.demo.objectives_study_runs import Recipe
from keras_bert_app.demo.objectives_study_settings import ARMS, RANDOM, STEP_MULTIPLE
from keras_bert_app.demo.stages import write_atomically


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


def arm_data(base, output, arm, recipe, log):
    """What an arm reads: the corpus (masked at every step), or the glob of its pairing's records."""
    if arm.source == "corpus":
        return str(base / "data" / "corpus.txt")
    return records(base, output, arm.pairing, recipe, log)


def records(base, output, pairing, recipe, log):
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


def initial_preset(base: pathlib.Path, output: pathlib.Path, arm: str, seed: int, log=print) -> pathlib.Path:
    """The weights `arm` starts from at pretraining seed `seed`: the quickstart's config with the arm's encoder
    options, freshly initialised from `seed` (`output/presets/ARM_seedSEED/`). `RANDOM` is BERT's."""
    model_preset = base / defaults.MODEL_PRESET_DIR
    options = dict(ARMS["bert" if arm == RANDOM else arm].encoder_options)
    name = "bert" if arm == RANDOM or not options else arm  # arms with the quickstart's config share its weights
    folder = output / "presets" / f"{name}_seed{seed}"
    if not (folder / "model.weights.h5").is_file():
        import keras

        from keras_bert_app.models.bert_encoder import BertEncoder
        from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

        shutil.rmtree(folder, ignore_errors=True)
        keras.utils.set_random_seed(seed)
        BertTokenizer.from_preset(model_preset).save_to_preset(folder)
        encoder = BertEncoder.from_preset(model_preset, load_weights=False, **options)
        encoder.save_to_preset(folder)  # last: its weights file marks the folder done
        log(f"{folder}: the quickstart's config{f' with {options}' if options else ''}, initialised from seed {seed}, "
            f"{encoder.count_params():,} parameters")
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


def equal_flops_steps(budget: float, step_flops: float, multiple: int = STEP_MULTIPLE) -> int:
    """Steps that spend `budget` FLOPs at `step_flops` each, rounded to a multiple of `multiple` (at least one)."""
    return max(multiple, round(budget / step_flops / multiple) * multiple)


def plan(base, output, objectives, recipe, budget_steps, seed, log):
    """arm -> (FLOPs per step, steps) at equal FLOPs: those of `budget_steps` BERT steps."""
    budget = budget_steps * flops_per_step("bert", base / defaults.MODEL_PRESET_DIR, recipe)
    plan = {}
    for arm in objectives:
        step = flops_per_step(arm, initial_preset(base, output, arm, seed, log), recipe)
        plan[arm] = (step, equal_flops_steps(budget, step))
    log(f"\nPlan at equal pretraining FLOPs ({budget / 1e12:.2f} TFLOPs each: {budget_steps} BERT steps, bench FLOP "
        "model): " + "; ".join(f"{arm} {step / 1e9:.1f} GFLOPs/step -> {steps} steps" for arm, (step, steps)
                               in plan.items()))
    return plan
