"""The GLUE metrics, as the GLUE benchmark computes them.

accuracy (SST-2, MNLI, QNLI, RTE, WNLI; with F1 for MRPC and QQP), F1 of the
positive class 1 (MRPC, QQP), Matthews correlation (CoLA), Pearson and
Spearman correlations (STS-B). scikit-learn and scipy do the arithmetic.
"""

import warnings

import numpy as np


def accuracy(labels, predictions):
    """Fraction of predictions equal to the labels."""
    labels, predictions = _pair(labels, predictions)
    return float(np.mean(labels == predictions))


def f1(labels, predictions):
    """F1 of the positive class (label 1), as GLUE reports for MRPC and QQP."""
    from sklearn.metrics import f1_score

    labels, predictions = _pair(labels, predictions)
    return float(f1_score(labels, predictions, pos_label=1, average="binary", zero_division=0))


def matthews_correlation(labels, predictions):
    """Matthews correlation coefficient (CoLA); 0 when a side is constant."""
    from sklearn.metrics import matthews_corrcoef

    labels, predictions = _pair(labels, predictions)
    return float(matthews_corrcoef(labels, predictions))


def pearson(labels, predictions):
    """Pearson correlation of scores (STS-B); None where it is undefined (`_undefined_correlation`)."""
    from scipy.stats import pearsonr

    labels, predictions = _pair(labels, predictions, dtype="float64")
    if _undefined_correlation("pearson", labels, predictions):
        return None
    return float(pearsonr(labels, predictions)[0])


def spearman(labels, predictions):
    """Spearman rank correlation of scores (STS-B); None where it is undefined (`_undefined_correlation`)."""
    from scipy.stats import spearmanr

    labels, predictions = _pair(labels, predictions, dtype="float64")
    if _undefined_correlation("spearman", labels, predictions):
        return None
    return float(spearmanr(labels, predictions)[0])


def _undefined_correlation(name, labels, predictions):
    """True, with a warning, where a correlation has no value: fewer than 2 examples, or one side all equal.

    scipy raises for the first and answers NaN for the second (not a JSON
    number); a metrics file gets `null` and the log says why.
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
