"""Read the pieces of a SentencePiece model file (`spiece.model`), checking that it is one.

A SentencePiece model is a serialized `ModelProto` (protocol buffers): its
field 1 repeats `SentencePiece {piece: string = 1; score: float = 2;
type: enum = 3}`, id = position. Only those fields are read here (the
wire format is walked directly, so neither `sentencepiece` nor `protobuf`
is needed); the model itself runs in tensorflow-text's op.
"""

import pathlib
import struct

from keras_bert_app import errors

# `SentencePiece.Type` values (sentencepiece_model.proto).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def read_model(proto, argument="proto"):
    """`(model bytes, pieces, types)` of a SentencePiece model.

    Args:
        proto: bytes of a serialized model, or a str / path of a `.model` file.
        argument: str. The argument named in errors.

    Returns:
        (bytes, list of str pieces in id order, list of int piece types).

    Raises:
        keras_bert_app.errors.MissingFileError: a path that is no file.
        keras_bert_app.errors.DataError: bytes that are no SentencePiece model.
    """
    name = "the given bytes"
    if isinstance(proto, (str, pathlib.PurePath)):
        path = pathlib.Path(proto).expanduser()
        if not path.is_file():
            raise errors.MissingFileError(argument, f"{argument}: {path}: no such SentencePiece model file.")
        name, proto = str(path), path.read_bytes()
    elif not isinstance(proto, (bytes, bytearray)):
        raise errors.ArgumentTypeError(
            argument, f"{argument} must be the path of a SentencePiece model or its bytes; got {type(proto).__name__}."
        )
    proto = bytes(proto)
    try:
        pieces, types = _pieces(proto)
    except (IndexError, ValueError, UnicodeDecodeError, struct.error) as error:
        raise errors.DataError(
            f"{name}: not a SentencePiece model (a serialized ModelProto, as `spiece.model`): {error}."
        ) from None
    if not pieces:
        raise errors.DataError(f"{name}: not a SentencePiece model: it holds no pieces.")
    return proto, pieces, types


def _pieces(data):
    pieces, types = [], []
    for field, wire_type, value in _fields(data):
        if field == 1:
            if wire_type != 2:
                raise ValueError(f"field 1 has wire type {wire_type}, expected 2 (a SentencePiece message)")
            piece, piece_type = "", NORMAL
            for sub_field, sub_type, sub_value in _fields(value):
                if sub_field == 1 and sub_type == 2:
                    piece = sub_value.decode("utf-8")
                elif sub_field == 3 and sub_type == 0:
                    piece_type = sub_value
            pieces.append(piece)
            types.append(piece_type)
    return pieces, types


def _fields(data):
    """(field number, wire type, value) of each field of one message; ValueError when malformed."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        field, wire_type = key >> 3, key & 7
        if field == 0:
            raise ValueError(f"field number 0 at byte {position}")
        if wire_type == 0:
            value, position = _varint(data, position)
        elif wire_type == 1:
            value, position = data[position:position + 8], position + 8
        elif wire_type == 2:
            length, position = _varint(data, position)
            value, position = data[position:position + length], position + length
        elif wire_type == 5:
            value, position = data[position:position + 4], position + 4
        else:
            raise ValueError(f"wire type {wire_type} at byte {position}")
        if position > len(data):
            raise ValueError("a field runs past the end of the file")
        yield field, wire_type, value


def _varint(data, position):
    result, shift = 0, 0
    while True:
        byte = data[position]  # IndexError past the end
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7
        if shift > 63:
            raise ValueError(f"varint too long at byte {position}")
