"""The quickstart's stages, shared by the English and the Chinese quickstart.

Each function runs one stage through the package's public stage function
(`build_vocabulary`, `create_pretraining_data`, `pretrain`, `finetune`,
the linear probe, `export_for_serving`) on the run folder's files, logs the
call it makes and returns the stage's figures for `stages/<stage>.json`.
"""

import json
import os
import pathlib
import shutil

from keras_bert_app import errors
from keras_bert_app.demo import settings as defaults
from keras_bert_app.demo.stages import write_atomically


def prepare_output(output, settings):
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


def announce(log, function, **arguments):
    """One progress line naming the stage function called and its arguments."""
    listed = ", ".join(f"{name}={str(value) if isinstance(value, pathlib.Path) else value!r}" for name, value in arguments.items())
    log(f">>> kba.{function}({listed})")


def lowercase(preset):
    from keras_bert_app.convert import resolve

    return resolve.read_config(preset)["tokenizer"].get("lowercase", True)


def make_model_preset(output, settings, log, tokenizer_preset=None, **vocabulary_options):
    """`model_preset/`: the `preset` config with the corpus' own vocabulary, freshly initialised.

    Pretraining starts from these weights and the random baseline fine-tunes
    them as they are, so the two classifiers differ only by the pretraining.
    A vocabulary learned from the corpus keeps the masked LM's output layer
    small. `tokenizer_preset` (default: `preset`) gives the vocabulary when
    `vocab_size` is 0, and the lower-casing either way; `vocabulary_options`
    go to `build_vocabulary`.
    """
    import keras

    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer
    from keras_bert_app.preprocessing.vocabulary_training import build_vocabulary

    preset = settings["preset"]
    tokenizer_preset = tokenizer_preset or preset
    folder = output / defaults.MODEL_PRESET_DIR
    shutil.rmtree(folder, ignore_errors=True)
    if settings["vocab_size"]:
        arguments = dict(corpus=output / "data" / "corpus.txt", output=output / "data" / "vocab.txt",
                         vocab_size=settings["vocab_size"], lowercase=lowercase(tokenizer_preset), **vocabulary_options)
        announce(log, "build_vocabulary", **arguments)
        vocabulary = build_vocabulary(**arguments)
        tokenizer = BertTokenizer(vocabulary=str(vocabulary), lowercase=arguments["lowercase"])
    else:
        tokenizer = BertTokenizer.from_preset(tokenizer_preset)
    keras.utils.set_random_seed(settings["seed"])
    encoder = BertEncoder.from_preset(preset, load_weights=False, vocabulary_size=tokenizer.vocabulary_size())
    encoder.save_to_preset(folder)
    tokenizer.save_to_preset(folder)
    log(f"{folder}: {preset} config, {tokenizer.vocabulary_size()} WordPieces, {encoder.count_params():,} parameters")
    return {"vocabulary_size": tokenizer.vocabulary_size(), "parameters": encoder.count_params()}


def max_predictions(sequence_length):
    return max(1, round(0.15 * sequence_length))


def make_pretraining_data(output, settings, log, **options):
    from keras_bert_app.convert import resolve
    from keras_bert_app.data.create_pretraining_data import create_pretraining_data

    model_preset = output / defaults.MODEL_PRESET_DIR
    folder = output / "pretraining_data"
    arguments = dict(
        input_files=output / "data" / "corpus.txt", output_dir=folder, tokenizer=resolve.vocabulary_path(model_preset),
        lowercase=lowercase(model_preset), max_seq_length=settings["sequence_length"],
        max_predictions_per_seq=max_predictions(settings["sequence_length"]), dupe_factor=settings["dupe_factor"],
        seed=settings["seed"], overwrite=True, workers=min(2, os.cpu_count() or 1), **options,
    )
    announce(log, "create_pretraining_data", **arguments)
    summary = create_pretraining_data(**arguments, **({"log": log} if options else {}))  # log: the segmentation line
    log(f"{summary['instances']} training instances in {folder}")
    result = {"instances": summary["instances"]}
    if options:  # the masking options (Chinese quickstart): what the masking did
        result.update({key: summary[key] for key in ("masking", "segmenter", "masked_fraction", "is_next_fraction",
                                                     "segmentation", "documents", "sentences")})
    return result


def xla_for_pretraining():
    """XLA where the backend has it: pretraining runs one batch shape for many steps, so one compile pays."""
    import keras

    from keras_bert_app.models.xla import XLA_BACKENDS

    return keras.config.backend() in XLA_BACKENDS


def checkpoint_every(steps, points=20):
    """The largest divisor of `steps` that gives at least `points` metric rows (when it can)."""
    limit = max(1, steps // points)
    return max(d for d in range(1, limit + 1) if steps % d == 0)


def pretrain_stage(output, settings, log, learning_rate=defaults.DEFAULT_PRETRAIN_LEARNING_RATE):
    from keras_bert_app.demo.report import number, read_csv
    from keras_bert_app.training.pretrain import pretrain

    steps = settings["steps"]
    every = checkpoint_every(steps)
    arguments = dict(
        preset=output / defaults.MODEL_PRESET_DIR, output=output / "pretrain", steps=steps,
        data=str(output / "pretraining_data" / "*.tfrecord"), batch_size=settings["batch_size"],
        learning_rate=learning_rate, warmup_steps=max(1, steps // 10),
        checkpoint_every=every, output_bias_init="unigram", dropout=defaults.DEFAULT_PRETRAIN_DROPOUT,
        seed=settings["seed"],
        # Thousands of steps of one batch shape: XLA's one compile pays for itself (Keras' "auto" leaves a
        # TensorFlow CPU without it).
        jit_compile=xla_for_pretraining(),
    )
    announce(log, "pretrain", **arguments)
    pretrain(**arguments, log=log)
    rows = read_csv(output / "pretrain" / "metrics.csv")
    last = {key: number(value) for key, value in rows[-1].items() if key != "epoch"} if rows else {}
    last = {key: value for key, value in last.items() if value is not None}
    return {"checkpoint_every": every, "final": last}


def finetune_stage(output, settings, preset, run_dir, log, learning_rate=defaults.DEFAULT_FINETUNE_LEARNING_RATE,
                   per_epoch_dev=True):
    """Fine-tune `preset` on the labeled articles (reviews); `per_epoch_dev=False` scores dev after the last epoch only."""
    from keras_bert_app.training.finetune import finetune

    shutil.rmtree(run_dir, ignore_errors=True)
    data = output / "data"
    arguments = dict(
        preset=preset, output=run_dir, train=data / "labeled.csv", dev=data / "dev.csv", text_column="text",
        label_column="label", epochs=settings["finetune_epochs"], batch_size=defaults.DEFAULT_FINETUNE_BATCH_SIZE,
        learning_rate=learning_rate, sequence_length=settings["sequence_length"],
        seed=settings["seed"],
        jit_compile=False,  # 128 steps: XLA's compile costs more than it saves
    )
    if not per_epoch_dev:  # the same weights, without a dev pass per epoch (the plots read the first run's)
        arguments["validation_freq"] = settings["finetune_epochs"]
    announce(log, "finetune", task="classify", **arguments)
    finetune("classify", **arguments, log=log)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    return {"dev_accuracy": metrics["dev"]["accuracy"], "dev_examples": metrics["dev"]["examples"],
            "train_examples": metrics["train_examples"]}


def probe_stage(output, settings, log):
    """Dev accuracy of a logistic regression on each encoder's frozen features (no seed or schedule of its own).

    And of the same classifier on token counts, no encoder (`"token_counts"`):
    the baseline that tells what either encoder adds to which tokens occur.
    """
    from keras_bert_app.data.text_classification import read_text_classification
    from keras_bert_app.evaluation.linear_probe import encoder_features, probe_accuracy, token_count_features
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
    train, dev = token_count_features(preprocessor, train_examples.texts, dev_examples.texts)
    result["token_counts"] = probe_accuracy(train, train_examples.labels, dev, dev_examples.labels)
    log(f"  no encoder, token counts:    dev accuracy {result['token_counts']:.4f}")
    return result


def export_and_classify(output, log, sentences=defaults.SAMPLE_SENTENCES):
    import tensorflow as tf

    from keras_bert_app.export.serving import export_for_serving

    base = output / "serving"
    shutil.rmtree(base, ignore_errors=True)
    model = output / "finetune_pretrained" / "preset"
    announce(log, "export_for_serving", model=model, export_base=base)
    target = pathlib.Path(export_for_serving(model, base))
    serve = tf.saved_model.load(str(target)).signatures["serving_default"]
    outputs = serve(text=tf.constant(sentences))
    labels = [label.decode("utf-8") for label in outputs["label"].numpy()]
    probabilities = outputs["probabilities"].numpy().max(axis=-1)
    predictions = []
    log(f"Reloaded {target} with tf.saved_model.load:")
    for sentence, label, probability in zip(sentences, labels, probabilities):
        log(f"  {label:<14} {probability:.2f}  {sentence}")
        predictions.append({"text": sentence, "label": label, "probability": round(float(probability), 4)})
    return {"export": str(target), "predictions": predictions}


def check_run_numbers(steps, seed, max_articles, fewest_articles, sequence_length, batch_size, dupe_factor,
                      labeled_articles, vocab_size, finetune_epochs, vocabulary):
    """The numbers of a quickstart run (English or Chinese), checked; `vocabulary` names what vocab_size 0 keeps."""
    for name, value in (("steps", steps), ("batch_size", batch_size), ("dupe_factor", dupe_factor),
                        ("finetune_epochs", finetune_epochs)):
        errors.check_int(name, value, minimum=1)
    errors.check_int("seed", seed)
    errors.check_int("sequence_length", sequence_length, minimum=defaults.MIN_SEQUENCE_LENGTH)
    errors.check_int("labeled_articles", labeled_articles, minimum=0)
    if max_articles is not None:
        errors.check_int("max_articles", max_articles, minimum=fewest_articles)
    errors.check_int("vocab_size", vocab_size, minimum=0)
    if 0 < vocab_size < defaults.MIN_VOCAB_SIZE:
        raise errors.ArgumentError(
            "vocab_size", f"vocab_size must be 0 ({vocabulary}) or >= {defaults.MIN_VOCAB_SIZE}; got {vocab_size}."
        )
