import subprocess
import sys

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sk

from keras_bert_app.evaluation import glue_metrics


def test_hand_computed_values():
    labels = [1, 0, 1, 1, 0, 0]
    predictions = [1, 0, 0, 1, 1, 0]
    # tp=2, fp=1, fn=1, tn=2
    assert glue_metrics.accuracy(labels, predictions) == pytest.approx(4 / 6)
    assert glue_metrics.f1(labels, predictions) == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))
    mcc = (2 * 2 - 1 * 1) / np.sqrt(3 * 3 * 3 * 3)
    assert glue_metrics.matthews_correlation(labels, predictions) == pytest.approx(mcc)
    scores = [0.0, 1.0, 2.0, 3.0]
    assert glue_metrics.pearson(scores, [1.0, 3.0, 5.0, 7.0]) == pytest.approx(1.0)
    # A monotone but non-linear map: Spearman 1, Pearson below 1.
    assert glue_metrics.spearman(scores, [0.0, 1.0, 8.0, 27.0]) == pytest.approx(1.0)
    assert glue_metrics.pearson(scores, [0.0, 1.0, 8.0, 27.0]) < 0.95


def test_against_scikit_learn_and_scipy():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 200)
    predictions = np.where(rng.random(200) < 0.8, labels, 1 - labels)
    assert glue_metrics.f1(labels, predictions) == pytest.approx(sk.f1_score(labels, predictions))
    assert glue_metrics.matthews_correlation(labels, predictions) == pytest.approx(
        sk.matthews_corrcoef(labels, predictions)
    )
    gold = rng.random(100) * 5
    guess = gold + rng.normal(size=100)
    assert glue_metrics.pearson(gold, guess) == pytest.approx(stats.pearsonr(gold, guess)[0])
    assert glue_metrics.spearman(gold, guess) == pytest.approx(stats.spearmanr(gold, guess)[0])


def test_compute_metrics_and_errors():
    result = glue_metrics.compute_metrics(("accuracy", "f1"), [1, 0], [1, 1])
    assert result == {"accuracy": 0.5, "f1": pytest.approx(2 / 3)}
    with pytest.raises(ValueError, match="Unknown metrics"):
        glue_metrics.compute_metrics(["bleu"], [1], [1])
    with pytest.raises(ValueError, match="3 predictions for 2 labels"):
        glue_metrics.accuracy([1, 0], [1, 0, 1])
    with pytest.raises(ValueError, match="empty dev set"):
        glue_metrics.accuracy([], [])


def test_ties_and_several_classes_against_scikit_learn_and_scipy():
    """Spearman with tied scores (mean ranks) and Matthews over three classes, as scipy and scikit-learn."""
    rng = np.random.default_rng(1)
    gold = rng.integers(0, 6, 80).astype(float)  # STS-B's scores are often tied
    guess = np.round(gold + rng.normal(size=80))
    assert glue_metrics.spearman(gold, guess) == pytest.approx(stats.spearmanr(gold, guess)[0])
    labels = rng.integers(0, 3, 150)
    predictions = np.where(rng.random(150) < 0.6, labels, rng.integers(0, 3, 150))
    assert glue_metrics.matthews_correlation(labels, predictions) == pytest.approx(
        sk.matthews_corrcoef(labels, predictions)
    )
    assert glue_metrics.matthews_correlation([0, 1, 0], [1, 1, 1]) == sk.matthews_corrcoef([0, 1, 0], [1, 1, 1]) == 0
    assert glue_metrics.f1([0, 0], [0, 0]) == sk.f1_score([0, 0], [0, 0], zero_division=0) == 0


def test_fine_tuning_metrics_need_neither_scikit_learn_nor_scipy():
    """The metrics of fine-tuning run where the `eval` extra is not installed."""
    script = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('sklearn', 'scipy'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from keras_bert_app.evaluation import glue_metrics\n"
        "names = ('accuracy', 'f1', 'matthews_correlation', 'pearson', 'spearman')\n"
        "print(glue_metrics.compute_metrics(names, [1, 0, 1, 1], [1, 0, 0, 1]))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "'matthews_correlation': 0.57" in result.stdout
