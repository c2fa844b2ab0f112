"""The GLUE metrics, as the GLUE benchmark computes them.

accuracy (SST-2, MNLI, QNLI, RTE, WNLI; with F1 for MRPC and QQP), F1 of the
positive class 1 (MRPC, QQP), Matthews correlation (CoLA), Pearson and
Spearman correlations (STS-B). Each is a few lines of numpy, checked against
scikit-learn's and scipy's in tests/evaluation/test_glue_metrics.py: fine-tuning
needs neither package (they are the `eval` extra's).
"""

import warnings

import numpy as np


def accuracy(labels, predictions):
    """Fraction of predictions equal to the labels."""
    labels, predictions = _pair(labels, predictions)
    return float(np.mean(labels == predictions))


def f1(labels, predictions):
    """F1 of the positive class (label 1), as GLUE reports for MRPC and QQP; 0 when it has no example."""
    labels, predictions = _pair(labels, predictions)
    true_positives = np.sum((predictions == 1) & (labels == 1))
    wrong = np.sum((predictions == 1) != (labels == 1))  # false positives + false negatives
    return float(2 * true_positives / (2 * true_positives + wrong)) if true_positives or wrong else 0.0


def matthews_correlation(labels, predictions):
    """Matthews correlation coefficient (CoLA; Gorodkin's form for K classes); 0 when a side is constant."""
    labels, predictions = _pair(labels, predictions)
    _, codes = np.unique(np.concatenate([labels, predictions]), return_inverse=True)
    classes = codes.max() + 1
    confusion = np.zeros((classes, classes), dtype="float64")  # (gold class, predicted class)
    np.add.at(confusion, (codes[: labels.size], codes[labels.size :]), 1)
    total, correct = confusion.sum(), np.trace(confusion)
    gold, predicted = confusion.sum(axis=1), confusion.sum(axis=0)
    denominator = np.sqrt((total**2 - predicted @ predicted) * (total**2 - gold @ gold))
    return float((correct * total - gold @ predicted) / denominator) if denominator else 0.0


def pearson(labels, predictions):
    """Pearson correlation of scores (STS-B); None where it is undefined (`_undefined_correlation`)."""
    labels, predictions = _pair(labels, predictions, dtype="float64")
    if _undefined_correlation("pearson", labels, predictions):
        return None
    return _correlation(labels, predictions)


def spearman(labels, predictions):
    """Spearman rank correlation of scores (STS-B): Pearson's of the ranks, ties at their mean rank."""
    labels, predictions = _pair(labels, predictions, dtype="float64")
    if _undefined_correlation("spearman", labels, predictions):
        return None
    return _correlation(_ranks(labels), _ranks(predictions))


def _correlation(x, y):
    x, y = x - x.mean(), y - y.mean()
    return float(np.clip(x @ y / np.sqrt((x @ x) * (y @ y)), -1.0, 1.0))


def _ranks(values):
    """1-based ranks of `values` [examples], tied values sharing the mean of their ranks."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)  # the last rank of each distinct value
    return ((ends - counts + 1 + ends) / 2)[inverse]


def _undefined_correlation(name, labels, predictions):
    """True, with a warning, where a correlation has no value: fewer than 2 examples, or one side all equal.

    Neither has a number (scipy raises for the first, answers NaN for the
    second); a metrics file gets `null` and the log says why.
    """
    if labels.size < 2:
        reason = f"{labels.size} example: a correlation needs 2 or more"
    elif np.all(labels == labels[0]):
        reason = "the gold scores are all equal"
    elif np.all(predictions == predictions[0]):
        reason = "the predicted scores are all equal"
    else:
        return False
    warnings.warn(f"{name} correlation is undefined ({reason}); reported as null.", stacklevel=3)
    return True


METRICS = {
    "accuracy": accuracy,
    "f1": f1,
    "matthews_correlation": matthews_correlation,
    "pearson": pearson,
    "spearman": spearman,
}


def compute_metrics(metric_names, labels, predictions):
    """`{name: value}` for each of `metric_names` (keys of `METRICS`).

    Args:
        metric_names: iterable of str, e.g. `("accuracy", "f1")`.
        labels: array-like [examples] of gold labels (class ids or scores).
        predictions: array-like [examples] of predicted class ids or scores.
    """
    unknown = [name for name in metric_names if name not in METRICS]
    if unknown:
        raise ValueError(f"Unknown metrics {unknown}: expected names from {sorted(METRICS)}.")
    return {name: METRICS[name](labels, predictions) for name in metric_names}


def _pair(labels, predictions, dtype=None):
    labels = np.asarray(labels, dtype=dtype).reshape(-1)
    predictions = np.asarray(predictions, dtype=dtype).reshape(-1)
    if labels.shape != predictions.shape:
        raise ValueError(
            f"Expected as many predictions as labels; got {predictions.size} "
            f"predictions for {labels.size} labels."
        )
    if labels.size == 0:
        raise ValueError("Cannot compute a metric on zero examples (empty dev set?).")
    return labels, predictions
