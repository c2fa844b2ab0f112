"""SQuAD v1.1 / v2.0 JSON files (Rajpurkar et al. 2016, 2018) -> question examples.

The format: `{"version": ..., "data": [{"title", "paragraphs": [{"context",
"qas": [{"id", "question", "answers": [{"text", "answer_start"}],
"is_impossible" (v2.0 only)}]}]}]}`. Reading fails with the JSON path of the
first problem; answers whose `answer_start` does not point at their text
are reported by `check_answers` (training skips them).
"""

import dataclasses
import json
import pathlib

from keras_bert_app.data.text_file import read_text

VERSIONS = ("1.1", "2.0")


@dataclasses.dataclass
class SquadExample:
    """One question on one paragraph.

    Attributes:
        qas_id: str. The question id.
        question: str.
        context: str. The paragraph.
        answers: list of `(text, answer_start)` pairs (empty for unanswerable
            or unlabelled questions).
        is_impossible: bool. SQuAD v2.0 unanswerable question.
        title: str. The article title.
    """

    qas_id: str
    question: str
    context: str
    answers: list
    is_impossible: bool = False
    title: str = ""


@dataclasses.dataclass
class SquadData:
    """The examples of a SQuAD file, with the raw articles for official scoring.

    Attributes:
        examples: list of `SquadExample`, in file order.
        articles: list, the file's `data` entry (what the official scripts score).
        version: "1.1" or "2.0".
        source: str, the file.
    """

    examples: list
    articles: list
    version: str
    source: str

    def __len__(self):
        return len(self.examples)


def read_squad(path, version=None):
    """Read a SQuAD JSON file.

    Args:
        path: the file.
        version: "1.1", "2.0" or None to detect it (the file's "version"
            field, or any `is_impossible` question means 2.0).

    Returns:
        `SquadData`.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")
    text = read_text(path)  # UTF-8, with or without a byte-order mark
    try:
        dataset = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not a JSON file ({error}).") from None
    return parse_squad(dataset, source=str(path), version=version)


def parse_squad(dataset, source="<data>", version=None):
    """The examples of an already parsed SQuAD JSON object (see `read_squad`)."""
    if version is not None and str(version) not in VERSIONS:
        raise ValueError(f"Unknown SQuAD version {version!r}: expected one of {list(VERSIONS)}.")
    articles = _get(dataset, "data", list, source, "the top level")
    examples, seen = [], set()
    for a, article in enumerate(articles):
        where = f"data[{a}]"
        title = article.get("title", "") if isinstance(article, dict) else ""
        for p, paragraph in enumerate(_get(article, "paragraphs", list, source, where)):
            where_p = f"{where}.paragraphs[{p}]"
            context = _get(paragraph, "context", str, source, where_p)
            questions = _get(paragraph, "qas", list, source, where_p)
            if questions and not context.strip():
                raise ValueError(f"{source}: {where_p}.context is empty; a question needs a paragraph.")
            for q, qa in enumerate(questions):
                examples.append(_example(qa, context, title, source, f"{where_p}.qas[{q}]", seen))
    detected = _detect_version(dataset, examples)
    if version is not None and str(version) == "1.1" and detected == "2.0":
        impossible = sum(example.is_impossible for example in examples)
        if impossible:
            raise ValueError(
                f"{source}: read as SQuAD v1.1 but {impossible} questions are "
                "'is_impossible' (a v2.0 file): pass version 2.0."
            )
    return SquadData(examples, articles, str(version) if version else detected, source)


def check_answers(example):
    """Why the example's first answer cannot be located, or None when it can.

    An answer is located when `context[answer_start:answer_start + len(text)]`
    is its text and that text is not only whitespace.
    """
    if example.is_impossible:
        return None
    if not example.answers:
        return "no answer"
    text, start = example.answers[0]
    if not text.strip():
        return "empty answer text"
    found = example.context[start : start + len(text)]
    if found != text:
        return f"answer_start {start} points at {found!r}, not at the answer {text!r}"
    return None


def _example(qa, context, title, source, where, seen):
    qas_id = str(_get(qa, "id", (str, int), source, where))
    if qas_id in seen:
        raise ValueError(f"{source}: {where}.id {qas_id!r} appears twice; ids must be unique.")
    seen.add(qas_id)
    question = _get(qa, "question", str, source, where)
    is_impossible = qa.get("is_impossible", False)
    if not isinstance(is_impossible, bool):
        raise ValueError(f"{source}: {where}.is_impossible must be true or false; got {is_impossible!r}.")
    answers = []
    for n, answer in enumerate(_get(qa, "answers", list, source, where) if "answers" in qa else []):
        text = _get(answer, "text", str, source, f"{where}.answers[{n}]")
        start = _get(answer, "answer_start", int, source, f"{where}.answers[{n}]")
        if not 0 <= start <= len(context):
            raise ValueError(
                f"{source}: {where}.answers[{n}].answer_start {start} is outside the "
                f"context of {len(context)} characters."
            )
        answers.append((text, start))
    return SquadExample(qas_id, question, context, answers, is_impossible, str(title))


def _detect_version(dataset, examples):
    declared = str(dataset.get("version", "")) if isinstance(dataset, dict) else ""
    if "2.0" in declared or any(example.is_impossible for example in examples):
        return "2.0"
    return "1.1"


def _get(mapping, key, kind, source, where):
    """`mapping[key]`, checked to be a `kind`, with a clear error naming where it is."""
    if not isinstance(mapping, dict):
        raise ValueError(
            f"{source}: {where} must be a JSON object with {key!r}; got "
            f"{type(mapping).__name__}. Is this a SQuAD file?"
        )
    if key not in mapping:
        raise ValueError(
            f"{source}: {where} has no {key!r} (keys: {sorted(mapping)[:8]}); "
            "expected the SQuAD layout data[].paragraphs[].qas[]."
        )
    value = mapping[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or isinstance(value, bool):
        names = " or ".join(k.__name__ for k in kinds)
        raise ValueError(f"{source}: {where}.{key} must be {names}; got {type(value).__name__}.")
    return value
