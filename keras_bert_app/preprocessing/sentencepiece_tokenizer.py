"""`SentencePieceTokenizer`: ALBERT's SentencePiece tokenizer as TensorFlow ops."""

import base64
import pathlib
import weakref

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert_app import errors, presets
from keras_bert_app.preprocessing import bert_normalization, sentencepiece_model
from keras_bert_app.preprocessing.preprocessing_layer import TokenizerLayer

SENTENCEPIECE_FILE = "spiece.model"
# The `type` of the "tokenizer" entry of a preset's config.json that names this tokenizer.
TOKENIZER_TYPE = "sentencepiece"
# ALBERT's special pieces: attribute prefix -> piece.
SPECIAL_PIECES = {"pad": "<pad>", "unk": "<unk>", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}
# Unicode White_Space (Rust's `char::is_whitespace`, which HF's WhitespaceSplit uses).
WHITESPACE = r"[\t\n\x0B\x0C\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]+"


@keras.saving.register_keras_serializable(package="keras_bert_app")
class SentencePieceTokenizer(TokenizerLayer):
    """ALBERT's SentencePiece tokenizer (Lan et al. 2019), as TensorFlow ops.

    ALBERT's normalisation runs first, as google-research/albert's
    `preprocess_text` and HF's `AlbertTokenizer` do ("``" and "''" become
    `"`, optional accent stripping and lower-casing, whitespace collapsed),
    then the SentencePiece model in tensorflow-text's op: it works inside
    `tf.data` and a SavedModel on every Keras backend. A scalar string gives
    a 1-D `tf.Tensor` of ids, a batch a `tf.RaggedTensor` `[batch, (tokens)]`.

    The ids equal transformers' `AlbertTokenizer` built from the same
    `spiece.model` (`add_special_tokens=False`) on ordinary text. Literal
    special tokens (`[SEP]`, `[MASK]`) stay text here; rare edge cases (marks
    of combining class 0, exotic whitespace, a word-final "Σ", Hangul) differ
    from HF or from the original script.

    Args:
        proto: str or path of a SentencePiece model (`spiece.model`), or its
            bytes. It must hold `<pad>`, `<unk>`, `[CLS]`, `[SEP]` and `[MASK]`.
        lowercase: bool. Lower-case the text (ALBERT's uncased models; HF's
            `do_lower_case`).
        strip_accents: bool. NFKD and drop combining marks (HF's
            `keep_accents=False`).
        dtype: "int32" or "int64", the dtype of the ids.

    Example:
    ```python
    tokenizer = keras_bert_app.SentencePieceTokenizer("spiece.model")
    tokenizer(["The ``quick'' brown fox."])          # <tf.RaggedTensor [[...]]>
    tokenizer.tokenize_as_strings("Café")            # [b'\u2581cafe'] with such a piece
    preprocessor = keras_bert_app.BertPreprocessor(tokenizer, sequence_length=16)
    ```
    """

    def __init__(self, proto, lowercase=True, strip_accents=True, dtype="int32", **kwargs):
        dtype = getattr(dtype, "name", dtype)  # a DTypePolicy from a config
        errors.check_choice("dtype", dtype, ("int32", "int64"))
        super().__init__(dtype=dtype, **kwargs)
        # === Model ===
        self._proto, self._pieces, _ = sentencepiece_model.read_model(proto)
        self._piece_to_id = {}
        for index, piece in enumerate(self._pieces):
            self._piece_to_id.setdefault(piece, index)
        missing = [piece for piece in SPECIAL_PIECES.values() if piece not in self._piece_to_id]
        if missing:
            raise errors.DataError(
                f"{proto if isinstance(proto, (str, pathlib.PurePath)) else 'The SentencePiece model'}: "
                f"no piece {missing}; ALBERT's tokenizer needs {list(SPECIAL_PIECES.values())}."
            )
        for name, piece in SPECIAL_PIECES.items():
            setattr(self, f"{name}_token", piece)
            setattr(self, f"{name}_token_id", self._piece_to_id[piece])
        self.lowercase = errors.check_type("lowercase", lowercase, bool)
        # As `BertTokenizer`'s setting: a literal [SEP] in the text is text (ALBERT's are control pieces).
        self.special_tokens_in_strings = False
        self.strip_accents = errors.check_type("strip_accents", strip_accents, bool)
        # === TF resources ===
        self._id_dtype = tf.int32 if dtype == "int32" else tf.int64
        self._graph_sentencepiece = weakref.WeakKeyDictionary()  # graph -> TF Text's tokenizer made in it
        self._tokens_tensor = tf.constant(self._pieces)
        strings = [tf.TensorSpec([None], tf.string)]
        self._tokenize_graph = tf.function(self._tokenize_batch, input_signature=strings, autograph=False)
        self._offsets_graph = tf.function(self._tokenize_with_offsets_batch, input_signature=strings, autograph=False)
        self._detokenize_graph = tf.function(lambda ids: self._sentencepiece.detokenize(ids), autograph=False)

    @property
    def _sentencepiece(self):
        """TF Text's SentencePiece tokenizer, its model resource made in the graph being traced.

        An eager model resource is deleted whenever TF clears its kernel cache
        (as `tf.random.set_seed` does), and later calls fail; made in each
        traced graph, it lives with that graph and goes into SavedModels.
        """
        if tf.executing_eagerly():
            raise RuntimeError("SentencePieceTokenizer: TF Text's tokenizer is only made inside a traced graph.")
        graph = tf.compat.v1.get_default_graph()
        if graph not in self._graph_sentencepiece:
            self._graph_sentencepiece[graph] = tf_text.SentencepieceTokenizer(model=self._proto, out_type=self._id_dtype)
        return self._graph_sentencepiece[graph]

    # === Vocabulary lookups (Python): `TokenizerLayer` ===
    def lookup_tables(self):
        return self._pieces, self._piece_to_id, "SentencePiece model"

    # === Tokenization (TF ops) ===
    def normalize(self, text):
        """ALBERT's text normalisation (TF ops): tf.string tensor -> the same shape."""
        text = bert_normalization.valid_utf8(text)
        text = tf.strings.regex_replace(text, "``|''", '"')
        if self.strip_accents:
            text = tf.strings.regex_replace(tf_text.normalize_utf8(text, "NFKD"), r"\p{M}", "")
        if self.lowercase:
            text = _lower(text)
        text = tf.strings.regex_replace(text, WHITESPACE, " ")
        return tf.strings.regex_replace(text, "^ | $", "")

    def tokenize(self, inputs):
        """Strings -> piece ids.

        Args:
            inputs: str, list of str, or tf.string tensor of rank 0 or 1 (or
                a ragged/higher-rank one).

        Returns:
            `tf.Tensor` [(tokens)] for a scalar; otherwise `tf.RaggedTensor`
            [..., (tokens)].
        """
        with tf.device("cpu"):
            if isinstance(inputs, tf.RaggedTensor):
                return inputs.with_flat_values(self.tokenize(inputs.flat_values))
            inputs = tf.convert_to_tensor(inputs, dtype=tf.string)
            if inputs.shape.rank == 0:
                return self.tokenize(tf.reshape(inputs, [1]))[0]
            if inputs.shape.rank != 1:
                ragged = tf.RaggedTensor.from_tensor(inputs, ragged_rank=inputs.shape.rank - 1)
                return ragged.with_flat_values(self.tokenize(ragged.flat_values))
            # (In a graph too: traced once per tokenizer, then called, rather than traced into each graph.)
            return self._tokenize_graph(inputs)

    def _tokenize_batch(self, text):
        # text: [batch] tf.string -> ids [batch, (tokens)]
        return self._sentencepiece.tokenize(self.normalize(text))

    def tokenize_with_offsets(self, inputs):
        """Strings -> (piece ids, start offsets, end offsets).

        Offsets are UTF-8 byte offsets into each input string (start
        inclusive, end exclusive; invalid UTF-8 is first replaced by U+FFFD),
        as HF gives them: without the space a "▁" stands for or the
        characters SentencePiece drops at a piece's ends; a lone "▁" piece
        spans the character after it. The ids equal `tokenize`'s.

        Returns:
            (ids, starts, ends): the shapes of `tokenize(inputs)`; offsets int64.
        """
        with tf.device("cpu"):
            inputs = tf.convert_to_tensor(inputs, dtype=tf.string)
            if inputs.shape.rank == 0:
                return tuple(x[0] for x in self.tokenize_with_offsets(tf.reshape(inputs, [1])))
            if inputs.shape.rank != 1:
                raise ValueError(f"tokenize_with_offsets takes a string or a [batch] of strings; got rank {inputs.shape.rank}.")
            return self._offsets_graph(inputs)

    def _tokenize_with_offsets_batch(self, text):
        # text: [batch] tf.string -> ids, starts, ends [batch, (pieces)]
        text = bert_normalization.valid_utf8(text)
        chars, raw_starts = tf.strings.unicode_split_with_offsets(text, "UTF-8")  # [batch, (chars)]
        raw_ends = raw_starts + tf.cast(tf.strings.length(chars), tf.int64)  # bytes
        normalized = chars.with_flat_values(self._normalize_characters(chars))  # [batch, (chars)] each 0+ chars
        text_normalized = tf.strings.reduce_join(normalized, axis=1)  # [batch]
        if self.lowercase:  # the whole text, as `normalize` does it ("ΟΔΟΣ" -> "οδος"); the same lengths
            text_normalized = _lower(text_normalized)
            normalized = normalized.with_flat_values(_lower(normalized.flat_values))
        lengths = tf.cast(tf.strings.length(normalized.flat_values), tf.int64)
        char_ends = normalized.with_flat_values(lengths).to_tensor()  # [batch, chars] (padded with 0)
        char_ends = tf.cumsum(char_ends, axis=1)  # each character's end byte in the normalized row
        ids, starts, ends = self._sentencepiece.tokenize_with_offsets(text_normalized)
        starts, ends = tf.cast(starts, tf.int64), tf.cast(ends, tf.int64)
        # Normalized byte -> the raw character that produced it (padding columns end at the row's total, never chosen).
        real = tf.sequence_mask(chars.row_lengths(), tf.shape(char_ends, out_type=tf.int64)[1])
        padded = tf.where(real, char_ends, tf.int64.max)
        first = tf.searchsorted(padded, starts.to_tensor(), side="right", out_type=tf.int64)
        last = tf.searchsorted(padded, (ends - 1).to_tensor(), side="right", out_type=tf.int64)
        # Each piece's first and last character as flat indices (past the row, an empty span at its end: clamped).
        rows = starts.value_rowids()
        base = tf.gather(chars.row_starts(), rows)  # flat index of each row's first character
        last_index = base + tf.maximum(tf.gather(chars.row_lengths(), rows) - 1, 0)
        first = tf.minimum(base + tf.RaggedTensor.from_tensor(first, lengths=ids.row_lengths()).flat_values, last_index)
        last = tf.minimum(base + tf.RaggedTensor.from_tensor(last, lengths=ids.row_lengths()).flat_values, last_index)
        # As in HF, a piece's span leaves out the characters at its ends that SentencePiece drops or reads as a
        # space (whitespace, the space its "\u2581" stands for, controls, format characters): those alone give no
        # piece. A piece of only such characters (a lone "\u2581") spans the next character that is shown.
        unique, index = tf.unique(normalized.flat_values)
        shown = tf.cast(tf.gather(self._sentencepiece.tokenize(unique).row_lengths() > 0, index), tf.int64)  # [chars]
        shown_index = tf.where(shown > 0)[:, 0]
        shown_through = tf.cumsum(shown)  # [chars]: how many shown characters up to each
        next_shown = tf.gather(tf.concat([shown_index, tf.size(shown, tf.int64)[None]], 0), shown_through - shown)
        previous_shown = tf.gather(tf.concat([[-1], shown_index], 0), shown_through)
        next_shown, previous_shown = tf.gather(next_shown, first), tf.gather(previous_shown, last)
        has_next = next_shown <= last_index
        inside = next_shown <= last
        first_character = tf.where(has_next, next_shown, first)
        last_character = tf.where(inside, previous_shown, tf.where(has_next, next_shown, last))
        piece_starts = tf.gather(raw_starts.flat_values, first_character)
        piece_ends = tf.gather(raw_ends.flat_values, last_character)
        return ids, starts.with_flat_values(piece_starts), ends.with_flat_values(piece_ends)

    def _normalize_characters(self, chars):
        """ALBERT's normalisation but lower-casing of each character of `chars` (ragged [batch, (chars)]) -> flat [chars].

        Equal to `normalize` on the joined text up to whitespace, which
        becomes one space per character here (SentencePiece collapses runs),
        and case (lower-casing needs the context: a word-final "Σ" is "ς").
        """
        flat = chars.flat_values
        for mark in ("`", "'"):  # "``" then "''" -> '"': pairs from the left of each run, as str.replace
            position, remaining = _runs(chars.with_flat_values(tf.equal(flat, mark)))
            opens = (position >= 0) & (position % 2 == 0) & (remaining >= 1)
            closes = (position >= 0) & (position % 2 == 1)
            flat = tf.where(opens, '"', tf.where(closes, "", flat))
        if self.strip_accents:
            flat = tf.strings.regex_replace(tf_text.normalize_utf8(flat, "NFKD"), r"\p{M}", "")
        return tf.strings.regex_replace(flat, WHITESPACE, " ")

    def detokenize(self, ids):
        """Piece ids [..., tokens] -> text [...] (SentencePiece's decoding; normalisation is not undone)."""
        with tf.device("cpu"):
            return self._detokenize_graph(ids) if tf.executing_eagerly() else self._sentencepiece.detokenize(ids)

    # === Config and presets ===
    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "proto": base64.b64encode(self._proto).decode("ascii"),
                "lowercase": self.lowercase,
                "strip_accents": self.strip_accents,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("proto"), str):  # get_config's base64 text, not a path
            config["proto"] = base64.b64decode(config["proto"])
        return super().from_config(config)

    @classmethod
    def from_preset(cls, name_or_path, **kwargs):
        """The tokenizer of a preset whose "tokenizer" entry is `{"type": "sentencepiece", ...}`.

        Uses `sentencepiece_model` (default `spiece.model`), `lowercase` and
        `strip_accents` from `config.json["tokenizer"]`; `kwargs` override.
        An HF folder saved by transformers 5 (`tokenizer.json`, no
        `spiece.model`) works too (`resolve.ResolvedPreset.sentencepiece_model_path`).

        Raises:
            keras_bert_app.convert.resolve.PresetError: a preset without its
                SentencePiece model (a built-in ALBERT preset before its
                checkpoint is converted: the message says where it comes from).
        """
        from keras_bert_app.convert import resolve

        resolved = resolve.resolve_preset(name_or_path)
        config = resolved.config.get("tokenizer", {})
        path = resolved.sentencepiece_model_path
        kwargs.setdefault("lowercase", bool(config.get("lowercase", True)))
        kwargs.setdefault("strip_accents", bool(config.get("strip_accents", True)))
        return cls(proto=path, **kwargs)

    def save_to_preset(self, path):
        """Write `spiece.model` and the "tokenizer" entry of `config.json` in `path` (other entries kept)."""
        folder = pathlib.Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / SENTENCEPIECE_FILE).write_bytes(self._proto)
        presets.write_config_entry(
            folder,
            "tokenizer",
            {"type": TOKENIZER_TYPE, "sentencepiece_model": SENTENCEPIECE_FILE, "lowercase": self.lowercase,
             "strip_accents": self.strip_accents},
        )
        return folder


def _lower(text):
    """Unicode lower-casing of a tf.string tensor (as Python's `str.lower`), NUL bytes kept (TF's op ends text at one)."""
    parts = tf.strings.split(tf.reshape(text, [-1]), "\x00")  # [strings, (parts)]
    parts = tf.strings.join([tf.strings.lower(parts, encoding="utf-8"), "\x00"])  # each part and a NUL
    joined = tf.strings.reduce_join(parts, axis=-1)  # (a NUL separator attribute would be cut to "")
    length = tf.strings.length(joined)
    return tf.reshape(tf.strings.substr(joined, tf.zeros_like(length), length - 1), tf.shape(text))


def _runs(is_mark):
    """For ragged bool [batch, (chars)]: each element's position in its run of Trues, and how many Trues follow it.

    Returns flat int64 tensors (position, remaining); -1 for False elements. A run ends at its row's end.
    """
    flat = is_mark.flat_values
    size = tf.shape(flat, out_type=tf.int64)[0]
    index = tf.range(size)
    row = is_mark.value_rowids()
    same_row_before = tf.concat([[False], tf.equal(row[1:], row[:-1])], axis=0)
    previous = tf.concat([[False], flat[:-1]], axis=0) & same_row_before
    starts = flat & ~previous
    run = tf.maximum(tf.cumsum(tf.cast(starts, tf.int64)) - 1, 0)  # the run of each element (where flat)
    run_starts = tf.boolean_mask(index, starts)
    run_lengths = tf.math.unsorted_segment_sum(
        tf.cast(flat, tf.int64), run, tf.maximum(tf.size(run_starts, tf.int64), 1)
    )
    position = index - tf.gather(tf.concat([run_starts, [0]], axis=0), run)
    remaining = tf.gather(run_lengths, run) - position - 1
    return tf.where(flat, position, -1), tf.where(flat, remaining, -1)
