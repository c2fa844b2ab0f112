"""The linear probe: logistic regression against scikit-learn, features from a real encoder call."""

import warnings

import numpy as np
import pytest

from keras_bert_app.evaluation import linear_probe


def _blobs(n, d, k, seed, spread=1.5):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(k, d)) * spread
    labels = rng.integers(0, k, size=n)
    return centers[labels] + rng.normal(size=(n, d)), labels


def _softmax(logits):
    probabilities = np.exp(logits - logits.max(1, keepdims=True))
    return probabilities / probabilities.sum(1, keepdims=True)


@pytest.mark.parametrize("C", [0.05, 1.0, 20.0])
def test_logistic_regression_matches_scikit_learn(C):
    sklearn_linear_model = pytest.importorskip("sklearn.linear_model")
    features, labels = _blobs(150, 7, 4, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # converged: no ConvergenceWarning
        weights, intercept = linear_probe.fit_logistic_regression(features, labels, 4, C=C)
    reference = sklearn_linear_model.LogisticRegression(C=C, tol=1e-12, max_iter=100000).fit(features, labels)
    np.testing.assert_allclose(weights.T, reference.coef_, atol=2e-4, rtol=1e-4)
    assert abs(intercept.sum()) < 1e-9  # centred
    np.testing.assert_allclose(_softmax(features @ weights + intercept), reference.predict_proba(features), atol=1e-5)


@pytest.mark.parametrize("C", [0.05, 1.0, 20.0])
def test_two_classes_fit_the_softmax_objective(C):
    """2 classes: the multinomial objective (as for more classes), not scikit-learn's one-sigmoid penalty."""
    from scipy.optimize import minimize

    features, labels = _blobs(120, 5, 2, seed=4, spread=0.7)
    weights, intercept = linear_probe.fit_logistic_regression(features, labels, 2, C=C)
    assert weights.shape == (5, 2) and intercept.shape == (2,)

    def objective(theta):  # C * sum(cross-entropy) + 0.5 * ||W||^2, intercepts unpenalised
        w, b = theta[:10].reshape(5, 2), theta[10:]
        logits = features @ w + b
        top = logits.max(1)
        log_norm = top + np.log(np.exp(logits - top[:, None]).sum(1))
        return C * np.sum(log_norm - logits[np.arange(len(labels)), labels]) + 0.5 * np.sum(w**2)

    ours = objective(np.concatenate([weights.ravel(), intercept]))
    best = minimize(objective, np.zeros(12), method="BFGS", options={"gtol": 1e-9})
    assert ours <= best.fun + 1e-6 * max(1.0, abs(best.fun))
    # The symmetric solution: one sigmoid's weights, split over the two rows.
    np.testing.assert_allclose(weights[:, 0], -weights[:, 1], atol=1e-12)


def test_probe_accuracy_tells_informative_from_random_features():
    features, labels = _blobs(400, 16, 5, seed=0)
    names = np.array(["business", "entertainment", "politics", "sports", "tech"])[labels]
    informative = linear_probe.probe_accuracy(features[:200], list(names[:200]), features[200:], list(names[200:]))
    noise = np.random.default_rng(1).normal(size=features.shape)
    uninformative = linear_probe.probe_accuracy(noise[:200], list(names[:200]), noise[200:], list(names[200:]))
    assert informative > 0.9
    assert uninformative < 0.4
    # One optimum: the order of the training rows does not matter.
    order = np.random.default_rng(2).permutation(200)
    shuffled = linear_probe.probe_accuracy(features[:200][order], list(names[:200][order]), features[200:], list(names[200:]))
    assert shuffled == informative
    # A constant feature is harmless; a dev label never seen in training counts as an error.
    with_constant = np.concatenate([features, np.full((400, 1), 3.0)], axis=1)
    assert linear_probe.probe_accuracy(with_constant[:200], list(names[:200]), with_constant[200:], list(names[200:])) == informative
    unseen = list(names[200:])
    unseen[:50] = ["weather"] * 50
    assert abs(linear_probe.probe_accuracy(features[:200], list(names[:200]), features[200:], unseen) - (informative - 50 / 200)) <= 1 / 200 + 1e-9


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="at least 2 classes"):
        linear_probe.probe_accuracy(np.zeros((3, 2)), ["a", "a", "a"], np.zeros((1, 2)), ["a"])
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\)"):
        linear_probe.fit_logistic_regression(np.zeros((2, 2)), np.array([0, 2]), 2)
    with pytest.raises(ValueError, match="features must be"):
        linear_probe.fit_logistic_regression(np.zeros((2, 2)), np.array([0, 1, 1]), 2)
    with pytest.raises(ValueError, match=r"none for \[2\]"):
        linear_probe.fit_logistic_regression(np.zeros((2, 2)), np.array([0, 1]), 3)
    with pytest.raises(ValueError, match="one row per label"):
        linear_probe.probe_accuracy(np.zeros((2, 2)), ["a", "b"], np.zeros((3, 2)), ["a"])
    with pytest.raises(ValueError, match="NaN"):
        linear_probe.probe_accuracy(np.array([[0.0], [np.nan]]), ["a", "b"], np.zeros((1, 1)), ["a"])


@pytest.mark.all_backends
def test_encoder_features_pool_the_last_layer_over_real_tokens():
    import keras

    from keras_bert_app import BertEncoder, BertPreprocessor
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "bank", "rates", "rose", "team", "won", "."]
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(vocabulary_size=len(vocabulary), num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16, max_sequence_length=16)
    preprocessor = BertPreprocessor(BertTokenizer(vocabulary=vocabulary), sequence_length=12)
    texts = ["the bank rates rose .", "team won", "the team won the bank rates ."]
    features = linear_probe.encoder_features(encoder, preprocessor, texts, batch_size=2)
    assert features["cls"].shape == features["mean"].shape == (3, 8)
    inputs = {key: np.asarray(value) for key, value in preprocessor(texts[1:2]).items()}
    sequence = keras.ops.convert_to_numpy(encoder(inputs, training=False)["sequence_output"])[0]
    real = inputs["padding_mask"][0].astype(bool)
    assert real.sum() == 4  # [CLS] team won [SEP]: padding is left out of the mean
    np.testing.assert_allclose(features["mean"][1], sequence[real].mean(0), atol=1e-5)
    np.testing.assert_allclose(features["cls"][1], sequence[0], atol=1e-5)
    assert linear_probe.encoder_features(encoder, preprocessor, [])["mean"].shape == (0, 8)


def test_token_count_features_count_the_tokens_the_encoders_see():
    from keras_bert_app import BertPreprocessor
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "bank", "rates", "rose", "team", "won", "."]
    preprocessor = BertPreprocessor(BertTokenizer(vocabulary=vocabulary), sequence_length=6)
    train_texts = ["the bank the bank rates rose", "team won", "The team won ."]
    dev_texts = ["rates rose .", "", "zebra"]
    train, dev = linear_probe.token_count_features(preprocessor, train_texts, dev_texts, batch_size=2)
    # Columns: the ids the training texts use after truncation to 6 tokens ("rates rose" of the first text is
    # cut off; "rates" and "rose" appear nowhere else), padding never.
    columns = ["[CLS]", "[SEP]", "the", "bank", "team", "won", "."]
    def row(counts):
        return [counts.get(token, 0) for token in columns]
    np.testing.assert_array_equal(train, [
        row({"[CLS]": 1, "[SEP]": 1, "the": 2, "bank": 2}),
        row({"[CLS]": 1, "[SEP]": 1, "team": 1, "won": 1}),
        row({"[CLS]": 1, "[SEP]": 1, "the": 1, "team": 1, "won": 1, ".": 1}),
    ])
    # Dev tokens without a training column are dropped; an empty text and an unknown word keep [CLS] and [SEP].
    np.testing.assert_array_equal(dev, [row({"[CLS]": 1, "[SEP]": 1, ".": 1}), row({"[CLS]": 1, "[SEP]": 1}),
                                        row({"[CLS]": 1, "[SEP]": 1})])
    # Features a logistic regression can read: topics told apart by their tokens.
    names = ["finance", "sport", "sport"]
    assert linear_probe.probe_accuracy(train, names, train, names) == 1.0
