"""Linear probe: a logistic regression on frozen encoder features.

The feature-based side of the paper (section 5.3): the encoder is not
trained; each text's features (the last layer's `[CLS]` vector, or the mean
of the last layer over the real tokens, `[CLS]` and `[SEP]` included) feed a
linear classifier. Unlike fine-tuning, the classifier adds no random seed
and no training schedule of its own, so the result reflects the encoder
(its initialisation, and its pretraining if any).

The classifier is multinomial logistic regression with scikit-learn's
objective for `LogisticRegression(C=C)`:
`C * sum(cross-entropy) + 0.5 * ||W||^2`, the intercept unpenalised. It is
fitted by Newton's method in NumPy (a convex problem with one optimum), on
features standardised with the training split's mean and standard deviation.
"""

import warnings

import numpy as np

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


def fit_logistic_regression(features, labels, num_classes, C=1.0, max_iterations=100, tolerance=1e-8):
    """Multinomial logistic regression by Newton's method.

    Args:
        features: float array [n, d].
        labels: int array [n], values in [0, num_classes).
        num_classes: int, at least 2.
        C: float > 0. Inverse L2 strength, as in scikit-learn.
        max_iterations: int. Newton steps at most.
        tolerance: float. Stop when the largest gradient entry is below
            `tolerance * max(1, C * n)` (the loss is a sum over n examples).

    Returns:
        `(weights [d, num_classes], intercept [num_classes])`.
    """
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
    n, d = features.shape
    design = np.concatenate([features, np.ones((n, 1))], axis=1)
    targets = np.eye(num_classes)[labels]
    penalised = np.ones((d + 1, 1))
    penalised[-1] = 0.0  # the intercept row
    theta = np.zeros((d + 1, num_classes))

    def objective(theta):
        logits = design @ theta
        log_norm = _log_sum_exp(logits)
        loss = np.sum(log_norm - np.sum(logits * targets, axis=1))
        return C * loss + 0.5 * np.sum(penalised * theta**2), np.exp(logits - log_norm[:, None])

    value, probabilities = objective(theta)
    for iteration in range(max_iterations + 1):
        gradient = C * design.T @ (probabilities - targets) + penalised * theta
        if np.max(np.abs(gradient)) < tolerance * max(1.0, C * n):
            break
        if iteration == max_iterations:
            warnings.warn(
                f"Logistic regression stopped after {max_iterations} Newton steps with gradient "
                f"{np.max(np.abs(gradient)):.2e} (tolerance {tolerance * max(1.0, C * n):.2e})."
            )
            break
        # Hessian over (feature a, class k) x (feature b, class l), flattened row-major.
        curvature = np.einsum("ik,kl->ikl", probabilities, np.eye(num_classes)) - np.einsum("ik,il->ikl", probabilities, probabilities)
        hessian = np.empty((d + 1, num_classes, d + 1, num_classes))
        for k in range(num_classes):
            for l in range(num_classes):
                hessian[:, k, :, l] = (design * curvature[:, k, l, None]).T @ design
        hessian = C * hessian.reshape((d + 1) * num_classes, -1)
        # The intercepts can all shift together without changing the
        # probabilities: a flat direction, along which the gradient is zero.
        # A tiny ridge on them makes the system solvable; the intercepts are
        # centred at the end.
        hessian += np.diag(np.repeat(np.where(penalised[:, 0] > 0, 1.0, 1e-9), num_classes))
        step = np.linalg.solve(hessian, gradient.reshape(-1)).reshape(theta.shape)
        scale = 1.0
        while True:  # backtracking line search
            candidate = theta - scale * step
            candidate_value, candidate_probabilities = objective(candidate)
            if candidate_value <= value - 1e-4 * scale * np.sum(gradient * step):
                break
            scale *= 0.5
            if scale < 1e-10:  # no decrease left at float precision: the optimum
                candidate = None
                break
        if candidate is None:
            break
        theta, value, probabilities = candidate, candidate_value, candidate_probabilities
    return theta[:-1], theta[-1] - theta[-1].mean()


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


def _log_sum_exp(logits):
    top = logits.max(axis=1)
    return top + np.log(np.sum(np.exp(logits - top[:, None]), axis=1))
