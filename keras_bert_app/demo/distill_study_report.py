"""The distillation study's page: its table, and Turc et al.'s ordering checked by stated rules.

Rules, fixed before the run:
- Accuracy of an arm: mean and 95% t-interval over its seeds. Teacher and
  baselines (one run each): 95% Wilson interval over the dev articles.
- An arm "did not train" when its interval's upper end is not above the
  majority class's accuracy; it is not ranked.
- A is above B only when A's mean minus its half-width is above B's mean
  plus B's half-width (the intervals do not touch); below likewise; else
  the two are within the intervals: no order is shown.
- Turc et al.'s ordering (pretrained distillation > pretraining +
  fine-tuning > distillation > basic training, distillation on the transfer
  set) holds here when each neighbouring pair is above; it is contradicted
  when a pair is below; else it is not shown at this scale.
"""

import pathlib

from keras_bert_app.demo import distill_study_settings as s
from keras_bert_app.demo.objectives_study_report import mean_interval, proportion_interval

RULES = (
    "Accuracy: mean and 95% t-interval over the seeds (teacher and baselines, one run each: 95% Wilson interval over "
    "the dev articles). An arm whose interval's upper end is not above the majority class did not train and is not "
    "ranked. One figure is above another only when their intervals do not touch (the lower end of one above the "
    "upper end of the other); otherwise the two are within the intervals and no order is shown. Turc et al.'s "
    "ordering holds when every neighbouring pair of it is above, is contradicted when a pair is below, and is "
    "otherwise not shown at this scale.")


def arm_accuracy(results: dict, arm: str) -> tuple[float, float, int]:
    """Mean, 95% half-width and count of an arm's dev accuracy over its seeds."""
    values = [run["accuracy"] for run in results["runs"].values() if run["arm"] == arm]
    mean, half = mean_interval(values)
    return mean, half, len(values)


def trained(results: dict, arm: str) -> bool:
    mean, half, _ = arm_accuracy(results, arm)
    return mean + half > results["baselines"]["majority"]


def compare(first: tuple, second: tuple) -> str:
    """"above", "below" or "within" for two (mean, half-width) figures."""
    if first[0] - first[1] > second[0] + second[1]:
        return "above"
    if first[0] + first[1] < second[0] - second[1]:
        return "below"
    return "within"


def ordering(results: dict) -> tuple[str, list[tuple[str, str, str]]]:
    """Turc et al.'s ordering here: "holds", "contradicted" or "not shown", and each neighbouring pair's finding."""
    pairs = []
    for better, worse in zip(s.TURC_ORDER, s.TURC_ORDER[1:]):
        if not (trained(results, better) and trained(results, worse)):
            finding = "not ranked (an arm did not train)"
        else:
            finding = compare(arm_accuracy(results, better)[:2], arm_accuracy(results, worse)[:2])
        pairs.append((better, worse, finding))
    findings = [finding for _, _, finding in pairs]
    if "below" in findings:
        return "contradicted", pairs
    return ("holds" if all(finding == "above" for finding in findings) else "not shown"), pairs


def _cell(mean, half, digits=3):
    return f"{mean:.{digits}f} ± {half:.{digits}f}"


def _row(cells):
    return "| " + " | ".join(cells) + " |"


def table(results: dict) -> str:
    """Markdown: one row per arm, then the teacher and the baselines."""
    serving = results.get("serving", {})
    student, teacher = serving.get("student", {}), serving.get("teacher", {})
    speed = lambda figures: (f"{figures['latency_ms']:.1f}", f"{figures['texts_per_second']:.0f}") if figures \
        else ("-", "-")  # noqa: E731
    lines = [_row(["Row", "Turc et al.'s name", "Dev accuracy (95% CI)", "Seeds", "Parameters", "Updates",
                   "Latency, 1 text (ms)", "Throughput, batch 32 (texts/s)"]),
             _row(["---"] * 8)]
    for name, arm in s.ARMS.items():
        mean, half, count = arm_accuracy(results, name)
        runs = [run for run in results["runs"].values() if run["arm"] == name]
        accuracy = _cell(mean, half) + ("" if trained(results, name) else " (did not train)")
        lines.append(_row([arm.title, arm.turc, accuracy, str(count), f"{runs[0]['parameters']:,}",
                           str(runs[0]["updates"]), *speed(student)]))
    dev_size = results["baselines"]["dev_size"]
    teacher_accuracy = results["teacher"]["accuracy"]
    lines.append(_row(["Teacher: MiniLM-L6 fine-tuned", "-", _cell(teacher_accuracy, proportion_interval(
        teacher_accuracy, dev_size)), "1", f"{results['teacher']['parameters']:,}", "-", *speed(teacher)]))
    for key, title in (("majority", "Majority class"), ("bag_of_words", "Bag of words (logistic regression)"),
                       ("surface", "Surface features (length, punctuation, casing, digits)")):
        if key not in results["baselines"]:
            continue
        value = results["baselines"][key]
        lines.append(_row([title, "-", _cell(value, proportion_interval(value, dev_size)), "-", "-", "-", "-", "-"]))
    return "\n".join(lines)


def reading(results: dict) -> str:
    """The opening paragraph: Turc et al.'s ordering here, with the figures it rests on."""
    verdict, pairs = ordering(results)
    figures = "; ".join(f"{s.ARMS[name].turc} {_cell(*arm_accuracy(results, name)[:2])}" for name in s.TURC_ORDER)
    words = {"holds": "holds here", "contradicted": "is contradicted here",
             "not shown": "is not shown at this scale"}[verdict]
    detail = ", ".join(f"{s.ARMS[better].turc} vs {s.ARMS[worse].turc}: {finding}" for better, worse, finding in pairs)
    pre = results["pretraining"]
    words_figure = results["baselines"]["bag_of_words"]
    words_figure = (words_figure, proportion_interval(words_figure, results["baselines"]["dev_size"]))
    against = {name: compare(arm_accuracy(results, name)[:2], words_figure) for name in s.ARMS}
    above = [s.ARMS[name].title for name, finding in against.items() if finding == "above"]
    below = [s.ARMS[name].title for name, finding in against.items() if finding == "below"]
    baseline = (f"Above the bag of words by the same rule: {', '.join(above) if above else 'no student'}; below it: "
                f"{', '.join(below) if below else 'none'}.")
    return (f"Turc et al.'s ordering (pretrained distillation > pretraining + fine-tuning > distillation > basic "
            f"training) {words}: dev accuracy {figures} ({detail}). The teacher scores "
            f"{results['teacher']['accuracy']:.3f}, a bag of words {results['baselines']['bag_of_words']:.3f}. "
            f"{baseline} "
            f"The student's pretraining is what this scale cuts most: {pre['steps']} masked-LM steps of "
            f"{pre['batch_size']} sequences (final masked-LM accuracy {pre['final'].get('mlm_accuracy', float('nan')):.3f}), "
            "a sliver of the pretraining of Turc et al.'s miniatures; read the pretrained rows as those of this "
            "budget, not as a test of pretraining itself.")


def transfer_effect(results: dict) -> str:
    """What the transfer set changes, by the same rule, for each distilled student."""
    lines = []
    for without, with_transfer in (("distill", "distill_transfer"), ("pretrained_distill", "pretrained_distill_transfer")):
        first, second = arm_accuracy(results, with_transfer), arm_accuracy(results, without)
        lines.append(f"- {s.ARMS[with_transfer].title}: {_cell(*first[:2])} against {_cell(*second[:2])} without "
                     f"the transfer set: {compare(first[:2], second[:2])}.")
    return "\n".join(lines)


def settings_text(results: dict) -> str:
    """How the study was set up: sizes, data, every fixed hyperparameter and where it comes from."""
    task, pre = results["task"], results["pretraining"]
    return (
        f"Data: the quickstart's BBC News split (topics: 5 classes); {task['train']} labelled training articles, "
        f"{task['unlabeled']} other training articles as the unlabelled transfer set, {task['dev']} dev articles, each "
        f"cut to its first {s.WORDS} words and read at {results['settings']['sequence_length']} tokens. Student: "
        f"{results['settings']['student_size']} (layers x hidden size), the teacher's uncased vocabulary. Teacher: "
        f"all-MiniLM-L6-v2 fine-tuned on the labelled articles ({s.TEACHER_EPOCHS} epochs, batch "
        f"{s.TEACHER_BATCH_SIZE}, rate {s.TEACHER_LEARNING_RATE:g}, the distillation must-show's recipe). "
        f"Pretraining of the student: masked LM on the quickstart's corpus (the training articles; full sentences, "
        f"masked anew at every step), {pre['steps']} steps of {pre['batch_size']} at rate {pre['learning_rate']:g} "
        f"(final masked-LM accuracy {pre['final'].get('mlm_accuracy', float('nan')):.3f}), one pretraining "
        f"(seed {s.PRETRAIN_SEED}) shared by the seeds. Every student: `distill`, batch {s.BATCH_SIZE}, rate "
        f"{s.LEARNING_RATE:g}, temperature {s.TEMPERATURE:g}, hard-label weight {s.HARD_LABEL_WEIGHT:g} when "
        f"distilled (1: labels alone), the same number of updates with or without the transfer set "
        f"({s.TRANSFER_EPOCHS} passes over labelled + transfer texts). Seeds {results.get('seeds')}: the student's "
        "head, dropout and data order, and for a random student every weight. Every value was fixed before the run "
        "(the teacher's recipe from the must-show, the rates the quickstart's, the temperature and weight `distill`'s "
        "defaults); none was tuned on the dev articles this page reports. Serving: the SavedModels "
        "(`export_for_serving`) of the teacher and of the first seed's student of the last row, median of "
        f"{s.SERVING_CALLS} calls alternated between them; every row is the same network, so it shares the "
        "student's figures. (The ONNX export runs through onnxruntime, which the study's environment did not have.)")


def write_report(path: pathlib.Path, results: dict) -> pathlib.Path:
    """`report.md`: the page's text."""
    path.write_text(page(results), encoding="utf-8")
    return path


def page(results: dict) -> str:
    runtime = results.get("runtime_seconds")
    minutes = "unfinished" if runtime is None else f"{runtime / 60:.0f} min over {len(results['call_seconds'])} call(s)"
    return "\n\n".join([
        "# Distillation study",
        reading(results),
        table(results),
        "The transfer set:\n\n" + transfer_effect(results),
        "Rules: " + RULES,
        settings_text(results),
        f"Runtime: {minutes}, on 2 CPU cores shared with other work (load average at the end "
        f"{results.get('load_average', ['?'])[0]}). Latency and throughput were taken on that loaded machine: "
        "their ratio, measured in the same run, is the figure to read.",
    ]) + "\n"
