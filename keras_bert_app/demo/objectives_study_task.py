"""The objectives study's task: is a sentence in its own word order, or are its words shuffled?

Made from the quickstart's BBC News articles (training sentences from the
labeled articles, dev sentences from the dev articles): each sentence of 6
to 30 words is kept or has its words shuffled, half and half. A bag of
words sees the same words in both classes and is at chance, while a model
that learned how English is put together tells a shuffled sentence at once;
a few hundred labels are too few to learn word order from scratch.
"""

import csv
import pathlib
import re

import numpy as np

LABELS = ("original", "shuffled")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def write_word_order_task(data: pathlib.Path, folder: pathlib.Path, sizes: dict, seed: int) -> dict:
    """`train.csv` and `dev.csv` (columns text, label) in `folder` from `data/labeled.csv` and `data/dev.csv`.

    Returns:
        dict: split -> path.
    """
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    rng = np.random.default_rng(seed)
    for split, source in (("train", "labeled.csv"), ("dev", "dev.csv")):
        sentences = []
        with (data / source).open(newline="", encoding="utf-8") as file:
            for row in csv.DictReader(file):
                sentences += [s for s in _SENTENCE_END.split(row["text"].replace("\n", " ")) if 6 <= len(s.split()) <= 30]
        chosen = rng.permutation(len(sentences))[: sizes[split]]
        rows = []
        for index, sentence_index in enumerate(chosen):
            words = sentences[sentence_index].split()
            label = LABELS[index % 2]
            if label == "shuffled":
                order = rng.permutation(len(words))
                while np.array_equal(order, np.arange(len(words))):
                    order = rng.permutation(len(words))
                words = [words[i] for i in order]
            rows.append((" ".join(words), label))
        paths[split] = folder / f"{split}.csv"
        with paths[split].open("w", newline="", encoding="utf-8") as file:
            writer = csv.writer(file)
            writer.writerow(["text", "label"])
            writer.writerows(rows)
    return paths


def bag_of_words_accuracy(train: pathlib.Path, dev: pathlib.Path) -> float:
    """Dev accuracy of a logistic regression on the word counts (lowercased words of the training set)."""
    from keras_bert_app.evaluation.linear_probe import probe_accuracy

    def read(path):
        with path.open(newline="", encoding="utf-8") as file:
            rows = list(csv.DictReader(file))
        return [re.findall(r"\w+", row["text"].lower()) for row in rows], [row["label"] for row in rows]

    (train_words, train_labels), (dev_words, dev_labels) = read(train), read(dev)
    vocabulary = {word: i for i, word in enumerate(sorted({w for words in train_words for w in words}))}

    def counts(texts):
        matrix = np.zeros((len(texts), len(vocabulary)))
        for row, words in enumerate(texts):
            for word in words:
                if word in vocabulary:
                    matrix[row, vocabulary[word]] += 1
        return matrix

    return probe_accuracy(counts(train_words), train_labels, counts(dev_words), dev_labels)
