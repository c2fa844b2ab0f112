"""The tokenizer a preset names: WordPiece (`BertTokenizer`) or SentencePiece (`SentencePieceTokenizer`)."""

from keras_bert_app import errors

WORDPIECE = "wordpiece"
SENTENCEPIECE = "sentencepiece"
TOKENIZER_TYPES = (WORDPIECE, SENTENCEPIECE)


def tokenizer_from_preset(name_or_path, **kwargs):
    """The tokenizer of a preset, by its `config.json["tokenizer"]["type"]`.

    Args:
        name_or_path: str or path. A built-in preset name or a preset folder
            (ours or a foreign checkpoint, as `convert.resolve` reads them).
        **kwargs: passed to the tokenizer's `from_preset`.

    Returns:
        `SentencePieceTokenizer` for `"type": "sentencepiece"` (ALBERT),
        else `BertTokenizer` (no `type`, or `"wordpiece"`).

    Raises:
        keras_bert_app.errors.ArgumentError: an unknown tokenizer type.
    """
    from keras_bert_app.convert import resolve

    config = resolve.resolve_preset(name_or_path).config.get("tokenizer", {})
    kind = errors.check_choice("tokenizer", config.get("type", WORDPIECE), TOKENIZER_TYPES)
    if kind == SENTENCEPIECE:
        from keras_bert_app.preprocessing.sentencepiece_tokenizer import SentencePieceTokenizer

        return SentencePieceTokenizer.from_preset(name_or_path, **kwargs)
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    return BertTokenizer.from_preset(name_or_path, **kwargs)
