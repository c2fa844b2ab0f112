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


def plots(result, folder):
    """Markdown images of the result's plots that were collected (the command's own PNGs)."""
    return "".join(f"\n![{plot}](data/{result.folder}/{plot})\n" for plot in result.plots if (folder / plot).is_file())


def benchmarks(result, files, provenance, folder):
    data = files["bench.json"]
    settings = data["settings"]
    command = settings.get("command")
    command = " ".join(command) if isinstance(command, list) else command
    header = ["task", "batch", "implementation", "backend", "median step (s)", "tokens/s", "MFU (%)"]
    rows = [[row["task"], row["batch_size"], row["model"], row["backend"], _number(row["median_step_seconds"], 3),
             _number(row["tokens_per_second"], 1), _number(100 * row["mfu"], 1)] for row in data["rows"]]
    ratio_header = ["task", "batch", "ours on", "peer", "peer on", "peer time / ours"]
    ratios = [[r["task"], r["batch_size"], r["ours_backend"], r["peer"], r["peer_backend"], _number(r["ratio"], 2)]
              for r in data["ratios"]]
    versions = data["machine"].get("versions")
    return "\n\n".join([
        "# Benchmarks",
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
    header = ["data", "implementation", "whole process (s)", "train (s)", "dev accuracy", "time / ours"]
    rows = []
    for row in data["rows"]:
        if "error" in row:
            rows.append([row["dataset"], row["implementation"], f"failed: {row['error']}", "", "", ""])
            continue
        ratio = 1.0 if row["implementation"] == "ours" else data["ratios"].get(row["dataset"], {}).get(
            row["implementation"])
        rows.append([row["dataset"], row["implementation"], _number(row["seconds"], 1),
                     _number(row.get("train_seconds"), 1), _number(row["accuracy"], 4), _number(ratio, 2)])
    datasets = ",".join(dict.fromkeys(row["dataset"] for row in data["rows"]))
    implementations = ",".join(dict.fromkeys(row["implementation"] for row in data["rows"]))
    command = (f"keras-bert-app bench --task finetune --datasets {datasets} --implementations {implementations} "
               f"--train-size {settings['train_size']} --dev-size {settings['dev_size']} --epochs {settings['epochs']} "
               f"--batch-size {settings['batch_size']} --learning-rate {settings['learning_rate']}")
    return "\n\n".join([
        "# Fine-tuning parity",
        "The same checkpoint, data split, seed and recipe fine-tuned by ours, keras-hub and HF transformers, each "
        "implementation in a fresh process, timed from start to exit; the dev accuracy shows that they learn alike. "
        f"Checkpoint: `{'/'.join(pathlib.Path(settings['checkpoint']).parts[-2:])}`; {settings['train_size']} training and "
        f"{settings['dev_size']} dev examples, {settings['epochs']} epoch(s), batch {settings['batch_size']}, "
        f"learning rate {settings['learning_rate']}.",
        _provenance(result, provenance.get("command") or command, settings["machine"], settings.get("versions"),
                    provenance),
        _table(header, rows),
        *(["\n".join(f"- {note}" for note in data.get("notes", []))] if data.get("notes") else []),
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
        "The Chinese quickstart pretrained three times on the same reviews, vocabulary, initial weights and steps: "
        "masking characters (`token`), jieba words (`whole_word`) and 1-3 jieba words (`ngram`); each encoder is "
        "then fine-tuned on the same labeled reviews with the same seeds and probed on frozen features. Masked-LM "
        "accuracy is each masking's own task, so it does not compare across rows.",
        _provenance(result, provenance.get("command") or command, None, None, provenance),
        _table(header, rows),
    ]) + "\n"


def quickstart_command(settings):
    """The `keras-bert-app quickstart` line that reproduces a run, from its `quickstart.json`."""
    words = ["keras-bert-app quickstart"]
    for key, value in settings.items():
        if value is None or key in ("corpus",):
            continue
        words.append(f"--{key.replace('_', '-')} {value}")
    return " ".join(words)


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
    runtime = (f"Runtime: {data.get('runtime_seconds', 0) / 60:.0f} min over {len(data.get('call_seconds', []))} "
               f"call(s), on a machine shared with other work (load average at the end "
               f"{data.get('load_average', ['?'])[0]}).")
    return "\n\n".join([
        "# Objectives study",
        "BERT, its own ablations (Table 5: No NSP, left-to-right; Table 8: masking procedures) and its successors "
        "(RoBERTa-, ALBERT-style, ELECTRA) pretrained at equal FLOPs on one pipeline, each arm's rate tuned on its "
        "own held-out pretraining metric, replicated over pretraining and fine-tuning seeds. The task's files "
        f"(`task/train.csv`, `task/dev.csv`) are in `docs/results/data/{result.folder}/`.",
        _provenance(result, provenance.get("command") or command, data.get("machine"), data.get("versions"),
                    provenance),
        report.setup(data), "**Rules.** " + report.RULES,
        report.table(data), report.reading(data),
        "## The paper's directions at this scale", report.directions_table(data),
        "## Rate sweep: held-out pretraining metric at each rate (first pretraining seed)", report.sweep_table(data),
        runtime,
    ]) + "\n"
