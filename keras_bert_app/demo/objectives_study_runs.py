"""The runs of the objectives study: pretraining (timed, or in a child process for its memory), fine-tuning, probing.

Each function runs one stage function of the package: `pretrain` for one
objective with its own recipe, `finetune("classify", ...)` for one seed
with the quickstart's (`Recipe`), the linear probe on frozen features.
`pretrain_in_child` runs one pretraining in a fresh Python process and
reads back that process's peak resident memory.
`tools/electra_vs_bert.py` uses them too.
"""

import csv
import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from keras_bert_app import errors
from keras_bert_app.demo import pipeline
from keras_bert_app.demo import settings as defaults

Log = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class Recipe:
    """The quickstart's pretraining and fine-tuning recipe (`demo/settings.py` says where each value comes from)."""

    sequence_length: int = defaults.DEFAULT_SEQUENCE_LENGTH
    batch_size: int = defaults.DEFAULT_PRETRAIN_BATCH_SIZE
    learning_rate: float = defaults.DEFAULT_PRETRAIN_LEARNING_RATE
    dropout: float = defaults.DEFAULT_PRETRAIN_DROPOUT
    seed: int = defaults.DEFAULT_SEED
    finetune_epochs: int = defaults.DEFAULT_FINETUNE_EPOCHS
    finetune_batch_size: int = defaults.DEFAULT_FINETUNE_BATCH_SIZE
    finetune_learning_rate: float = defaults.DEFAULT_FINETUNE_LEARNING_RATE

    @classmethod
    def from_quickstart(cls, settings: dict) -> "Recipe":
        """The recipe of a quickstart run (its `quickstart.json`): its length, batch, seed and fine-tuning epochs."""
        names = ("sequence_length", "batch_size", "seed", "finetune_epochs")
        return cls(**{name: settings[name] for name in names if settings.get(name) is not None})

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * self.sequence_length


def metric_rows_every(steps: int, points: int = 20) -> int:
    """The largest divisor of `steps` that gives at least `points` metric rows (when it can), 2 steps or more if it can.

    The throughput of an interval is timed from its second step: an interval of one step has none.
    """
    limit = max(2, steps // points)
    return max(d for d in range(1, limit + 1) if steps % d == 0)


def pretrain_arm(
    objective: str, preset: str | os.PathLike, data: str, run_dir: str | os.PathLike, steps: int, recipe: Recipe,
    *, source: str = "records", pairing: str | None = None, max_predictions: int | None = None,
    checkpoint_every: int | None = None, learning_rate: float | None = None, generator_size: float | None = None,
    output_bias_init: str = "zeros", options: dict | None = None, log: Log | None = print,
) -> pathlib.Path:
    """One `pretrain` run of `objective` from `preset` with its own recipe; returns the run folder.

    `source` "records": `data` is a glob of records (static masks);
    "corpus": `data` is the corpus, packed with `pairing` and masked anew at
    every step. The learning rate, warmup and output bias are the
    objective's defaults (its paper's recipe) unless given; `options` are
    more of `pretrain`'s arguments (an arm's optimizer, Adam's betas, the
    masking procedure).
    """
    from keras_bert_app.training.pretrain import pretrain

    extra = {"generator_size": generator_size} if objective == "electra" and generator_size else {}
    extra.update(options or {})
    if source == "corpus":
        extra.update(corpus=data, pairing=pairing, max_seq_length=recipe.sequence_length, max_predictions=max_predictions)
    else:
        extra["data"] = data
    return pretrain(
        preset, run_dir, steps, batch_size=recipe.batch_size, learning_rate=learning_rate,
        checkpoint_every=checkpoint_every or metric_rows_every(steps, points=4), output_bias_init=output_bias_init,
        dropout=recipe.dropout, seed=recipe.seed, verbose=0, log=log, objective=objective, **extra,
        jit_compile=pipeline.xla_for_pretraining(),
    )


def step_times(run_dir: pathlib.Path, tokens_per_step: int) -> list[float]:
    """Seconds per step of each metric row of a run but the first (its interval holds the compilation), if others."""
    rows = [row for row in csv.DictReader((pathlib.Path(run_dir) / "metrics.csv").open())
            if row.get("tokens_per_second") not in (None, "", "NA")]
    return [tokens_per_step / float(row["tokens_per_second"]) for row in rows[1:] or rows]


def last_metrics(run_dir: pathlib.Path) -> dict[str, float]:
    """The last row of a run's `metrics.csv` (numbers only)."""
    rows = list(csv.DictReader((pathlib.Path(run_dir) / "metrics.csv").open()))
    return {key: float(value) for key, value in rows[-1].items() if value not in ("", "NA") and key != "epoch"}


# === Pretraining in a child process: its own peak memory ===
def pretrain_in_child(arguments: dict, log: Log = print) -> dict:
    """`pretrain_arm(**arguments)` in a fresh Python process; returns its `seconds` and `peak_rss_mib`.

    `peak_rss_mib` is the child's whole-process peak resident memory, read as
    it ends. Arguments must be JSON values (`recipe` a dict); a typed error
    in the child is raised here again as the same class.
    """
    root = pathlib.Path(__file__).resolve().parents[2]  # the folder holding keras_bert_app
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
    with tempfile.TemporaryDirectory() as folder:
        request, answer = pathlib.Path(folder) / "request.json", pathlib.Path(folder) / "answer.json"
        request.write_text(json.dumps({"arguments": arguments, "answer": str(answer)}))
        started = time.monotonic()
        code = "import sys; from keras_bert_app.demo.objectives_study_runs import child_main; child_main(sys.argv[1])"
        sys.stdout.flush()
        completed = subprocess.run([sys.executable, "-c", code, str(request)], env=environment, check=False)
        seconds = time.monotonic() - started
        result = json.loads(answer.read_text()) if answer.is_file() else {}
    if "error" in result:
        error_class = getattr(errors, result["error_class"], errors.DataError)
        raise error_class(*([result["argument"]] if result.get("argument") else []), result["error"])
    if completed.returncode != 0 or "peak_rss_mib" not in result:
        raise RuntimeError(f"pretraining in a child process failed (exit code {completed.returncode}); its output is above.")
    log(f"  (child process: {seconds:.0f} s, peak resident memory {result['peak_rss_mib']:.0f} MiB)")
    return {"seconds": round(seconds, 1), "peak_rss_mib": round(result["peak_rss_mib"], 1)}


def child_main(request_path: str) -> None:
    """The child's side of `pretrain_in_child`: run, then write the peak memory (or the typed error)."""
    request = json.loads(pathlib.Path(request_path).read_text())
    arguments = dict(request["arguments"])
    arguments["recipe"] = Recipe(**arguments["recipe"])
    try:
        pretrain_arm(**arguments)
    except errors.KerasBertAppError as error:  # said again by the parent, as the same class
        answer = {"error": str(error), "error_class": type(error).__name__, "argument": getattr(error, "argument", None)}
    else:
        answer = {"peak_rss_mib": peak_resident_mib()}
    pathlib.Path(request["answer"]).write_text(json.dumps(answer))


def peak_resident_mib() -> float:
    """This process' peak resident memory in MiB: Linux's `VmHWM`, else `getrusage` `ru_maxrss`.

    `VmHWM` belongs to the process' own address space, which `exec` starts
    afresh; `ru_maxrss` on Linux carries the parent's peak over fork and exec,
    so a child started by a large parent would report the parent's.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


# === Evaluation: fine-tuning and the linear probe ===
def finetune_accuracy(
    preset: pathlib.Path, task: pathlib.Path, run_dir: pathlib.Path, seed: int, recipe: Recipe, log: Log = print
) -> float:
    """Dev accuracy on the study's task (`task/train.csv`, `task/dev.csv`) fine-tuned from `preset` with `seed`.

    The quickstart's epochs, batch and rate for every arm; each family's own
    head and layer-wise decay come from `finetune` itself (an ELECTRA preset:
    the raw `[CLS]` and decay 0.8).
    """
    from keras_bert_app.training.finetune import finetune

    started = time.monotonic()
    result = finetune(
        "classify", preset=preset, output=run_dir, train=task / "train.csv", dev=task / "dev.csv",
        text_column="text", label_column="label", epochs=recipe.finetune_epochs,
        batch_size=recipe.finetune_batch_size, learning_rate=recipe.finetune_learning_rate,
        sequence_length=recipe.sequence_length, seed=seed, jit_compile=False, verbose=0,
    )
    accuracy = result.metrics["dev"]["accuracy"]
    log(f"  fine-tuned {preset}, seed {seed}: dev accuracy {accuracy:.4f} ({time.monotonic() - started:.0f} s)")
    return accuracy


def probe_accuracies(
    preset: pathlib.Path, tokenizer_preset: pathlib.Path, task: pathlib.Path, sequence_length: int, log: Log = print
) -> dict[str, float]:
    """Linear-probe dev accuracy on `preset`'s frozen last-layer `[CLS]` and mean features (no seed), and `dev_size`."""
    from keras_bert_app.data.text_classification import read_text_classification
    from keras_bert_app.evaluation.linear_probe import encoder_features, probe_accuracy
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor

    train = read_text_classification(task / "train.csv", "text", "label")
    dev = read_text_classification(task / "dev.csv", "text", "label", label_names=train.label_names)
    preprocessor = BertPreprocessor.from_preset(tokenizer_preset, sequence_length=sequence_length)
    encoder = BertEncoder.from_preset(preset)
    train_features = encoder_features(encoder, preprocessor, train.texts)
    dev_features = encoder_features(encoder, preprocessor, dev.texts)
    result = {pooling: probe_accuracy(train_features[pooling], train.labels, dev_features[pooling], dev.labels)
              for pooling in train_features}
    log(f"  probe {preset}: " + ", ".join(f"{pooling} {value:.4f}" for pooling, value in result.items()))
    return {**result, "dev_size": len(dev.labels)}


def context_check(objective: str, preset: pathlib.Path, texts_file: pathlib.Path, sequence_length: int,
                  log: Log = print) -> dict[str, float]:
    """The held-out pretraining metrics of a run's preset on held-out articles (`texts_file`'s `text` column).

    `evaluation.token_context` on the predictions of the run's own heads:
    a masked-LM head's loss, top-1 and which token fits, against the unigram
    baseline; ELECTRA's generator as such a head and its discriminator's AUC
    on frequency-drawn fakes; a left-to-right model's next-token loss and
    top-1.
    """
    with open(texts_file, newline="", encoding="utf-8") as file:
        texts = [row["text"] for row in csv.DictReader(file)]
    result = token_context(preset, texts, sequence_length, objective=objective)
    log(f"  held out, {preset}: " + ", ".join(f"{name} {value:.4g}" for name, value in result.items()))
    return result


def token_context(preset, texts, sequence_length=64, objective="mlm", seed=0, max_rows=256) -> dict[str, float]:
    """`evaluation.token_context`'s figures for a `pretrain` run's `preset/` on held-out `texts` (concatenated into
    `[CLS] ... [SEP]` rows of `sequence_length`, at most `max_rows`): its masked-LM head, for ELECTRA its generator
    (`preset/generator/`) and discriminator, for `ltr` its next-token head. `slots`: the slots with a fake other
    than the true token (masked-LM heads), or the tokens predicted (`ltr`)."""
    import numpy as np
    from keras import ops

    from keras_bert_app.evaluation import token_context as metrics
    from keras_bert_app.models.bert_pretrainer import BertPretrainer
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    tokenizer = BertTokenizer.from_preset(preset)
    vocabulary = tokenizer.get_vocabulary()
    specials = {name: vocabulary.index(name) for name in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
                if name in vocabulary}
    ids = np.concatenate([np.zeros(0, np.int32), *map(np.asarray, tokenizer(list(texts)).to_list())]).astype(np.int32)
    width = sequence_length - 2
    if len(ids) < width:
        raise ValueError(f"token_context: {len(ids)} tokens of text, fewer than one row of {width}.")
    body = ids[:min(len(ids) // width, max_rows) * width].reshape(-1, width)
    rows = np.pad(body, ((0, 0), (1, 0)), constant_values=specials["[CLS]"])
    rows = np.pad(rows, ((0, 0), (0, 1)), constant_values=specials["[SEP]"])

    def inputs(token_ids):
        return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": np.ones_like(token_ids)}

    if objective == "ltr":
        from keras_bert_app.models.left_to_right_pretrainer import LeftToRightPretrainer

        model = LeftToRightPretrainer.from_preset(preset)
        result = metrics.next_token_context(
            lambda token_ids: ops.convert_to_numpy(model(inputs(token_ids), training=False)["lm"]), rows)
        return {**result, "slots": int(rows[:, 1:-1].size)}
    positions, fakes = metrics.slots_and_fakes(rows, len(vocabulary), specials.values(), seed=seed)
    electra = objective == "electra"
    masked_lm = BertPretrainer.from_preset(pathlib.Path(preset) / "generator" if electra else preset)
    result = metrics.masked_lm_context(lambda token_ids, slots: ops.convert_to_numpy(masked_lm(
        {**inputs(token_ids), "mask_positions": slots}, training=False)["mlm"]), rows, positions, fakes,
        specials["[MASK]"])
    if electra:
        from keras_bert_app.models.electra_pretrainer import ElectraPretrainer

        pretrainer = ElectraPretrainer.from_preset(preset)
        result.update(metrics.discriminator_context(lambda token_ids: ops.convert_to_numpy(pretrainer.discriminator_head(
            pretrainer.discriminator(inputs(token_ids), training=False)["sequence_output"])), rows, positions, fakes))
    return {**result, "slots": int((fakes != np.take_along_axis(rows, positions, axis=1)).sum())}


def parameter_counts(objective: str | None, preset: pathlib.Path) -> dict[str, int]:
    """`encoder` (pooler included) and `pretrainer` (encoder, heads and, for ELECTRA, the generator) of a preset.

    `objective` None: the encoder alone.
    """
    import warnings

    from keras_bert_app.models.bert_encoder import BertEncoder

    encoder = BertEncoder.from_preset(preset)
    if objective is None:
        return {"encoder": int(encoder.count_params())}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*fresh weights.*")  # a preset without heads: counted all the same
        if objective == "electra":
            from keras_bert_app.models.electra_pretrainer import ElectraPretrainer

            pretrainer = ElectraPretrainer.from_preset(preset)
        elif objective == "ltr":
            from keras_bert_app.models.left_to_right_pretrainer import LeftToRightPretrainer

            pretrainer = LeftToRightPretrainer.from_preset(preset)
        else:
            from keras_bert_app.models.bert_pretrainer import BertPretrainer

            pretrainer = BertPretrainer.from_preset(preset, next_sentence_prediction=objective != "mlm")
    return {"encoder": int(encoder.count_params()), "pretrainer": int(pretrainer.count_params())}
