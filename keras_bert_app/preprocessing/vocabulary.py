"""Read and check a WordPiece vocabulary (one token a line, line number = id)."""

import pathlib

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
ASCII_WHITESPACE = " \t\n\r\x0b\x0c"


class VocabularyError(ValueError):
    """A vocabulary file or list that cannot be used by the tokenizer."""


def read_vocabulary(vocabulary):
    """The tokens of a vocabulary, in id order, checked.

    Args:
        vocabulary: str or `pathlib.Path` of a `vocab.txt` (UTF-8, one token a
            line, as in the original BERT release), or a list of str tokens.

    Returns:
        list of str, `tokens[id]` is the token of `id`.

    Raises:
        VocabularyError: naming the file (or "vocabulary list") and the problem:
            an unreadable file, an empty line, a duplicate token, a missing
            special token (`[PAD]`, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`), or
            nothing but bracketed special tokens (no word piece).
    """
    if isinstance(vocabulary, (str, pathlib.Path)):
        source = str(vocabulary)
        path = pathlib.Path(vocabulary).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise VocabularyError(f"vocabulary {source}: no such file") from None
        except (IsADirectoryError, PermissionError, UnicodeDecodeError) as error:
            raise VocabularyError(f"vocabulary {source}: cannot be read ({error})") from None
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the newline that ends the last line
        tokens = [line.rstrip("\r") for line in lines]
    else:
        source = "vocabulary list"
        tokens = list(vocabulary)
        for index, token in enumerate(tokens):
            if not isinstance(token, str):
                raise VocabularyError(
                    f"{source}: entry {index} is {type(token).__name__}, expected str"
                )
    check_vocabulary(tokens, source)
    return tokens


def check_vocabulary(tokens, source="vocabulary list"):
    """Raise `VocabularyError` unless `tokens` is a usable vocabulary."""
    if not tokens:
        raise VocabularyError(f"{source}: the vocabulary is empty")
    seen = {}
    for index, token in enumerate(tokens):
        # Real vocabularies hold Unicode space tokens (the Chinese one has
        # U+2028), so only ASCII whitespace counts as a malformed line.
        if token.strip(ASCII_WHITESPACE) == "":
            raise VocabularyError(
                f"{source}: line {index + 1} is empty or only whitespace "
                "(every line must hold one token; its line number is its id)"
            )
        if token != token.strip(ASCII_WHITESPACE):
            raise VocabularyError(
                f"{source}: line {index + 1} ({token!r}) has leading or trailing whitespace"
            )
        if token in seen:
            raise VocabularyError(
                f"{source}: token {token!r} is duplicated on lines "
                f"{seen[token] + 1} and {index + 1}"
            )
        seen[token] = index
    missing = [token for token in SPECIAL_TOKENS if token not in seen]
    if missing:
        raise VocabularyError(
            f"{source}: missing special token(s) {', '.join(missing)} "
            f"(a BERT vocabulary must hold all of {', '.join(SPECIAL_TOKENS)})"
        )
    if all(_bracketed(token) for token in tokens):
        # tensorflow-text's WordPiece drops such tokens (text is split at "[" and "]") and fails on none left.
        raise VocabularyError(
            f"{source}: all {len(tokens)} tokens are bracketed special tokens ({', '.join(tokens[:6])}"
            f"{', ...' if len(tokens) > 6 else ''}); a WordPiece vocabulary needs word pieces (words, ##-pieces) "
            "to split text into"
        )


def _bracketed(token):
    return len(token) > 2 and token.startswith("[") and token.endswith("]")


def write_vocabulary(tokens, path):
    """Write `tokens` to `path`, one a line (UTF-8), after checking them."""
    check_vocabulary(list(tokens), str(path))
    path = pathlib.Path(path)
    path.write_text("".join(token + "\n" for token in tokens), encoding="utf-8")
    return path
