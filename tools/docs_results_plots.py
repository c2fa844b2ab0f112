"""Plots of the results that their commands do not draw themselves (bench), made from the same JSON.

Written next to the generated pages (docs/results/plots/), never committed.
"""

import io


def _figure_bytes(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return buffer.getvalue()


def bar_chart(title, groups, series, values, unit):
    """PNG bytes: one group of bars per `groups` entry, one bar per `series`; values[(group, series)] or missing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(9, 0.45 * len(groups) * max(1, len(series)) / 2 + 1.5))
    height = 0.8 / max(1, len(series))
    for index, name in enumerate(series):
        positions = [row + index * height for row in range(len(groups))]
        axes.barh(positions, [values.get((group, name), 0.0) for group in groups], height=height, label=name)
    axes.set_yticks([row + 0.4 - height / 2 for row in range(len(groups))], groups)
    axes.invert_yaxis()
    axes.set_xlabel(unit)
    axes.set_title(title)
    axes.legend(fontsize="small")
    data = _figure_bytes(figure)
    plt.close(figure)
    return data


def benchmarks(data):
    rows = data["rows"]
    groups = list(dict.fromkeys(f"{row['task']}, batch {row['batch_size']}" for row in rows))
    series = list(dict.fromkeys(f"{row['model']} ({row['backend']})" for row in rows))
    values = {(f"{row['task']}, batch {row['batch_size']}", f"{row['model']} ({row['backend']})"):
              row["median_step_seconds"] for row in rows}
    return bar_chart("Median step time (lower is faster)", groups, series, values, "seconds")


def finetune_parity(data):
    rows = [row for row in data["rows"] if "error" not in row]
    groups = list(dict.fromkeys(row["dataset"] for row in rows))
    counts, values = {}, {}
    for row in rows:  # an implementation run more than once: one bar per run, labelled as the table's runs
        key = (row["dataset"], row["implementation"])
        counts[key] = counts.get(key, 0) + 1
        repeated = sum(1 for other in rows if (other["dataset"], other["implementation"]) == key) > 1
        label = f"{row['implementation']} (run {counts[key]})" if repeated else row["implementation"]
        values[(row["dataset"], label)] = row["seconds"]
    series = list(dict.fromkeys(label for _, label in values))
    return bar_chart("Whole fine-tuning process (lower is faster)", groups, series, values, "seconds")


PLOTS = {"benchmarks": ("bench.json", benchmarks), "finetune-parity": ("bench_finetune.json", finetune_parity)}
