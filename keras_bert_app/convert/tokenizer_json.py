"""An HF `tokenizer.json` as our tokenizer files, for folders saved by transformers 5 (no vocab.txt, no spiece.model).

BERT and ELECTRA: its WordPiece tokens make `vocab.txt` (`weight_map.tokenizer_json_vocabulary`).
ALBERT: its Unigram model makes `spiece.model`, a SentencePiece `ModelProto`
with the pieces and scores in id order, the `Precompiled` normalizer's
charsmap and the Metaspace pre-tokenizer's whitespace settings. The
normalizer's other steps must be those our `SentencePieceTokenizer` runs
itself (NFKD + StripAccents, Lowercase): anything else is refused. Writing
the proto needs the `sentencepiece` package. The ids equal transformers 5's;
transformers 4's layout is read too (its fast tokenizer alone keeps a last
"▁" piece for trailing whitespace).
"""

import base64
import dataclasses
import json
import pathlib

from keras_bert_app import presets
from keras_bert_app.convert import weight_map
from keras_bert_app.convert.weight_map import ConversionError
from keras_bert_app.preprocessing.sentencepiece_model import CONTROL, NORMAL, UNKNOWN
from keras_bert_app.preprocessing.vocabulary import check_vocabulary

TOKENIZER_FILE = "tokenizer.json"
SENTENCEPIECE_FILE = "spiece.model"
VOCABULARY_FILE = presets.VOCABULARY_FILE
# ALBERT's special pieces, CONTROL (never matched in text) even where `added_tokens` does not list them.
CONTROL_PIECES = ("<pad>", "[CLS]", "[SEP]", "[MASK]")
METASPACE = "\u2581"
# The normalizer steps we reproduce, by their order in ours (HF's ALBERT converters write them so): a step
# of a lower rank after one of a higher rank would change what it sees. transformers 4 ends with
# `Replace(" {2,}", " ")`, which our whitespace handling covers.
QUOTES = (("``", '"'), ("''", '"'))  # Replace(pattern, content)
STEPS = {"NFKD": 1, "StripAccents": 2, "Lowercase": 3, "Precompiled": 4}
SPACES = (" {2,}", " ")


@dataclasses.dataclass(frozen=True)
class UnigramTokenizer:
    """What a `tokenizer.json` with a Unigram model says, in SentencePiece's terms."""

    pieces: list  # (piece, score, type) in id order; type as `preprocessing.sentencepiece_model`
    unk_id: int
    charsmap: bytes  # the Precompiled normalizer's (SentencePiece's `precompiled_charsmap`), or b""
    lowercase: bool
    strip_accents: bool


def read_unigram(path):
    """The Unigram tokenizer of `path`, checked: `ConversionError` naming the field that we cannot reproduce."""
    path = pathlib.Path(path)
    tokenizer = _read_json(path)
    model = tokenizer.get("model") or {}
    if model.get("type") != "Unigram" or not isinstance(model.get("vocab"), list):
        raise ConversionError(f"{path}: field 'model.type' is {model.get('type')!r}; expected 'Unigram' (ALBERT's).")
    if model.get("byte_fallback"):
        raise ConversionError(f"{path}: field 'model.byte_fallback' is true; expected false (ALBERT's).")
    vocabulary = model["vocab"]
    unk_id = model.get("unk_id")
    if not isinstance(unk_id, int) or not 0 <= unk_id < len(vocabulary):
        raise ConversionError(f"{path}: field 'model.unk_id' is {unk_id!r}; expected an id of the vocabulary.")
    control = {index for index, (piece, _) in enumerate(vocabulary) if piece in CONTROL_PIECES}
    for added in tokenizer.get("added_tokens") or ():
        index = added.get("id")
        inside = isinstance(index, int) and 0 <= index < len(vocabulary)
        if not inside or vocabulary[index][0] != added.get("content"):
            raise ConversionError(f"{path}: added token {added.get('content')!r} has id {index!r}; expected the id of "
                                  f"that piece in 'model.vocab' ({len(vocabulary)} pieces).")
        if added.get("special"):
            control.add(index)
    pieces = [(piece, float(score), UNKNOWN if index == unk_id else CONTROL if index in control else NORMAL)
              for index, (piece, score) in enumerate(vocabulary)]
    _check_pre_tokenizer(path, tokenizer.get("pre_tokenizer"))
    steps, charsmap = _normalizer_steps(path, tokenizer.get("normalizer"))
    return UnigramTokenizer(pieces, unk_id, charsmap, "Lowercase" in steps, "StripAccents" in steps)


def unigram_settings(path, vocabulary_size):
    """Our tokenizer's `lowercase` and `strip_accents` for `path`, whose pieces must be `vocabulary_size`."""
    unigram = read_unigram(path)
    if len(unigram.pieces) != vocabulary_size:
        raise ConversionError(
            f"{path}: the Unigram vocabulary has {len(unigram.pieces)} pieces but the token embedding has "
            f"{vocabulary_size} rows; expected the same number."
        )
    return {"lowercase": unigram.lowercase, "strip_accents": unigram.strip_accents}


def sentencepiece_model(path):
    """The bytes of a SentencePiece model (`spiece.model`) of the Unigram tokenizer in `path`."""
    try:
        from sentencepiece import sentencepiece_model_pb2
    except ImportError:
        raise ConversionError(
            f"{path}: making ALBERT's spiece.model of it needs the sentencepiece package: pip install sentencepiece."
        ) from None
    unigram = read_unigram(path)
    proto = sentencepiece_model_pb2.ModelProto()
    for piece, score, kind in unigram.pieces:
        proto.pieces.add(piece=piece, score=score, type=kind)
    ids = {piece: index for index, (piece, _, _) in enumerate(unigram.pieces)}
    trainer = proto.trainer_spec
    trainer.model_type = sentencepiece_model_pb2.TrainerSpec.UNIGRAM
    trainer.vocab_size = len(unigram.pieces)
    trainer.unk_id, trainer.unk_piece = unigram.unk_id, unigram.pieces[unigram.unk_id][0]
    trainer.pad_id, trainer.bos_id, trainer.eos_id = (ids.get(piece, -1) for piece in ("<pad>", "<s>", "</s>"))
    trainer.control_symbols.extend(piece for piece, _, kind in unigram.pieces
                                   if kind == CONTROL and piece not in ("<pad>", "<s>", "</s>"))
    normalizer = proto.normalizer_spec
    normalizer.name = "nmt_nfkc" if unigram.charsmap else "identity"
    normalizer.precompiled_charsmap = unigram.charsmap
    # Metaspace with prepend_scheme "always" after a whitespace split: a "\u2581" before each word, runs of spaces one.
    normalizer.add_dummy_prefix = normalizer.remove_extra_whitespaces = normalizer.escape_whitespaces = True
    return proto.SerializeToString()


def file_bytes(path, name):
    """The bytes of our tokenizer file `name` (`vocab.txt` or `spiece.model`) made of the `tokenizer.json` at `path`."""
    if name == SENTENCEPIECE_FILE:
        return sentencepiece_model(path)
    tokens = weight_map.tokenizer_json_vocabulary(path)
    check_vocabulary(tokens, f"{path} (its WordPiece vocabulary)")  # before the cache holds a bad copy
    return "".join(f"{token}\n" for token in tokens).encode("utf-8")


def _normalizer_steps(path, normalizer):
    """The types of the normalizer's steps (each checked, and their order) and the Precompiled charsmap."""
    kinds, quotes, charsmap, rank, previous = [], set(), b"", 0, None
    for step in _flatten(normalizer, "normalizers"):
        kind, pattern = step.get("type"), step.get("pattern") or {}
        if kind == "Replace" and (pattern.get("String"), step.get("content")) in QUOTES:
            quotes.add(pattern["String"])
            step_rank = 0
        elif kind == "Replace" and (pattern.get("Regex"), step.get("content")) == SPACES:
            step_rank = len(STEPS) + 1
        elif kind in STEPS:
            step_rank = STEPS[kind]
        else:
            raise ConversionError(
                f"{path}: field 'normalizer' holds {_describe(step)}; expected only ALBERT's steps (Replace `` and '', "
                "NFKD + StripAccents, Lowercase, Precompiled), which our SentencePiece tokenizer reproduces."
            )
        if step_rank < rank or (step_rank == rank and step_rank):
            raise ConversionError(f"{path}: field 'normalizer' has {_describe(step)} after {previous}; expected "
                                  "ALBERT's order (Replace `` and '', NFKD, StripAccents, Lowercase, Precompiled).")
        if kind == "Precompiled":
            charsmap = base64.b64decode(step.get("precompiled_charsmap") or "")
        kinds.append(kind)
        rank, previous = step_rank, _describe(step)
    if len(quotes) != len(QUOTES):
        raise ConversionError(f"{path}: field 'normalizer' has no Replace of `` and '' by '\"'; expected ALBERT's, "
                              "which our SentencePiece tokenizer always applies.")
    if ("NFKD" in kinds) != ("StripAccents" in kinds):
        raise ConversionError(f"{path}: field 'normalizer' has {'NFKD' if 'NFKD' in kinds else 'StripAccents'} "
                              "alone; expected NFKD and StripAccents together (accents stripped) or neither (kept).")
    return kinds, charsmap


def _check_pre_tokenizer(path, pre_tokenizer):
    """A Metaspace ("\u2581" before every word), after a whitespace split or alone; `ConversionError` otherwise."""
    steps = _flatten(pre_tokenizer, "pretokenizers")
    kinds = [step.get("type") for step in steps]
    metaspace = steps[-1] if steps else {}
    always = metaspace.get("prepend_scheme", "always" if metaspace.get("add_prefix_space", True) else "never")
    if kinds not in (["WhitespaceSplit", "Metaspace"], ["Metaspace"]) or metaspace.get("replacement") != METASPACE \
            or always != "always":
        raise ConversionError(
            f"{path}: field 'pre_tokenizer' is {' + '.join(map(_describe, steps)) or None}; expected ALBERT's "
            f"(WhitespaceSplit then Metaspace, replacement {METASPACE!r}, prepend_scheme 'always')."
        )


def _flatten(step, key):
    """A normalizer or pre-tokenizer as its list of steps (`Sequence`s opened), [] for none."""
    if not step:
        return []
    if step.get("type") == "Sequence":
        return [inner for item in step.get(key) or () for inner in _flatten(item, key)]
    return [step]


def _describe(step):
    """A step as a short name: its type, with a Replace's pattern, a Metaspace's scheme."""
    kind = step.get("type")
    if kind == "Replace":
        return f"Replace {json.dumps(step.get('pattern'))} -> {step.get('content')!r}"
    if kind == "Metaspace":
        return f"Metaspace(prepend_scheme {step.get('prepend_scheme')!r})"
    return repr(kind)


def _read_json(path):
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConversionError(f"{path}: malformed JSON ({error}).") from None
    if not isinstance(value, dict):
        raise ConversionError(f"{path}: expected a JSON object (a tokenizers tokenizer); got {type(value).__name__}.")
    return value
