"""CoNLL-2003 column files (Tjong Kim Sang and De Meulder 2003) -> token-tagging batches.

One token a line, `word POS chunk NER` (any number of columns >= 2: the
first is the word, the last the tag), a blank line between sentences,
`-DOCSTART-` lines between documents. Tags are IOB1 (the original files) or
BIO. Each word is split into WordPieces; its tag goes on the first piece and
the other pieces get label -100 and sample weight 0 (section 5.3 of the paper).
"""

import dataclasses
import pathlib

import numpy as np

from keras_bert_app.data.text_file import open_text
from keras_bert_app.evaluation.entity_f1 import parse_tag

IGNORE_LABEL = -100
DOCUMENT_START = "-DOCSTART-"


@dataclasses.dataclass
class TaggedSentences:
    """Sentences of words, each word with a tag.

    Attributes:
        words: list of lists of str.
        tags: list of lists of str (None for untagged input).
        source: str, the file.
        lines: list of int, the first line of each sentence.
    """

    words: list
    tags: list
    source: str
    lines: list

    def __len__(self):
        return len(self.words)


def read_conll(path, labeled=True):
    """Read a CoNLL-2003 style file.

    Args:
        path: the file.
        labeled: bool. The last column is the tag; False reads words only
            (one column is then enough).

    Returns:
        `TaggedSentences`.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")
    words, tags, lines = [], [], []
    sentence_words, sentence_tags, first_line = [], [], None

    def end_sentence():
        if sentence_words:
            words.append(list(sentence_words))
            tags.append(list(sentence_tags))
            lines.append(first_line)
        sentence_words.clear()
        sentence_tags.clear()

    with open_text(path) as file:
        for number, line in enumerate(file, 1):
            fields = line.split()
            if not fields or fields[0] == DOCUMENT_START:
                end_sentence()
                continue
            if labeled:
                if len(fields) < 2:
                    raise ValueError(f"{path}:{number}: expected 'word ... tag' columns; got {line.strip()!r}.")
                try:
                    parse_tag(fields[-1])
                except ValueError as error:
                    raise ValueError(f"{path}:{number}: {error}") from None
                sentence_tags.append(fields[-1])
            if not sentence_words:
                first_line = number
            sentence_words.append(fields[0])
    end_sentence()
    return TaggedSentences(words, tags if labeled else None, str(path), lines)


def tag_names(sentences):
    """The tags of a labelled file in a fixed order: "O" first, then sorted."""
    found = {tag for row in sentences.tags for tag in row}
    return ["O"] + sorted(found - {"O"})


def encode_tagged(sentences, tokenizer, sequence_length, label_names=None):
    """Pack sentences as `[CLS] pieces [SEP]` with labels on first pieces.

    Args:
        sentences: `TaggedSentences`.
        tokenizer: `keras_bert_app.BertTokenizer`.
        sequence_length: int. Packed length; longer sentences are truncated.
        label_names: list of str, the tags in id order (needed when labelled).

    Returns:
        `(arrays, num_truncated)`: `arrays` is a dict of NumPy int32 arrays
        [sentences, sequence_length]: `token_ids`, `segment_ids`,
        `padding_mask`, `word_index` (the word whose first piece sits at the
        position, -1 elsewhere) and, when labelled, `labels` (-100 off first
        pieces) and `sample_weight`; `num_truncated` counts sentences that
        lost pieces.
    """
    index = {name: i for i, name in enumerate(label_names or [])}
    flat_words = [word for row in sentences.words for word in row]
    pieces = tokenizer(flat_words).to_list() if flat_words else []
    shape = (len(sentences), sequence_length)
    token_ids = np.zeros(shape, "int32")
    word_index = np.full(shape, -1, "int32")
    labels = np.full(shape, IGNORE_LABEL, "int32")
    num_truncated = 0
    cursor = 0
    for row, words in enumerate(sentences.words):
        ids = [tokenizer.cls_token_id]
        for position, word in enumerate(words):
            word_pieces = pieces[cursor + position]
            if word_pieces and len(ids) < sequence_length - 1:
                word_index[row, len(ids)] = position
                if sentences.tags is not None:
                    tag = sentences.tags[row][position]
                    if tag not in index:
                        raise ValueError(
                            f"{sentences.source}:{sentences.lines[row] + position}: tag "
                            f"{tag!r} is not one of {list(index)}."
                        )
                    labels[row, len(ids)] = index[tag]
            ids.extend(word_pieces)
        cursor += len(words)
        if len(ids) > sequence_length - 1:
            num_truncated += 1
            ids = ids[: sequence_length - 1]
        ids.append(tokenizer.sep_token_id)
        token_ids[row, : len(ids)] = ids
    arrays = {
        "token_ids": token_ids,
        "segment_ids": np.zeros(shape, "int32"),
        "padding_mask": (token_ids != 0).astype("int32"),
        "word_index": word_index,
    }
    if sentences.tags is not None:
        arrays["labels"] = labels
        arrays["sample_weight"] = (labels != IGNORE_LABEL).astype("float32")
    return arrays, num_truncated


def tagging_examples(arrays):
    """tf.data of single sentences `(inputs, labels, sample_weight)` (or `(inputs,)`) from `encode_tagged` arrays."""
    import tensorflow as tf

    if not len(arrays["token_ids"]):
        raise ValueError("No sentences to tag (empty file?).")
    inputs = {name: arrays[name] for name in ("token_ids", "segment_ids", "padding_mask")}
    if "labels" in arrays:
        return tf.data.Dataset.from_tensor_slices((inputs, arrays["labels"], arrays["sample_weight"]))
    return tf.data.Dataset.from_tensor_slices(inputs)


def decode_tags(logits, arrays, sentences, label_names):
    """Predicted tags per word from logits [sentences, seq, classes]; "O" for cut words."""
    predicted = np.asarray(logits).argmax(-1)
    result = []
    for row, words in enumerate(sentences.words):
        tags = ["O"] * len(words)
        for position in np.nonzero(arrays["word_index"][row] >= 0)[0]:
            tags[arrays["word_index"][row, position]] = label_names[predicted[row, position]]
        result.append(tags)
    return result
