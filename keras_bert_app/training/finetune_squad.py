"""`keras-bert-app finetune squad` and `predict squad`: SQuAD v1.1 / v2.0 end to end.

    keras-bert-app finetune squad --version 1.1 --train train-v1.1.json --dev dev-v1.1.json \\
        --preset bert_base_uncased_converted --output RUN
    keras-bert-app predict squad --preset RUN/preset --data questions.json --output OUT

`finetune squad` trains `BertQuestionAnswerer` on the windows of the training
questions (sections 4.2-4.3 of the paper), predicts the dev questions,
scores them with the official metrics and writes to RUN: `predictions.json`,
`nbest_predictions.json`, (v2.0) `null_odds.json`, `metrics.json`, `logs/`
and `preset/` (tokenizer, encoder, span head, and a "task" entry with the
windowing settings). For v2.0 the no-answer threshold is tuned on dev (the
one that maximises F1, as `evaluate-v2.0.py`'s `best_f1_thresh`), used for
the dev predictions and stored in the preset for `predict squad`.
"""

import json
import math
import pathlib
import time

READER = "squad"


def add_arguments(parser):
    """The options of `finetune squad`."""
    from keras_bert_app.training.finetune import add_common_arguments

    parser.add_argument("--version", required=True, choices=("1.1", "2.0"), help="SQuAD version")
    parser.add_argument("--train", required=True, help="training SQuAD JSON file")
    parser.add_argument("--dev", required=True, help="dev SQuAD JSON file (predicted and scored after training)")
    _add_window_arguments(parser)
    parser.add_argument(
        "--null-score-diff-threshold", type=float,
        help="v2.0: fixed no-answer threshold (default: tuned on dev for the best F1)",
    )
    add_common_arguments(parser, learning_rate=3e-5, epochs=2, batch_size=32, sequence_length=384)


def _add_window_arguments(parser):
    parser.add_argument("--doc-stride", type=int, default=128, help="context pieces between windows (default 128)")
    parser.add_argument("--max-query-length", type=int, default=64, help="question pieces kept (default 64)")
    parser.add_argument("--n-best-size", type=int, default=20, help="n-best list length (default 20)")
    parser.add_argument("--max-answer-length", type=int, default=30, help="longest answer in pieces (default 30)")


def run(args):
    """Fine-tune, predict dev, score, tune the v2.0 threshold, save the preset."""
    import keras

    from keras_bert_app.data.squad import read_squad
    from keras_bert_app.models.bert_question_answerer import BertQuestionAnswerer
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer
    from keras_bert_app.training.finetune import training_callbacks

    keras.utils.set_random_seed(args.seed)
    output = pathlib.Path(args.output).expanduser()
    output.mkdir(parents=True, exist_ok=True)
    settings = {
        "reader": READER,
        "version": args.version,
        "sequence_length": args.sequence_length,
        "doc_stride": args.doc_stride,
        "max_query_length": args.max_query_length,
        "n_best_size": args.n_best_size,
        "max_answer_length": args.max_answer_length,
    }
    tokenizer = BertTokenizer.from_preset(args.preset)
    train = read_squad(args.train, version=args.version)
    dev = read_squad(args.dev, version=args.version)
    if not len(dev):
        raise ValueError(f"{dev.source}: the dev set has no questions; nothing to evaluate on.")
    train_features = featurize(train, tokenizer, settings, training=True)
    print(_summary("train", train, train_features))
    if not len(train_features):
        raise ValueError(f"{train.source}: no training window could be made.")
    dev_features = featurize(dev, tokenizer, settings, training=False)
    print(_summary("dev", dev, dev_features))

    model = BertQuestionAnswerer.from_preset(args.preset)
    steps_per_epoch = -(-len(train_features) // args.batch_size)
    model.compile(
        learning_rate=args.learning_rate, total_steps=steps_per_epoch * args.epochs,
        jit_compile=not args.no_jit_compile and "auto",
    )
    print(
        f"Fine-tuning BertQuestionAnswerer ({model.count_params():,} parameters) for "
        f"{args.epochs} epochs x {steps_per_epoch} steps, batch {args.batch_size}, "
        f"learning rate {args.learning_rate:g}."
    )
    started = time.perf_counter()
    model.fit(
        train_features.inputs,
        train_features.labels(),
        batch_size=args.batch_size,
        epochs=args.epochs,
        shuffle=True,
        callbacks=training_callbacks(output / "logs"),
        verbose=2,
    )
    train_seconds = time.perf_counter() - started

    start_logits, end_logits = predict_logits(model, dev_features, args.batch_size)
    threshold = args.null_score_diff_threshold
    if args.version == "2.0" and threshold is None:
        threshold = tune_null_threshold(dev, dev_features, start_logits, end_logits, settings)
        print(f"Tuned the no-answer threshold on dev: {threshold:.4f} (best F1).")
    settings["null_score_diff_threshold"] = 0.0 if threshold is None else float(threshold)
    result = postprocess(dev_features, start_logits, end_logits, settings)
    result.write(output)
    scores = score(dev, result, settings["null_score_diff_threshold"])
    metrics = {
        "task": settings,
        "train_examples": len(train),
        "train_features": len(train_features),
        "train_skipped": len(train_features.skipped),
        "train_seconds": round(train_seconds, 1),
        "dev": {**scores, "examples": len(dev), "features": len(dev_features)},
    }
    (output / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    print("dev: " + ", ".join(f"{k} {v:.4f}" for k, v in scores.items() if isinstance(v, float)))
    folder = save_preset(model, tokenizer, settings, output / "preset")
    print(f"Wrote predictions and {output / 'metrics.json'} in {output}, preset {folder}.")
    return 0


def featurize(data, tokenizer, settings, training):
    """The windows of a `SquadData` with a run's settings."""
    from keras_bert_app.data.squad_features import featurize_squad

    return featurize_squad(
        data.examples,
        tokenizer,
        max_seq_length=settings["sequence_length"],
        doc_stride=settings["doc_stride"],
        max_query_length=settings["max_query_length"],
        training=training,
    )


def predict_logits(model, features, batch_size):
    """`(start_logits, end_logits)` float32 [features, seq]."""
    import numpy as np

    outputs = model.predict(features.inputs, batch_size=batch_size, verbose=0)
    return (np.asarray(outputs["start_logits"], "float32"), np.asarray(outputs["end_logits"], "float32"))


def postprocess(features, start_logits, end_logits, settings, threshold=None):
    """`SquadPredictions` with a run's settings (and its stored threshold unless given)."""
    from keras_bert_app.evaluation.squad_postprocessing import squad_predictions

    if threshold is None:
        threshold = settings.get("null_score_diff_threshold", 0.0)
    return squad_predictions(
        features,
        start_logits,
        end_logits,
        version_2=settings["version"] == "2.0",
        n_best_size=settings["n_best_size"],
        max_answer_length=settings["max_answer_length"],
        null_score_diff_threshold=threshold,
    )


def tune_null_threshold(data, features, start_logits, end_logits, settings):
    """A null-score threshold with the best dev F1 (`evaluate-v2.0.py`'s `best_f1_thresh`, moved off the data).

    The sweep needs every question's best non-null answer, so predictions
    are made with an infinite threshold first.
    """
    from keras_bert_app.evaluation.squad_metrics import evaluate_v2

    always_answer = postprocess(features, start_logits, end_logits, settings, threshold=math.inf)
    scores = evaluate_v2(data.articles, always_answer.predictions, always_answer.null_odds)
    best = float(scores["best_f1_thresh"])
    # The official threshold is one question's own null score difference, so
    # recomputing its logits (`predict`, an export, another backend) can flip
    # that question by a rounding error. Halfway to the next question's
    # difference makes the same choices on dev with a margin either side.
    above = [float(odds) for odds in always_answer.null_odds.values() if odds > best]
    return (best + min(above)) / 2 if above else best + 1.0


def score(data, result, threshold=0.0):
    """Official scores of `SquadPredictions` on labelled data.

    v2.0: with the null odds as no-answer scores and `threshold` as their
    threshold (the one the predictions were made with), plus `best_*`.
    """
    from keras_bert_app.evaluation import squad_metrics

    if result.null_odds is None:
        return squad_metrics.evaluate_v1(data.articles, result.predictions)
    return squad_metrics.evaluate_v2(data.articles, result.predictions, result.null_odds, threshold)


def save_preset(model, tokenizer, settings, folder):
    """Tokenizer + model preset with the run's settings in the "task" entry."""
    from keras_bert_app import presets

    tokenizer.save_to_preset(folder)
    folder = model.save_to_preset(folder)
    task = presets.read_config(folder)["task"]
    presets.write_config_entry(folder, "task", {**task, "data": settings})
    return folder


def _summary(name, data, features):
    line = (
        f"{name}: {len(data)} SQuAD v{data.version} questions from {data.source} -> "
        f"{len(features)} windows"
    )
    if features.skipped:
        reasons = "; ".join(f"{qas_id}: {reason}" for qas_id, reason in features.skipped[:3])
        line += f"; warning: {len(features.skipped)} questions skipped (answer not located: {reasons})"
    return line


# === predict squad ===
def add_predict_arguments(parser):
    """The options of `predict squad`."""
    parser.add_argument("--preset", required=True, help="the preset/ folder of a `finetune squad` run")
    parser.add_argument("--data", required=True, help="SQuAD-format JSON with the questions (answers not needed)")
    parser.add_argument("--output", required=True, help="folder for predictions.json, nbest_predictions.json (and null_odds.json)")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size (default 32)")
    parser.add_argument(
        "--null-score-diff-threshold", type=float,
        help="v2.0: no-answer threshold (default: the one tuned by finetune)",
    )


def run_predict(args):
    """Answer the questions of a SQuAD-format file with a fine-tuned preset."""
    from keras_bert_app import presets
    from keras_bert_app.data.squad import read_squad
    from keras_bert_app.models.bert_question_answerer import BertQuestionAnswerer
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    task = presets.read_config(args.preset).get("task", {})
    settings = task.get("data", {})
    if task.get("class_name") != "BertQuestionAnswerer" or settings.get("reader") != READER:
        raise ValueError(
            f"Preset {args.preset!r} is not a SQuAD model (no BertQuestionAnswerer 'task' "
            "entry with SQuAD settings): pass the preset/ folder of a `finetune squad` run."
        )
    data = read_squad(args.data)
    tokenizer = BertTokenizer.from_preset(args.preset)
    model = BertQuestionAnswerer.from_preset(args.preset)
    model.compile()  # XLA where `finetune squad` used it: the same logits, the same answers
    features = featurize(data, tokenizer, settings, training=False)
    print(_summary("input", data, features))
    start_logits, end_logits = predict_logits(model, features, args.batch_size)
    result = postprocess(features, start_logits, end_logits, settings, args.null_score_diff_threshold)
    paths = result.write(pathlib.Path(args.output).expanduser())
    print("Wrote " + ", ".join(str(path) for path in paths) + ".")
    return 0
