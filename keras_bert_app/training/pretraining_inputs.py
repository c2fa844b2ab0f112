"""Which batches a pretraining run reads: TFRecords or a corpus, their shape, checked against the model."""

import glob
import os
from collections.abc import Sequence

from keras_bert_app import errors

DATA_FEATURES = (
    "input_ids", "input_mask", "segment_ids", "masked_lm_positions",
    "masked_lm_ids", "masked_lm_weights", "next_sentence_labels",
)


# The masking and pairing of a corpus (dynamic masking), as `create_pretraining_data` has them; records hold
# their own. Pairing None: the objective's own (`Objective.pairings[0]`).
CORPUS_MASKING_DEFAULTS = {
    "whole_word_masking": False, "masking": "token", "max_ngram": 3, "segmenter": None, "entity_masking": False,
    "pairing": None,
}


def data_arguments(data, corpus, max_seq_length=None, max_predictions=None, **masking):
    """`kba.pretrain`'s data arguments, checked: typed errors naming the argument.

    Exactly one of `data` and `corpus`; the masking and pairing options
    (`CORPUS_MASKING_DEFAULTS`) only with `corpus`, where a segmenter is
    checked (known, installed) before any work.

    Returns:
        dict: `data` (str or None), `corpus` (tuple of patterns or None),
        `max_seq_length`, `max_predictions` and the masking options,
        `masking` as the scheme (`whole_word_masking=True` makes `token`
        `whole_word`).
    """
    from keras_bert_app.data.masking import masking_scheme
    from keras_bert_app.data.segmentation import require_segmenter

    path_like = (str, os.PathLike)
    if (data is None) == (corpus is None):
        raise errors.ArgumentError(
            "data", "give exactly one of data (pretraining TFRecords) and corpus (text files for dynamic masking)."
        )
    for name, value in (("max_seq_length", max_seq_length), ("max_predictions", max_predictions)):
        if value is not None:
            errors.check_int(name, value, minimum=1)
    shape = {"max_seq_length": max_seq_length, "max_predictions": max_predictions}
    masking = {**CORPUS_MASKING_DEFAULTS, **masking}
    if data is not None:
        data = os.fspath(errors.check_type("data", data, path_like, "a file pattern (str or path)"))
        for name, default in CORPUS_MASKING_DEFAULTS.items():
            if masking[name] != default:
                raise errors.ArgumentError(
                    name,
                    f"{name}={masking[name]!r} applies to corpus (dynamic masking) only: the records in {data!r} "
                    f"hold their {'pairing' if name == 'pairing' else 'masking'} already (create-pretraining-data "
                    "chose it). Drop it, or pass corpus.",
                )
        return {"data": data, "corpus": None, **shape, **masking}
    corpus = corpus_files(corpus)
    segmenter, entity_masking = masking["segmenter"], masking["entity_masking"]
    if segmenter is not None:
        errors.check_type("segmenter", segmenter, str, "a segmenter name (str) or None")
    scheme = masking_scheme(masking["masking"], masking["max_ngram"], masking["whole_word_masking"], segmenter)
    errors.check_type("entity_masking", entity_masking, bool)
    if masking["pairing"] is not None:
        errors.check_choice("pairing", masking["pairing"], ("nsp", "sop", "full_sentences", "segments"))
        if masking["pairing"] == "segments" and (scheme != "token" or segmenter is not None):
            raise errors.ArgumentError(
                "pairing", f"pairing 'segments' (ELECTRA's) is masked after batching, token by token; expected "
                f"masking 'token' without a segmenter, got masking {scheme!r}"
                + (f" with segmenter {segmenter!r}." if segmenter is not None else "."),
            )
    if entity_masking and segmenter != "jieba":
        raise errors.ArgumentError(
            "entity_masking", f"entity masking needs segmenter='jieba' (its part-of-speech tags); got {segmenter!r}."
        )
    if segmenter is not None:
        require_segmenter(segmenter)
    return {"data": None, "corpus": corpus, **shape, **masking, "masking": scheme}


def check_corruption(corruption, objective, inputs):
    """`corruption` as a `(mask, random)` tuple of floats, or None; `ArgumentError` naming it otherwise.

    The shares of the masked positions that become `[MASK]` and a random
    token (the rest keep their token: the paper's MASK/RND/SAME, Table 8).
    Refused for objective "ltr" (nothing is masked) and for whole-word or
    n-gram masking of a corpus (they draw it per word, this per token).
    """
    if corruption is None:
        return None
    if isinstance(corruption, (str, bytes)) or not isinstance(corruption, Sequence) or len(corruption) != 2:
        raise errors.ArgumentTypeError(
            "corruption", f"corruption must be a pair (mask, random) of shares, e.g. (0.8, 0.1); got {corruption!r}."
        )
    mask, random = (errors.check_number("corruption", share, minimum=0, maximum=1) for share in corruption)
    if mask + random > 1 + 1e-9:
        raise errors.ArgumentError(
            "corruption", f"corruption shares mask {mask:g} + random {random:g} must be at most 1 (the rest is kept); "
            f"got {mask + random:g}."
        )
    if objective == "ltr":
        raise errors.ArgumentError(
            "corruption", "corruption is refused for objective 'ltr': a left-to-right LM reads its text uncorrupted."
        )
    if inputs["corpus"] is not None and inputs["masking"] != "token":
        raise errors.ArgumentError(
            "corruption", f"corruption is drawn per token; masking {inputs['masking']!r} draws it per word: "
            "use masking 'token' with corruption."
        )
    return (mask, random)


def corpus_files(corpus):
    """The corpus patterns as a tuple of str, each matching at least one file."""
    if isinstance(corpus, (str, os.PathLike)):
        corpus = [corpus]
    if not isinstance(corpus, Sequence) or not corpus:
        raise errors.ArgumentTypeError(
            "corpus", f"corpus must be a file pattern or a non-empty list of them; got {corpus!r}."
        )
    patterns = tuple(
        os.fspath(errors.check_type("corpus", pattern, (str, os.PathLike), "a file pattern (str or path)"))
        for pattern in corpus
    )
    missing = [pattern for pattern in patterns if not glob.glob(os.path.expanduser(pattern))]
    if missing:
        raise errors.MissingFileError("corpus", f"corpus: no file matches {missing}.")
    return patterns


def data_shape(settings, encoder_config):
    """`max_seq_length`, `max_predictions` and `pairing` of the data, checked against the records, objective and model.

    The pairing of records is read beside them (`records_pairing`), that of a
    corpus is `settings.pairing` (None: the objective's default); either must
    be one the objective learns from (`objectives.check_pairing`).
    """
    from keras_bert_app.training.objectives import check_pairing, get_objective

    if settings.data is not None:
        *found, pair_labels = records_shape(settings.data)
        for name, given, value in zip(("max_seq_length", "max_predictions"),
                                      (settings.max_seq_length, settings.max_predictions), found):
            if given is not None and given != value:
                raise errors.ArgumentError(name, f"{name} is {given} but the records in {settings.data!r} hold {value}.")
        if found[1] == 0:
            raise errors.DataError(
                f"The records in {settings.data!r} hold no masked positions (masked_lm_positions is empty): "
                f"the {settings.objective} objective predicts them. Write records with --max-predictions-per-seq "
                "above 0, or pass --corpus."
            )
        shape = tuple(found)
        pairing, source = _records_pairing(settings.data, pair_labels)
        check_pairing(settings, pairing, records=settings.data, source=source)
    else:
        shape = (settings.max_seq_length or 128, settings.max_predictions or 20)
        pairing = settings.pairing or get_objective(settings.objective).pairings[0]
        check_pairing(settings, pairing)
    limit = encoder_config.get("max_sequence_length", 512)
    if shape[0] > limit:
        raise errors.ArgumentError(
            "max_seq_length", f"Sequences of {shape[0]} tokens are longer than the model's max_sequence_length {limit}."
        )
    return {"max_seq_length": shape[0], "max_predictions": shape[1], "pairing": pairing}


def _records_pairing(pattern, pair_labels):
    import tensorflow as tf

    from keras_bert_app.data.pretraining_records import records_pairing

    try:
        return records_pairing(sorted(tf.io.gfile.glob(pattern)), pair_labels)
    except ValueError as error:
        raise errors.DataError(str(error)) from None


def records_shape(pattern, argument="data", label="records"):
    """`(max_seq_length, max_predictions, has_pair_labels)` of the records `pattern` matches, after checking them.

    Every file's first record is read: each must hold the pretraining
    features, and all one shape (a phase reads one length). Files without a
    record (`create-pretraining-data` writes some when asked for more shards
    than it has instances) are passed over. Full-sentence records have no
    `next_sentence_labels`: `has_pair_labels` False.
    """
    import tensorflow as tf

    files = sorted(tf.io.gfile.glob(pattern))
    if not files:
        raise errors.MissingFileError(argument, f"{argument}: no file matches {pattern!r}.")
    shapes = {}
    for path in files:
        shape = _first_record_shape(path)
        if shape is not None:
            shapes.setdefault(shape, []).append(path)
    if not shapes:
        more = f" and {len(files) - 1} more" if len(files) > 1 else ""
        raise errors.DataError(f"{files[0]}{more} ({argument} {pattern!r}) hold no record.")
    if len(shapes) > 1:
        what = "sequences of different lengths" if len({shape[0] for shape in shapes}) > 1 else "records of different shapes"
        listed = "; ".join(
            f"{length} tokens, {predictions} predictions{'' if pairs else ', no pair labels'}: {paths[0]}"
            + (f" and {len(paths) - 1} more" if len(paths) > 1 else "")
            for (length, predictions, pairs), paths in shapes.items()
        )
        raise errors.DataError(
            f"The {label} in {pattern!r} hold {what} ({listed}); a phase reads one shape: give a pattern that "
            "matches the records of one create-pretraining-data run."
        )
    return next(iter(shapes))


def _first_record_shape(path):
    """`records_shape` of one file's first record; None for a file without records."""
    import tensorflow as tf

    if tf.io.gfile.isdir(path):
        raise errors.DataError(f"{path} is a folder, not a TFRecord file: give a pattern of files, such as "
                               f"'{path.rstrip('/')}/*.tfrecord'.")
    raw = _first_record(path)
    if raw is None:
        return None
    try:
        example = tf.train.Example.FromString(raw)
    except Exception as error:  # protobuf's DecodeError
        raise errors.DataError(f"{path} is not a readable TFRecord file (its first record: {error}).") from None
    features = example.features.feature
    without_label = set(DATA_FEATURES) - {"next_sentence_labels"}
    if set(features) not in (set(DATA_FEATURES), without_label):
        raise errors.DataError(
            f"{path}: expected pretraining features {sorted(DATA_FEATURES)} (full sentences: without "
            f"next_sentence_labels); got {sorted(features)}."
        )

    def length(name):
        feature = features[name]
        return len(feature.int64_list.value) or len(feature.float_list.value)

    shape = (length("input_ids"), length("masked_lm_positions"))
    for name, expected in (("input_mask", shape[0]), ("segment_ids", shape[0]),
                           ("masked_lm_ids", shape[1]), ("masked_lm_weights", shape[1])):
        if length(name) != expected:
            raise errors.DataError(f"{path}: feature {name!r} has length {length(name)}, expected {expected}.")
    return (*shape, "next_sentence_labels" in features)


def _first_record(path):
    """The bytes of a TFRecord file's first record (None for an empty file), read directly.

    A TFRecord is its length (8 bytes, little-endian), the length's CRC (4),
    the data and its CRC (4); reading them directly avoids a
    `tf.data.TFRecordDataset` per shard at every start. The training pass
    checks the CRCs.
    """
    import struct

    import tensorflow as tf

    with tf.io.gfile.GFile(path, "rb") as file:
        header = file.read(12)
        if not header:
            return None
        length = struct.unpack("<Q", header[:8])[0] if len(header) == 12 else -1
        data = file.read(length) if 0 <= length <= (1 << 31) else b""
    if len(data) != length:
        raise errors.DataError(f"{path} is not a readable TFRecord file (it breaks off in its first record).")
    return data


def unreadable_record_file(pattern):
    """The first file `pattern` matches that TensorFlow cannot read to its end (truncated, corrupt), or None.

    Reads every record: for the message of a failed run, not before one.
    """
    import tensorflow as tf

    for path in sorted(tf.io.gfile.glob(pattern)):
        try:
            for _ in tf.data.TFRecordDataset(path):
                pass
        except tf.errors.OpError as error:
            return path, error.message.splitlines()[0]
    return None


def pretraining_batches(settings, resolved, repeat=True):
    """The global-batch dataset, repeated forever (fit stops after `steps`) or one pass.

    Full batches only, so every step has the same global batch (and splits
    evenly across replicas). The objective's own transform (ELECTRA's
    masking) comes after the repeat, so every epoch gets fresh draws.
    """
    from keras_bert_app.training.objectives import corruption_of, get_objective, masked_after_batching

    if settings.data is not None:
        from keras_bert_app.data.pretraining_records import pretraining_dataset

        dataset = pretraining_dataset(
            settings.data, settings.batch_size, max_seq_length=settings.max_seq_length,
            max_predictions_per_seq=settings.max_predictions, shuffle=True, seed=settings.seed,
            repeat=repeat, drop_remainder=True, pair_labels=settings.pairing != "full_sentences",
        )
    else:
        from keras_bert_app.data.dynamic_pretraining import dynamic_pretraining_dataset

        dataset = dynamic_pretraining_dataset(
            list(settings.corpus), _tokenizer(resolved), settings.batch_size, max_seq_length=settings.max_seq_length,
            max_predictions_per_seq=settings.max_predictions, seed=settings.seed, drop_remainder=True,
            whole_word_masking=settings.whole_word_masking, masking=settings.masking, max_ngram=settings.max_ngram,
            segmenter=settings.segmenter, entity_masking=settings.entity_masking, log=settings.say,
            pairing=settings.pairing, corruption=corruption_of(settings),
        )
        dataset = dataset.repeat() if repeat else dataset
    if settings.corruption is not None and not masked_after_batching(settings):
        dataset = _corrupted_anew(dataset, settings, resolved)
    return get_objective(settings.objective).prepare_batches(dataset, settings, resolved)


def _corrupted_anew(dataset, settings, resolved):
    """`corruption` on batches masked 80/10/10 already (records, pair-by-pair corpora): their masked positions'
    tokens drawn again from the originals, per batch (`data.electra_masking`, generic in its shares)."""
    from keras_bert_app.data.electra_masking import electra_masking

    mask, random = settings.corruption
    vocabulary = list(_tokenizer(resolved).get_vocabulary())
    return electra_masking(dataset, vocabulary.index("[MASK]"), mask_probability=mask, random_probability=random,
                           vocabulary_size=len(vocabulary), seed=settings.seed)


def _tokenizer(resolved):
    """The preset's own tokenizer: WordPiece, or ALBERT's SentencePiece (`tokenizer_from_preset`)."""
    from keras_bert_app.preprocessing.preset_tokenizer import tokenizer_from_preset

    return tokenizer_from_preset(resolved)
