"""The objectives study's task: the topic of a BBC News article, from few labels; and its baselines.

The labels come from the data (the quickstart's `labeled.csv` and `dev.csv`:
business, entertainment, politics, sport, tech), not from a transformation
the study applies. Training: `per_class` articles of each topic from the
labeled articles; dev: a sample of the dev articles (never in the
pretraining corpus). Each text is cut to its first `WORDS` words, about
what an encoder sees at the quickstart's 64 tokens, so that every method
reads the same text.

Baselines, none of them an encoder (`baselines`): the majority class of
the training labels, a logistic regression on word counts, and one on
surface features (`surface_features`: length, punctuation, casing,
digits). An encoder is ahead only when it beats the strongest of them.
"""

import collections
import csv
import pathlib
import re
import string

import numpy as np

WORDS = 48  # words of an article kept: about 64 WordPiece tokens


def _read(path):
    with pathlib.Path(path).open(newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    return [row["text"] for row in rows], [row["label"] for row in rows]


def _write(path, texts, labels):
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["text", "label"])
        writer.writerows(zip(texts, labels))


def write_topic_task(data: pathlib.Path, folder: pathlib.Path, per_class: int, dev_examples: int, seed: int) -> dict:
    """`train.csv` and `dev.csv` (columns text, label) in `folder` from `data/labeled.csv` and `data/dev.csv`.

    Returns:
        dict: split -> path.
    """
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    texts, labels = _read(data / "labeled.csv")
    chosen = []
    for label in sorted(set(labels)):
        indices = [i for i, value in enumerate(labels) if value == label]
        chosen += rng.permutation(indices)[:per_class].tolist()
    chosen = rng.permutation(chosen)
    cut = lambda text: " ".join(text.split()[:WORDS])  # noqa: E731
    _write(folder / "train.csv", [cut(texts[i]) for i in chosen], [labels[i] for i in chosen])
    texts, labels = _read(data / "dev.csv")
    chosen = rng.permutation(len(texts))[:dev_examples]
    _write(folder / "dev.csv", [cut(texts[i]) for i in chosen], [labels[i] for i in chosen])
    return {"train": folder / "train.csv", "dev": folder / "dev.csv"}


def describe(folder: pathlib.Path) -> dict:
    """Sizes and label counts of the task's files."""
    result = {}
    for split in ("train", "dev"):
        _, labels = _read(folder / f"{split}.csv")
        result[split] = {"examples": len(labels), "labels": dict(sorted(collections.Counter(labels).items()))}
    return result


_PUNCTUATION = ".,;:!?'\"-()%$£"


def surface_features(text: str) -> list[float]:
    """Length (characters, words, mean word length), each punctuation mark's count, capitalised words, the share
    of capital letters, digits and numbers: what a rule on the surface could use."""
    words = text.split()
    letters = [c for c in text if c.isalpha()]
    return [len(text), len(words), np.mean([len(w) for w in words]) if words else 0.0,
            *[text.count(mark) for mark in _PUNCTUATION],
            sum(w[:1].isupper() for w in words), sum(c.isupper() for c in letters) / max(1, len(letters)),
            sum(c in string.digits for c in text), len(re.findall(r"\d+", text))]


def _bag_of_words(train_texts, dev_texts):
    tokens = lambda text: re.findall(r"\w+|[^\w\s]", text.lower())  # noqa: E731
    vocabulary = {word: i for i, word in enumerate(sorted({w for text in train_texts for w in tokens(text)}))}

    def counts(texts):
        matrix = np.zeros((len(texts), len(vocabulary)))
        for row, text in enumerate(texts):
            for word in tokens(text):
                if word in vocabulary:
                    matrix[row, vocabulary[word]] += 1
        return matrix

    return counts(train_texts), counts(dev_texts)


def baselines(train: pathlib.Path, dev: pathlib.Path) -> dict:
    """Dev accuracy of the majority class, a bag of words (lowercased words and punctuation marks) and surface
    features (each a logistic regression on standardised features); and `dev_size`."""
    from keras_bert_app.evaluation.linear_probe import probe_accuracy

    (train_texts, train_labels), (dev_texts, dev_labels) = _read(train), _read(dev)
    counts = collections.Counter(train_labels)
    majority = max(sorted(counts), key=counts.get)
    words_train, words_dev = _bag_of_words(train_texts, dev_texts)
    return {
        "majority": float(np.mean([label == majority for label in dev_labels])),
        "bag_of_words": probe_accuracy(words_train, train_labels, words_dev, dev_labels),
        "surface": probe_accuracy([surface_features(t) for t in train_texts], train_labels,
                                  [surface_features(t) for t in dev_texts], dev_labels),
        "dev_size": len(dev_labels),
    }
