"""The student of `distill`: one of a preset, a subset of the teacher's layers, or a random model of a size.

- a preset (e.g. one `pretrain` made: Turc et al. 2019's pretrained compact
  student), whose tokenizer must be the teacher's;
- `student_layers`, the teacher's layers at those indices with its
  embeddings, pooler and head (DistilBERT's initialisation, Sanh et al. 2019);
- `student_size` "LAYERSxHIDDEN", randomly initialised with the teacher's
  vocabulary and positions (heads of 64 dimensions, a 4H feed-forward layer).
"""

import re

from keras_bert_app import errors

# `student_size`: "LAYERSxHIDDEN", e.g. "3x384"; heads of 64 dimensions, a 4H feed-forward layer (BERT's shapes).
SIZE_PATTERN = re.compile(r"^(\d+)x(\d+)$")
HEAD_DIM = 64


def check_one_student(student, student_layers, student_size):
    """Exactly one student argument, well formed; one line naming the problem otherwise."""
    given = [name for name, value in (("student", student), ("student_layers", student_layers),
                                       ("student_size", student_size)) if value is not None]
    if len(given) != 1:
        raise errors.ArgumentError(
            "student", "give exactly one of student (a preset), student_layers (teacher layers) or student_size "
            f"(LAYERSxHIDDEN); got {given or 'none'}.",
        )
    if student_layers is not None:
        errors.check_type("student_layers", student_layers, (list, tuple), "a list of int")
        if not student_layers:
            raise errors.ArgumentError("student_layers", "student_layers is empty; name at least one teacher layer.")
        for layer in student_layers:
            errors.check_int("student_layers", layer)
        if len(set(student_layers)) != len(student_layers):
            raise errors.ArgumentError("student_layers", f"student_layers repeats a layer: {list(student_layers)}.")
    if student_size is not None:
        errors.check_type("student_size", student_size, str)
        match = SIZE_PATTERN.match(student_size)
        if not match or int(match[1]) < 1 or int(match[2]) < HEAD_DIM or int(match[2]) % HEAD_DIM:
            raise errors.ArgumentError(
                "student_size", f"student_size is LAYERSxHIDDEN with HIDDEN a multiple of {HEAD_DIM} (e.g. "
                f"'3x384'); got {student_size!r}.",
            )


def build_student(teacher_model, teacher, student, student_layers, student_size):
    """The student classifier and a phrase naming it."""
    from keras_bert_app.models.bert_classifier import BertClassifier
    from keras_bert_app.models.bert_encoder import BertEncoder

    num_classes = teacher_model.num_classes
    pooling = teacher_model.pooling
    encoder_config = teacher_model.encoder.get_config()
    if student is not None:
        _check_same_tokenizer(teacher, student)
        model = BertClassifier.from_preset(student, num_classes=num_classes, pooling=pooling)
        return model, f"the student preset {student}"
    if student_size is not None:
        encoder = BertEncoder.from_config(student_encoder_config(encoder_config, student_size))
        return BertClassifier(encoder, num_classes, pooling=pooling), f"a random {student_size} student"
    encoder = teacher_model.encoder
    if encoder.num_groups not in (None, encoder.num_layers):
        raise errors.ArgumentError(
            "student_layers", f"the teacher shares weights across layers (num_groups {encoder.num_groups}); "
            "its layers cannot be taken one by one.",
        )
    out_of_range = [layer for layer in student_layers if not 0 <= layer < encoder.num_layers]
    if out_of_range:
        raise errors.ArgumentError(
            "student_layers", f"student_layers {out_of_range} out of range: the teacher has {encoder.num_layers} "
            f"layers, 0 to {encoder.num_layers - 1}.",
        )
    model = BertClassifier(BertEncoder.from_config({**encoder_config, "num_layers": len(student_layers)}),
                           num_classes, pooling=pooling)
    copy_teacher_layers(teacher_model, model, student_layers)
    return model, f"teacher layers {','.join(str(layer) for layer in student_layers)}"


def student_encoder_config(teacher_config, student_size):
    """The teacher's encoder config at `student_size` ("LAYERSxHIDDEN"): heads of `HEAD_DIM`, a 4H feed-forward
    layer, unfactorized embeddings and unshared layers; the teacher's vocabulary, positions and segments."""
    num_layers, hidden_dim = (int(value) for value in SIZE_PATTERN.match(student_size).groups())
    return {
        **teacher_config, "num_layers": num_layers, "hidden_dim": hidden_dim, "num_heads": hidden_dim // HEAD_DIM,
        "intermediate_dim": 4 * hidden_dim, "embedding_dim": None, "num_groups": None,
    }


def copy_teacher_layers(teacher_model, student_model, layers):
    """DistilBERT's initialisation: the student's layer i is the teacher's `layers[i]`; every other weight copied.

    Args:
        teacher_model: `BertClassifier`.
        student_model: `BertClassifier`, its encoder of `len(layers)` layers, otherwise of the teacher's shapes.
        layers: list of int, 0-based teacher layers.
    """
    teacher, student = teacher_model.encoder, student_model.encoder
    pairs = [(student.embeddings, teacher.embeddings), (student.pooler, teacher.pooler)]
    if student.embedding_projection is not None:
        pairs.append((student.embedding_projection, teacher.embedding_projection))
    pairs += [(student.transformer_layers[i], teacher.transformer_layers[index]) for i, index in enumerate(layers)]
    heads = [layer for layer in student_model.layers if layer is not student and layer.weights]  # by name
    pairs += [(layer, teacher_model.get_layer(layer.name)) for layer in heads]
    for target, source in pairs:
        target.set_weights(source.get_weights())
    copied = sum(len(target.weights) for target, _ in pairs)
    if copied != len(student_model.weights):  # a weight of a part this list misses would stay random
        raise ValueError(f"copy_teacher_layers: copied {copied} of the student's {len(student_model.weights)} weights.")


def _check_same_tokenizer(teacher, student):
    """The student's tokenizer must be the teacher's: the same vocabulary (or SentencePiece model) and casing."""
    if _tokenizer_identity(teacher) != _tokenizer_identity(student):
        raise errors.ArgumentError(
            "student", f"the student preset {student} tokenizes differently from the teacher {teacher} (another "
            "vocabulary or casing): their token ids would not mean the same. Take a student with the teacher's "
            "vocabulary (e.g. `pretrain` one from a preset with that vocabulary).",
        )


def _tokenizer_identity(preset):
    from keras_bert_app.convert import resolve
    from keras_bert_app.preprocessing.preset_tokenizer import SENTENCEPIECE

    resolved = resolve.resolve_preset(preset, fetch_weights=False)
    entry = resolved.config.get("tokenizer", {})
    if entry.get("type") == SENTENCEPIECE:
        return SENTENCEPIECE, resolved.sentencepiece_model_path.read_bytes()
    tokens = resolved.vocabulary_path.read_text(encoding="utf-8").splitlines()
    return "wordpiece", bool(entry.get("lowercase", True)), [token.strip() for token in tokens if token.strip()]
