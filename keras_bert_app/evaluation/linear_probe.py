"""Linear probe: a logistic regression on frozen encoder features.

The feature-based side of the paper (section 5.3): each text's frozen
features (the last layer's `[CLS]` vector, or its mean over the real tokens)
feed a linear classifier, which adds no seed or schedule of its own, so the
result reflects the encoder. The same classifier on token counts
(`token_count_features`) is the baseline.

The classifier is scikit-learn's multinomial `LogisticRegression(C=C)`
(intercept unpenalised), fitted to a tight tolerance on features
standardised with the training split's statistics.
"""

import numpy as np

from keras_bert_app.extras import require

POOLINGS = ("cls", "mean")


def encoder_features(encoder, preprocessor, texts, batch_size=64):
    """`{"cls": [n, H], "mean": [n, H]}` float64 features of the last layer for a list of texts.

    Args:
        encoder: a `BertEncoder`, called with `training=False`.
        preprocessor: a `BertPreprocessor` (tokenizes and packs the texts).
        texts: list of str.
        batch_size: int.
    """
    from keras import ops

    features = {pooling: [np.zeros((0, encoder.hidden_dim))] for pooling in POOLINGS}
    for start in range(0, len(texts), batch_size):
        inputs = {key: np.asarray(value) for key, value in preprocessor(list(texts[start:start + batch_size])).items()}
        # convert_to_numpy: on torch the output carries autograd state (and may sit on a GPU).
        sequence = ops.convert_to_numpy(encoder(inputs, training=False)["sequence_output"]).astype(np.float64)
        mask = inputs["padding_mask"].astype(np.float64)[..., None]
        features["cls"].append(sequence[:, 0])
        features["mean"].append((sequence * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0))
    return {pooling: np.concatenate(parts) for pooling, parts in features.items()}


def token_count_features(preprocessor, train_texts, dev_texts, batch_size=256):
    """Bag-of-tokens baseline: `(train [n, d], dev [m, d])` float64 counts of each token in each text.

    The tokens the encoders see (the same preprocessor, padding left out),
    one column for each token id the training texts use. No encoder:
    `probe_accuracy` on these tells what the labels need beyond which tokens
    occur.

    Args:
        preprocessor: a `BertPreprocessor` (tokenizes and packs the texts).
        train_texts, dev_texts: lists of str.
        batch_size: int. Texts tokenized at a time.
    """
    def token_rows(texts):
        rows = []
        for start in range(0, len(texts), batch_size):
            inputs = preprocessor(list(texts[start:start + batch_size]))
            token_ids, real = np.asarray(inputs["token_ids"]), np.asarray(inputs["padding_mask"]).astype(bool)
            rows += [ids[mask] for ids, mask in zip(token_ids, real)]
        return rows

    train_rows, dev_rows = token_rows(train_texts), token_rows(dev_texts)
    columns = np.unique(np.concatenate(train_rows)) if train_rows else np.zeros(0, np.int64)

    def counts(rows):
        features = np.zeros((len(rows), len(columns)))
        for row, ids in zip(features if len(columns) else [], rows):
            index = np.searchsorted(columns, ids)
            known = (index < len(columns)) & (columns[np.minimum(index, len(columns) - 1)] == ids)
            np.add.at(row, index[known], 1.0)
        return features

    return counts(train_rows), counts(dev_rows)


def fit_logistic_regression(features, labels, num_classes, C=1.0, max_iterations=10_000, tolerance=1e-10):
    """Multinomial logistic regression (scikit-learn's `LogisticRegression`, L-BFGS).

    The objective is `C * sum(cross-entropy) + 0.5 * ||W||^2` over the
    `num_classes` softmax outputs, the intercept unpenalised, for 2 classes
    too (not scikit-learn's single sigmoid).

    Args:
        features: float array [n, d].
        labels: int array [n], values in [0, num_classes); each occurs.
        num_classes: int, at least 2.
        C: float > 0. Inverse L2 strength, as in scikit-learn.
        max_iterations: int. L-BFGS iterations at most.
        tolerance: float. scikit-learn's `tol`.

    Returns:
        `(weights [d, num_classes], intercept [num_classes])`, the intercept
        centred (the softmax is unchanged by a shift of all of them).
    """
    LogisticRegression = require("sklearn.linear_model", extra="eval", feature="The linear probe").LogisticRegression

    features = np.asarray(features, dtype=np.float64)
    labels = np.asarray(labels)
    if features.ndim != 2 or labels.shape != (features.shape[0],):
        raise ValueError(f"features must be [n, d] and labels [n]; got {features.shape} and {labels.shape}.")
    if num_classes < 2 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be integers and num_classes >= 2; got {labels.dtype} labels and num_classes={num_classes}.")
    if not np.all(np.isfinite(features)):
        raise ValueError("features hold NaN or infinite values (a diverged encoder?).")
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"labels must lie in [0, {num_classes}); got values from {labels.min()} to {labels.max()}.")
    if C <= 0:
        raise ValueError(f"C must be > 0; got {C}.")
    missing = sorted(set(range(num_classes)) - set(labels.tolist()))
    if missing:
        raise ValueError(f"every class in [0, {num_classes}) needs an example; none for {missing}.")
    binary = num_classes == 2
    model = LogisticRegression(C=2 * C if binary else C, tol=tolerance, max_iter=max_iterations)
    model.fit(features, labels)
    coef, intercept = model.coef_, model.intercept_
    if binary:  # one sigmoid w -> softmax rows -w/2, +w/2
        coef = np.concatenate([-coef, coef]) / 2
        intercept = np.concatenate([-intercept, intercept]) / 2
    return coef.T, intercept - intercept.mean()


def probe_accuracy(train_features, train_labels, dev_features, dev_labels, C=1.0):
    """Dev accuracy of a logistic regression fitted on standardised training features.

    Labels may be any hashable values (e.g. topic names); dev labels not seen
    in training count as errors.
    """
    classes = sorted(set(train_labels))
    if len(classes) < 2:
        raise ValueError(f"A linear probe needs at least 2 classes in the training labels; got {classes}.")
    train_features = np.asarray(train_features, dtype=np.float64)
    dev_features = np.asarray(dev_features, dtype=np.float64)
    for split, features, labels in (("train", train_features, train_labels), ("dev", dev_features, dev_labels)):
        if features.ndim != 2 or len(features) != len(labels) or not len(labels):
            raise ValueError(f"{split}: features must be [n, d] with one row per label and n > 0; got {features.shape} for {len(labels)} labels.")
    if dev_features.shape[1] != train_features.shape[1]:
        raise ValueError(f"train and dev features differ in width: {train_features.shape[1]} vs {dev_features.shape[1]}.")
    if not (np.all(np.isfinite(train_features)) and np.all(np.isfinite(dev_features))):
        raise ValueError("features hold NaN or infinite values (a diverged encoder?).")
    index = {label: i for i, label in enumerate(classes)}
    mean = train_features.mean(axis=0)
    std = train_features.std(axis=0)
    std[std < 1e-8 * np.maximum(np.abs(mean), 1.0)] = 1.0  # constant features stay as they are
    weights, intercept = fit_logistic_regression(
        (train_features - mean) / std, np.array([index[label] for label in train_labels]), len(classes), C=C
    )
    scores = ((dev_features - mean) / std) @ weights + intercept
    predicted = [classes[i] for i in np.argmax(scores, axis=1)]
    return float(np.mean([p == label for p, label in zip(predicted, dev_labels)]))
