"""The results pages, rendered from the checked JSON of `docs_results.RESULTS`.

One current table per result, with the command, machine and versions that
made it beside the table, and the command's plots embedded. Every figure in
a table is read from the JSON here; nothing is typed in by hand.
"""

import pathlib
import re
import statistics

import docs_results as results_data


def _number(value, digits):
    return "-" if value is None else f"{value:,.{digits}f}"


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _split_table(markdown, *columns):
    """A markdown table as several, each with the first column and the given column indices: a table too wide
    for the page's column becomes narrower ones that read side by side by their first column."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split(" | ")] for line in markdown.strip().splitlines()]
    header, body = rows[0], [row for row in rows[2:]]
    return "\n\n".join(_table([header[0]] + [header[i] for i in part], [[row[0]] + [row[i] for i in part]
                                                                         for row in body]) for part in columns)


def _versions_line(versions):
    return ", ".join(f"{name} {version}" for name, version in sorted(versions.items())) or "not recorded"


def _provenance(result, command, machine, versions, provenance):
    """The lines saying what made the table: the command, the machine and the package versions."""
    lines = [f"Generated from `docs/results/data/{result.folder}/` by `python tools/build_docs.py`.", ""]
    collected = " (recorded by `tools/build_docs.py collect` where the run was collected)"
    if command is None and provenance.get("command"):
        command = provenance["command"]
    lines.append(f"- **Command:** `{command}`" if command else f"- **Command:** `{result.command}` (its options: below)")
    if machine is None and provenance.get("collected_machine"):
        machine, machine_note = provenance["collected_machine"], collected
    else:
        machine_note = ""
    if isinstance(machine, dict):
        machine = ", ".join(f"{key} {value}" for key, value in machine.items() if key != "versions" and
                            not isinstance(value, (dict, list)))
    lines.append(f"- **Machine:** {machine or 'not recorded'}{machine_note}")
    if versions is None and provenance.get("collected_versions"):
        lines.append(f"- **Versions:** {_versions_line(provenance['collected_versions'])}{collected}")
    else:
        lines.append(f"- **Versions:** {_versions_line(versions or {})}")
    return "\n".join(lines)


def user_command(words, output):
    """A recorded command line as the user types it: `keras-bert-app bench ...`, its output file named plainly.

    A run started through the script behind the command (`tools/benchmark.py`) is the same as
    `keras-bert-app bench` with the same options; a temporary output path becomes `output`.
    """
    words = list(words.split() if isinstance(words, str) else words)
    if words and words[0].endswith("benchmark.py"):
        words[:1] = ["keras-bert-app", "bench"]
    for index, word in enumerate(words[:-1]):
        if word == "--output":
            words[index + 1] = output
        elif word == "--workdir":  # a scratch folder of the run's own choosing
            words[index + 1] = "bench_work"
    return " ".join(words)


def plots(result, folder):
    """Markdown images of the result's plots that were collected (the command's own PNGs)."""
    return "".join(f"\n![{plot}](data/{result.folder}/{plot})\n" for plot in result.plots if (folder / plot).is_file())


def benchmark_findings(data):
    """Two or three sentences on the same-backend comparisons of `bench.json`, including where ours loses."""
    ours = {(row["task"], row["batch_size"], row["backend"]): row["median_step_seconds"]
            for row in data["rows"] if row["model"] == "ours"}
    pairs = [(row, ours[key]) for row in data["rows"] if row["model"] != "ours"
             and (key := (row["task"], row["batch_size"], row["backend"])) in ours]
    if not pairs:
        return ""
    ratios = [(row["median_step_seconds"] / seconds, row) for row, seconds in pairs]
    faster = sum(ratio > 1 for ratio, _ in ratios)
    best, worst = max(ratios, key=lambda item: item[0]), min(ratios, key=lambda item: item[0])

    def where(item):
        ratio, row = item
        return (f"{row['task']} at batch {row['batch_size']} on {row['backend']} against {row['model']} "
                f"({ratio:.2f}x: {row['median_step_seconds']:.3f} s against ours "
                f"{row['median_step_seconds'] / ratio:.3f} s)")

    text = (f"On the same backend, ours takes less time per step than the peer in {faster} of {len(ratios)} "
            f"comparisons. Its largest lead is {where(best)}.")
    if worst[0] < 1:
        text += f" It is slowest, relatively, in {where(worst)}."
    return text


def benchmarks(result, files, provenance, folder):
    data = files["bench.json"]
    settings = data["settings"]
    command = settings.get("command")
    command = user_command(command, "bench.json") if command else None
    header = ["task", "batch", "implementation", "backend", "median step (s)", "tokens/s", "MFU (%)"]
    rows = [[row["task"], row["batch_size"], row["model"], row["backend"], _number(row["median_step_seconds"], 3),
             _number(row["tokens_per_second"], 1), _number(100 * row["mfu"], 1)] for row in data["rows"]]
    ratio_header = ["task", "batch", "ours on", "peer", "peer on", "peer time / ours"]
    ratios = [[r["task"], r["batch_size"], r["ours_backend"], r["peer"], r["peer_backend"], _number(r["ratio"], 2)]
              for r in data["ratios"]]
    versions = data["machine"].get("versions")
    return "\n\n".join([
        "# Benchmarks",
        benchmark_findings(data),
        f"`{results_data.RESULTS['benchmarks'].command}` times a pretraining step (masked LM + next sentence, AdamW) "
        f"and the encoder's forward pass of `{settings['preset']}` at {settings['sequence_length']} tokens, for ours "
        "on each backend, keras-hub and HF transformers, each in its own process. A ratio above 1 means ours is faster.",
        _provenance(result, command, data["machine"], versions, provenance),
        "## Step times", _table(header, rows),
        "## Ours against each peer", _table(ratio_header, ratios),
        *(["## Notes", "\n".join(f"- {note}" for note in data.get("notes", []))] if data.get("notes") else []),
    ]) + "\n"


def finetune_parity(result, files, provenance, folder):
    data = files["bench_finetune.json"]
    settings = data["settings"]
    header = ["data", "implementation", "run", "whole process (s)", "train (s)", "dev accuracy", "time / ours"]
    rows, runs = [], {}
    for row in data["rows"]:
        key = (row["dataset"], row["implementation"])
        runs[key] = runs.get(key, 0) + 1
        if "error" in row:
            rows.append([row["dataset"], row["implementation"], runs[key], f"failed: {row['error']}", "", "", ""])
            continue
        ratio = 1.0 if row["implementation"] == "ours" else data["ratios"].get(row["dataset"], {}).get(
            row["implementation"])
        rows.append([row["dataset"], row["implementation"], runs[key], _number(row["seconds"], 1),
                     _number(row.get("train_seconds"), 1), _number(row["accuracy"], 4), _number(ratio, 2)])
    datasets = ",".join(dict.fromkeys(row["dataset"] for row in data["rows"]))
    implementations = ",".join(dict.fromkeys(row["implementation"] for row in data["rows"]))
    command = (f"keras-bert-app bench --task finetune --datasets {datasets} --implementations {implementations} "
               f"--train-size {settings['train_size']} --dev-size {settings['dev_size']} --epochs {settings['epochs']} "
               f"--batch-size {settings['batch_size']} --learning-rate {settings['learning_rate']}")
    return "\n\n".join([
        "# Fine-tuning parity",
        finetune_findings(data),
        "The same checkpoint, data split, seed and recipe fine-tuned by ours, keras-hub and HF transformers, each "
        "implementation in a fresh process, timed from start to exit. An implementation run twice is listed by run. "
        f"Checkpoint: `{'/'.join(pathlib.Path(settings['checkpoint']).parts[-2:])}`; {settings['train_size']} training and "
        f"{settings['dev_size']} dev examples, {settings['epochs']} epoch(s), batch {settings['batch_size']}, "
        f"learning rate {settings['learning_rate']}.",
        _provenance(result, provenance.get("command") or command, settings["machine"], settings.get("versions"),
                    provenance),
        _table(header, rows),
        *([repeats] if (repeats := finetune_repeats(data)) else []),
    ]) + "\n"


def finetune_repeats(data):
    """How far an implementation's repeated runs lie apart: the noise to read the time ratios against."""
    seconds = {}
    for row in data["rows"]:
        if "error" not in row:
            seconds.setdefault((row["dataset"], row["implementation"]), []).append(row["seconds"])
    spreads = [f"{name} on {dataset}: {', '.join(f'{value:.1f}' for value in values)} s"
               for (dataset, name), values in seconds.items() if len(values) > 1]
    if not spreads:
        return ""
    return ("Repeated runs show the timing noise (whole process, start to exit): "
            + "; ".join(spreads) + ". Ratios within that spread are ties.")


def finetune_findings(data):
    """Per dataset: ours' dev accuracy and time against each peer's (means over repeated runs), from the JSON."""
    sentences = []
    for dataset in dict.fromkeys(row["dataset"] for row in data["rows"]):
        done = [row for row in data["rows"] if row["dataset"] == dataset and "error" not in row]
        by_implementation = {}
        for row in done:
            by_implementation.setdefault(row["implementation"], []).append(row)
        if "ours" not in by_implementation:
            continue
        ours = statistics.mean(row["accuracy"] for row in by_implementation["ours"])
        parts = []
        for name, rows in by_implementation.items():
            if name == "ours":
                continue
            accuracy = statistics.mean(row["accuracy"] for row in rows)
            ratio = data["ratios"].get(dataset, {}).get(name)
            relation = "below" if ours < accuracy else "above" if ours > accuracy else "equal to"
            timing = "" if ratio is None else (
                f", in {ratio:.2f} of our time" if ratio < 1 else f", taking {ratio:.2f} times our time")
            parts.append(f"{relation} {name}'s {accuracy:.4f}{timing}")
        if parts:
            sentences.append(f"On {dataset}, ours reaches {ours:.4f} dev accuracy: " + "; ".join(parts) + ".")
    lower = [row["implementation"] for row in data["rows"] if "error" not in row and row["implementation"] != "ours"
             and row["accuracy"] > max((r["accuracy"] for r in data["rows"] if r.get("implementation") == "ours"
                                        and "error" not in r), default=1.0)]
    if lower:
        sentences.append("The same recipe does not give the same accuracy here: "
                         f"{', '.join(dict.fromkeys(lower))} score higher than ours on this split.")
    return " ".join(sentences)


def serving(result, files, provenance, folder):
    """`bench --task serving`: the rows, the ratios the issue asks for, and where the time goes."""
    data = files["bench_serving.json"]
    measured = {row["row"]: row for row in data["rows"] if "error" not in row}
    header = ["row", "what", "short p50 (ms)", "short p99 (ms)", "long p50 (ms)", "long p99 (ms)",
              "batch 32 (texts/s)", "peak memory (MiB)", "dev accuracy"]
    rows = []
    for row in data["rows"]:
        if "error" in row:
            rows.append([row["row"], row["description"], f"failed: {row['error']}", "", "", "", "", "", ""])
            continue
        rows.append([row["row"], row["description"], _number(row["short_p50_ms"], 1), _number(row["short_p99_ms"], 1),
                     _number(row["long_p50_ms"], 1), _number(row["long_p99_ms"], 1),
                     _number(row["batch32_texts_per_second"], 1), _number(row["peak_memory_mib"], 0),
                     _number(row["dev_accuracy"], 3)])
    ratio_header = ["row", "peer", "short p50: peer / row", "long p50: peer / row", "batch 32: row / peer"]
    ratio_rows = [[row, peer, _number(values["short_p50"], 2), _number(values["long_p50"], 2),
                   _number(values["batch32"], 2)]
                  for peer, by_row in data["ratios"].items() for row, values in by_row.items() if row != peer]
    lines = []
    if {"onnx_ids", "onnx_text", "hf_onnx"} <= set(measured):
        hf = measured["hf_onnx"]["short_p50_ms"]
        lines.append(f"- Short request, p50: our ONNX on ONNX Runtime {measured['onnx_ids']['short_p50_ms']:.1f} ms "
                     f"(ids in) and {measured['onnx_text']['short_p50_ms']:.1f} ms (raw strings in), HF's ONNX path "
                     f"{hf:.1f} ms.")
    if {"savedmodel_text", "onnx_text"} <= set(measured):
        ratio = measured["savedmodel_text"]["short_p50_ms"] / measured["onnx_text"]["short_p50_ms"]
        lines.append(f"- The SavedModel on TensorFlow takes {ratio:.2f}x the time of the raw-string ONNX model on "
                     "ONNX Runtime for the short request.")
    if measured:
        fastest = min(measured.values(), key=lambda row: row["short_p50_ms"])
        accuracies = [row["dev_accuracy"] for row in measured.values()]
        lines.append(f"- Fastest row at the short request: {fastest['row']}. Dev accuracy spans "
                     f"{min(accuracies):.3f} to {max(accuracies):.3f} over {data['dev_size']} headlines.")
    return "\n\n".join([
        "# Serving",
        f"One classifier, {data['model']}, served {len(data['rows'])} ways by `{result.command}`, each row in its "
        f"own process: the latency of one short ({data['short_words']} words) and one long ({data['long_words']} "
        f"words) request, tokenization included (p50/p99), throughput at batch 32, the process's peak memory and "
        f"the accuracy on {data['dev_size']} dev headlines. Every row serves the same weights at sequence length "
        f"{data['sequence_length']}.",
        _provenance(result, user_command(data["command"], "bench_serving.json"), data["machine"], data["versions"],
                    provenance),
        f"- **Note:** {data['machine']['note']}",
        "## Rows", _split_table(_table(header, rows), (1,), (2, 3, 4, 5), (6, 7, 8)),
        "## Ratios", "Above 1: the row is faster than the peer.", _table(ratio_header, ratio_rows),
        *(["## Read from the table", "\n".join(lines)] if lines else []),
    ]) + "\n"


def _mean_std(values):
    values = [value for value in values if value is not None]
    if not values:
        return "-", "-"
    return _number(statistics.mean(values), 4), _number(statistics.stdev(values) if len(values) > 1 else 0.0, 4)


def _seed_runs(stages, prefix):
    """The dev accuracies of the stages `prefix`, `prefix_seed1`, ... in seed order."""
    keys = sorted((key for key in stages if re.fullmatch(rf"{prefix}(_seed\d+)?", key)),
                  key=lambda key: int(key.rsplit("seed", 1)[1]) if "_seed" in key else -1)
    return [stages[key]["dev_accuracy"] for key in keys]


def chinese_masking(result, files, provenance, folder):
    arms = {}
    for name, data in files.items():
        arm, _, stage = name.partition("/")
        arms.setdefault(arm, {})[pathlib.Path(stage).stem] = data
    for arm in arms:  # the other fine-tuning seeds' stages, when collected
        for path in sorted((folder / arm / "stages").glob("finetune_*_seed*.json")):
            arms[arm][path.stem] = results_data.load(path, result.command, ("dev_accuracy",))
    header = ["encoder", "fine-tuned dev accuracy (mean)", "std", "per seed", "frozen [CLS]", "frozen mean",
              "masked-LM accuracy (own task)", "pretraining (s)"]
    split = 4  # two tables, so each fits the page: fine-tuning, then the probes and pretraining
    rows = []
    for arm in ("token", "whole_word", "ngram"):
        stages = arms[arm]
        accuracies = _seed_runs(stages, "finetune_pretrained")
        rows.append([f"{arm} masking", *_mean_std(accuracies), ", ".join(_number(a, 4) for a in accuracies),
                     _number(stages["features"]["pretrained_cls"], 4), _number(stages["features"]["pretrained_mean"], 4),
                     _number(stages["pretrain"]["final"]["mlm_accuracy"], 4), _number(stages["pretrain"]["seconds"], 0)])
    random = arms["whole_word"]
    accuracies = _seed_runs(random, "finetune_random")
    rows.append(["random (no pretraining)", *_mean_std(accuracies), ", ".join(_number(a, 4) for a in accuracies),
                 _number(random["features"]["random_cls"], 4), _number(random["features"]["random_mean"], 4), "-", "-"])
    settings = arms["whole_word"]["quickstart"]
    command = f"python tools/chinese_masking_study.py --steps {settings['steps']} --seed {settings['seed']}"
    if settings.get("max_articles"):
        command += f" --max-reviews {settings['max_articles']}"
    return "\n\n".join([
        "# Chinese masking study",
        chinese_findings(rows),
        "The Chinese quickstart pretrained three times on the same reviews, vocabulary, initial weights and steps: "
        "masking characters (`token`), jieba words (`whole_word`) and 1-3 jieba words (`ngram`); each encoder is "
        "then fine-tuned on the same labeled reviews with the same seeds and probed on frozen features. Masked-LM "
        "accuracy is each masking's own task, so it does not compare across rows.",
        _provenance(result, provenance.get("command") or command, None, None, provenance),
        "## Fine-tuned", _table(header[:split], [row[:split] for row in rows]),
        "## Frozen features and pretraining", _table(header[:1] + header[split:], [row[:1] + row[split:] for row in rows]),
    ]) + "\n"


def chinese_findings(rows):
    """The best masking's fine-tuned mean against the random encoder's, in units of their spread."""
    numbers = [(row[0], float(row[1]), float(row[2])) for row in rows if row[1] != "-"]
    *arms, random = numbers
    best = max(arms, key=lambda arm: arm[1])
    worst = min(arms, key=lambda arm: arm[1])
    gap = best[1] - random[1]
    spread = max(best[2], random[2])
    verdict = (f"{abs(gap) / spread:.1f} times the larger seed standard deviation ({spread:.4f}): "
               + ("a clear difference" if abs(gap) > 2 * spread else "with three seeds, not a clear difference"))
    return (f"Fine-tuned, {best[0]} scores best ({best[1]:.4f} mean dev accuracy) and {worst[0]} worst "
            f"({worst[1]:.4f}); the encoder without pretraining scores {random[1]:.4f}. The best masking's lead over "
            f"it, {gap:+.4f}, is {verdict}.")


def quickstart_command(settings):
    """The `keras-bert-app quickstart` line that reproduces a run, from its `quickstart.json`."""
    words = ["keras-bert-app quickstart"]
    for key, value in settings.items():
        if value is None or key in ("corpus",):
            continue
        words.append(f"--{key.replace('_', '-')} {value}")
    return " ".join(words)


def quickstart_findings(tuned, random, features):
    """What the quickstart's numbers say, the bag-of-words baseline included, from its stage files."""
    gain = tuned["dev_accuracy"] - random["dev_accuracy"]
    text = (f"Pretraining {'helps' if gain > 0 else 'does not help'}: fine-tuned from the pretrained encoder, the "
            f"classifier scores {tuned['dev_accuracy']:.4f} dev accuracy against {random['dev_accuracy']:.4f} from "
            f"random weights, and its frozen [CLS] features {features['pretrained_cls']:.4f} against "
            f"{features['random_cls']:.4f}.")
    counts = features.get("token_counts")
    if counts is not None:
        best = max(tuned["dev_accuracy"], features["pretrained_cls"], features["pretrained_mean"])
        if counts > best:
            text += (f" A bag of words still wins: a logistic regression on token counts scores {counts:.4f}, above "
                     "every encoder here: at this size the pretrained encoder has not caught up with word counts "
                     "on topic classification.")
        else:
            text += f" It is ahead of a logistic regression on token counts ({counts:.4f})."
    return text


def quickstart(result, files, provenance, folder):
    settings = files["quickstart.json"]
    pretrain = files["stages/pretrain.json"]
    tuned = files["stages/finetune_pretrained.json"]
    random = files["stages/finetune_random.json"]
    features = files["stages/features.json"]
    final = pretrain["final"]
    comparison = _table(
        ["measure", "pretrained encoder", "random encoder"],
        [["fine-tuned dev accuracy", _number(tuned["dev_accuracy"], 4), _number(random["dev_accuracy"], 4)],
         ["frozen [CLS] + logistic regression", _number(features["pretrained_cls"], 4),
          _number(features["random_cls"], 4)],
         ["frozen mean of tokens + logistic regression", _number(features["pretrained_mean"], 4),
          _number(features["random_mean"], 4)]])
    pretraining = _table(
        ["end of pretraining", "value"],
        [[name.replace("_", " "), _number(final[name], 4)] for name in ("mlm_accuracy", "nsp_accuracy", "loss")
         if name in final])
    stages = {path.stem: results_data.load(path, result.command) for path in sorted((folder / "stages").glob("*.json"))}
    stage_rows = [[name, _number(data["seconds"], 1)] for name, data in stages.items() if "seconds" in data]
    baseline = (f"A logistic regression on token counts (no encoder) scores {_number(features['token_counts'], 4)} "
                "on the same dev articles." if "token_counts" in features else "")
    return "\n\n".join([
        "# Quickstart",
        quickstart_findings(tuned, random, features),
        "`keras-bert-app quickstart`: the paper at small scale on BBC News. A topic classifier fine-tuned on "
        f"{tuned['train_examples']} labeled articles and scored on {tuned['dev_examples']} dev articles, once from the "
        "pretrained encoder and once from the weights pretraining started from; then the feature-based comparison "
        "of the paper's section 5.3 on each encoder's frozen features.",
        _provenance(result, provenance.get("command") or quickstart_command(settings), None, None, provenance),
        "## Pretrained against random", comparison, baseline,
        "## Pretraining", pretraining,
        "## Time per stage", _table(["stage", "seconds"], stage_rows),
    ]) + "\n"


def objectives_study(result, files, provenance, folder):
    from keras_bert_app.demo import objectives_study_report as report
    from keras_bert_app.demo.objectives_study_settings import STUDY_VERSION

    data = files["results.json"]
    settings = data["settings"]
    if settings.get("version") != STUDY_VERSION:  # the first version's findings do not hold: no figures from it
        return "\n\n".join([
            "# Objectives study",
            f"The committed run is of the study's version {settings.get('version', 1)}; this is version "
            f"{STUDY_VERSION}. That version's findings are withdrawn, not shown: its sentence-order records leaked "
            "their label through where each segment was cut, its word-order task could be solved by a surface rule "
            "(terminal punctuation), its arms ran at rates not tuned alike (ELECTRA's discriminator did not train), "
            "and each arm had one pretraining run. Run `keras-bert-app study objectives` and collect it "
            "(`python tools/build_docs.py collect objectives-study runs/objectives_study`) for this version's page.",
            _provenance(result, provenance.get("command"), None, None, provenance),
        ]) + "\n"
    if not data.get("selected") or not data.get("finetune") or not report.finetuned(data, "random"):
        raise results_data.ResultsError(f"docs/results/data/{result.folder}/results.json: an unfinished study "
                                        "(no fine-tuned random encoder); run it to the end and collect it again")
    command = data.get("command") or (
        f"keras-bert-app study objectives --budget-steps {settings['budget_steps']} --learning-rates "
        f"{','.join(f'{rate:g}' for rate in settings['learning_rates'])} --pretraining-seeds "
        f"{','.join(map(str, report.pretraining_seeds(data)))}")
    runtime = report.runtime_sentence(data)
    return "\n\n".join([
        "# Objectives study",
        report.reading(data),
        "BERT, its own ablations (Table 5: No NSP, left-to-right; Table 8: masking procedures) and its successors "
        "(RoBERTa-, ALBERT-style, ELECTRA) pretrained at equal FLOPs on one pipeline, each arm's rate tuned on its "
        "own held-out pretraining metric, replicated over pretraining and fine-tuning seeds. The task's files "
        f"(`task/train.csv`, `task/dev.csv`) are in `docs/results/data/{result.folder}/`.",
        _provenance(result, provenance.get("command") or command, data.get("machine"), data.get("versions"),
                    provenance),
        report.setup(data), "**Rules.** " + report.RULES,
        _split_table(report.table(data), (1, 2, 3, 4), (5, 6, 7, 8)),
        "## The paper's directions at this scale", report.directions_table(data),
        "## Rate sweep: held-out pretraining metric at each rate (first pretraining seed)", report.sweep_table(data),
        runtime,
    ]) + "\n"


DISTILLATION_ARMS = {
    "distilled_transfer": "distilled, with the transfer set",
    "distilled": "distilled, labelled set only",
    "labels_only": "the teacher's layers fine-tuned on the labels alone (hard-label weight 1)",
    "labels_only_pretrained": "the pretrained MiniLM's layers (no teacher) fine-tuned on the labels alone",
}
DISTILLATION_BASELINES = {  # results key -> the baseline it compares the distilled student with
    "transfer_minus_labels_only": "the same student (the teacher's layers) fine-tuned on the labels alone",
    "transfer_minus_labels_only_pretrained": "the pretrained MiniLM's layers fine-tuned on the labels alone",
}


def _interval(summary, digits, scale=1.0):
    """"mean ± half width" of a `tools/distillation_must_show.py` interval (the 95% t-interval over seeds)."""
    half = summary.get("half_width")
    text = _number(scale * summary["mean"], digits)
    return text if half is None else f"{text} ± {_number(scale * half, digits)}"


def distillation(result, files, provenance, folder):
    data = files["results.json"]
    settings, teacher, serving = data["settings"], data["teacher"], data["serving"]
    layers = ",".join(map(str, settings["student_layers"]))
    header = ["model", "parameters", "dev accuracy (mean ± 95% interval)", "per seed",
              "% of the teacher's accuracy", "gap to the teacher (points)", "train (s, mean)"]
    rows = [["teacher (MiniLM-L6, fine-tuned)", f"{teacher['parameters']:,}", _number(teacher["accuracy"], 4), "-",
             "100.0", "-", _number(teacher["train_seconds"], 0)]]
    for arm, summary in data["arms"].items():
        rows.append([f"student {layers}: {DISTILLATION_ARMS.get(arm, arm)}", _number(summary["parameters"], 0),
                     _interval(summary["accuracy_interval"], 4), ", ".join(_number(a, 4) for a in summary["accuracy"]),
                     _interval(summary["retention"], 1, 100), _interval(summary["gap_to_teacher"], 1, 100),
                     _number(statistics.mean(summary["train_seconds"]), 0)])
    serving_rows = [[name, _number(serving[name]["median_call_seconds"] * 1e3, 1),
                     _number(serving[name]["examples_per_second"], 1)] for name in ("teacher", "student")]
    loads = [values[0] for values in data["machine"]["load_average_before_runs"].values()]
    retention = data["arms"]["distilled_transfer"]["retention"]
    reading = [
        f"The distilled student keeps {_interval(retention, 1, 100)}% of the teacher's dev accuracy "
        f"({'at least' if retention['mean'] >= 0.97 else 'less than'} 97% on average).",
        f"It serves {serving['speedup']:.2f}x the teacher's examples per second at batch 32 "
        f"({'at least' if serving['speedup'] >= 1.8 else 'less than'} 1.8x)"
        + (": more than its share of the teacher's layers explains, so read it as measured under the machine's "
           "contention, an upper estimate." if serving["speedup"] > 2 else "."),
    ]
    for key, baseline in DISTILLATION_BASELINES.items():
        beats = data.get(key)
        if not beats:
            continue
        low = beats["mean"] - (beats["half_width"] or 0.0)
        reading.append(
            f"Against {baseline}, seed by seed: {_interval(beats, 1, 100)} points of accuracy "
            + ("(the interval is above 0: distillation with the transfer set wins)." if low > 0 else
               "(the interval reaches 0: the difference is within the seeds' spread)." if beats["mean"] > 0 else
               "(the baseline is as good or better)."))
    return "\n\n".join([
        "# Distillation",
        f"A MiniLM-L6 teacher (all-MiniLM-L6-v2, fine-tuned) and a student of its layers {layers} (DistilBERT's "
        f"initialisation) on BBC News sentences labelled with their article's topic: {data['data']['train']:,} "
        f"labelled training sentences, {data['data']['unlabeled']:,} unlabelled ones from the same articles (the "
        f"transfer set), {data['data']['dev']:,} dev sentences from other articles. Every arm: "
        f"{settings['epochs']} epochs, batch {settings['batch_size']}, learning rate {settings['learning_rate']:g}, "
        f"sequence length {settings['sequence_length']}, temperature {settings['temperature']:g}, hard-label weight "
        f"{settings['hard_label_weight']:g}, fixed before any run; nothing was tuned on the dev set. One teacher "
        f"(seed 0); the students over {len(next(iter(data['arms'].values()))['accuracy'])} seeds. Intervals are 95% "
        "t-intervals over the seeds.",
        _provenance(result, provenance.get("command") or data["command"], data["machine"], data.get("versions"),
                    provenance),
        "The machine was shared: the 1-minute load average on its 2 cores was "
        f"{min(loads):.1f} to {max(loads):.1f} before the runs, so times are those of a loaded machine. The gap is "
        "the teacher's accuracy minus the student's.",
        _table(header, rows),
        "Serving: each model's SavedModel (`export_for_serving`, the same format, tokenization in the graph), "
        "batches of 32 dev sentences, calls alternated between the two in one process; the median call.",
        _table(["model", "median call (ms)", "examples/s"], serving_rows),
        "\n".join(f"- {line}" for line in reading),
    ]) + "\n"



def distillation_study(result, files, provenance, folder):
    from keras_bert_app.demo import distill_study_report as report

    data = files["results.json"]
    if not data.get("runs"):
        raise results_data.ResultsError(f"docs/results/data/{result.folder}/results.json: no student run; run the "
                                        "study to the end and collect it again")
    command = data.get("command") or (f"keras-bert-app study distill --pretrain-steps "
                                      f"{data['settings']['pretrain_steps']} --seeds {','.join(map(str, data['seeds']))}")
    table = report.table(data)  # too wide for the page's column: accuracy, then size and speed
    text = report.page(data).replace(table, _split_table(table, (1, 2, 3), (4, 5, 6, 7)))
    title, rest = text.split("\n\n", 1)
    reading, rest = rest.split("\n\n", 1)
    return "\n\n".join([title, reading, _provenance(result, command, None, None, provenance), rest.rstrip()]) + "\n"
