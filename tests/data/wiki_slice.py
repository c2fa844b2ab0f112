"""The first articles of the Wikipedia sample, and one uncased tokenizer per test process (its first call takes seconds)."""

import functools


def write_wiki_slice(shared_data, folder, num_documents):
    """The first `num_documents` articles as a corpus file in `folder`; returns its path and the articles."""
    text = (shared_data / "corpus" / "enwiki_sample.txt").read_text(encoding="utf-8")
    documents = text.split("\n\n")[:num_documents]
    path = folder / "wiki.txt"
    path.write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    return path, documents


@functools.lru_cache(maxsize=None)
def uncased_tokenizer(vocabulary_path):
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    return BertTokenizer(vocabulary=str(vocabulary_path))
