"""`BertTokenizer`: BERT's WordPiece tokenizer as TensorFlow ops."""

import os
import pathlib

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert_app import errors
from keras_bert_app import presets
from keras_bert_app.preprocessing import bert_normalization
from keras_bert_app.preprocessing import eager_calls
from keras_bert_app.preprocessing import offsets
from keras_bert_app.preprocessing import special_tokens
from keras_bert_app.preprocessing.preprocessing_layer import TokenizerLayer
from keras_bert_app.preprocessing.vocabulary import SPECIAL_TOKENS
from keras_bert_app.preprocessing.vocabulary import read_vocabulary
from keras_bert_app.preprocessing.vocabulary import write_vocabulary

SUFFIX_INDICATOR = "##"
# Batches of at least this many strings run in parallel shards in the compiled graph.
MIN_SHARDED_BATCH = 256
MAX_SHARDS = 8
# The original BERT's cap on the characters of one word; longer words -> [UNK].
MAX_INPUT_CHARS_PER_WORD = 200


@keras.saving.register_keras_serializable(package="keras_bert_app")
class BertTokenizer(TokenizerLayer):
    """BERT's WordPiece tokenizer (Devlin et al. 2018), as TensorFlow ops.

    Follows the original `FullTokenizer`: text cleaning, CJK ideographs split
    off, lower-casing plus accent stripping when `lowercase=True`, punctuation
    splitting, then greedy longest-match-first WordPiece with `##`
    continuation pieces; a word that cannot be decomposed, or that has more
    than `max_input_chars_per_word` characters, becomes `[UNK]`.

    Special tokens written in the text: by default (the original's rule) a
    literal `[CLS]`, `[SEP]`, `[MASK]`, `[PAD]` or `[UNK]` is ordinary text
    (`"the [CLS] token"` gives `the`, `[`, `cl`, `##s`, `]`, `token`), so user
    text can never inject a segment break. With
    `special_tokens_in_strings=True` (HF `tokenizers`' rule) each of those
    literals, matched exactly and case-sensitively, is its special id:
    `"foo[SEP]bar"` gives `foo`, `[SEP]`, `bar`. The setting is saved in the
    config and the preset, so preprocessors and SavedModels follow it.

    Runs as TF ops (tensorflow-text's FastWordpiece), inside `tf.data` and a
    SavedModel under every Keras backend. A scalar string gives a 1-D
    `tf.Tensor` of ids, a batch a `tf.RaggedTensor` `[batch, (tokens)]`.

    The ids equal HF `tokenizers.BertWordPieceTokenizer` (`clean_text`,
    `handle_chinese_chars`, `add_special_tokens=False`) on text without
    literal special tokens, and on all text with
    `special_tokens_in_strings=True`, except: the per-word cap is the
    original's 200 characters (HF: 100), and ~1,000 rare code points newer
    than HF's Unicode 9 tables (and CJK Extension E U+2B820..U+2B91F) are
    classified by current Unicode (tests/preprocessing/test_hf_equality.py).

    Bad input: empty or whitespace-only strings give no ids; invalid UTF-8
    is replaced by U+FFFD and dropped; unknown symbols give `[UNK]`.

    Args:
        vocabulary: str or `pathlib.Path` of a `vocab.txt`, or a list of str
            tokens (line/list index = id). It must hold `[PAD]`, `[UNK]`,
            `[CLS]`, `[SEP]` and `[MASK]`, have no duplicates, no empty lines.
        lowercase: bool. Lower-case and strip accents (uncased models).
        max_input_chars_per_word: int. Longer words become `[UNK]`.
        special_tokens_in_strings: bool. Whether a literal special token in
            the text is that token (HF's rule) rather than text (the
            original's rule, the default); see above.
        dtype: "int32" or "int64", the dtype of the ids.

    Example:
    ```python
    tokenizer = keras_bert_app.BertTokenizer.from_preset("bert_base_uncased")
    # <tf.RaggedTensor [[1996, 4248, 2829, 4419, 1012]]>
    tokenizer(["The quick brown fox."])
    # UTF-8 byte offsets
    ids, starts, ends = tokenizer.tokenize_with_offsets(["naïve café"])
    tokenizer.tokenize_as_strings("a [MASK] b")   # [b'a', b'[', b'mask', b']', b'b']
    hf_rule = keras_bert_app.BertTokenizer.from_preset(
        "bert_base_uncased", special_tokens_in_strings=True
    )
    hf_rule.tokenize_as_strings("a [MASK] b")     # [b'a', b'[MASK]', b'b']
    ```
    """

    def __init__(
        self,
        vocabulary,
        lowercase=True,
        max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD,
        special_tokens_in_strings=False,
        dtype="int32",
        **kwargs,
    ):
        if dtype not in ("int32", "int64"):
            raise ValueError(f"BertTokenizer: dtype must be 'int32' or 'int64', got {dtype!r}")
        super().__init__(dtype=dtype, **kwargs)

        # === Vocabulary ===
        # Plain data, set past Keras' tracking (which would walk all 30k entries).
        object.__setattr__(self, "_vocabulary", read_vocabulary(vocabulary))
        object.__setattr__(self, "_token_to_id", {token: i for i, token in enumerate(self._vocabulary)})
        self.lowercase = bool(lowercase)
        self.max_input_chars_per_word = int(max_input_chars_per_word)
        if self.max_input_chars_per_word < 1:
            raise ValueError(
                "BertTokenizer: max_input_chars_per_word must be >= 1, got "
                f"{max_input_chars_per_word}"
            )
        self.special_tokens_in_strings = errors.check_type(
            "special_tokens_in_strings", special_tokens_in_strings, bool
        )
        for token in SPECIAL_TOKENS:
            name = token.strip("[]").lower()
            setattr(self, f"{name}_token", token)
            setattr(self, f"{name}_token_id", self._token_to_id[token])

        # === TF resources ===
        self._id_dtype = tf.int32 if dtype == "int32" else tf.int64

        def wordpiece(max_bytes_per_word, no_pretokenization):
            return tf_text.FastWordpieceTokenizer(
                vocab=self._vocabulary, suffix_indicator=SUFFIX_INDICATOR, max_bytes_per_word=max_bytes_per_word,
                token_out_type=self._id_dtype, unknown_token=self.unk_token, no_pretokenization=no_pretokenization,
            )

        # The fast path: FastWordpiece splits on whitespace, punctuation and
        # CJK ideographs itself ("end-to-end"), as BERT does. It caps words in
        # bytes, not characters: a word of more than `cap` bytes comes out as
        # one [UNK], and its line is redone on the exact path below.
        self._text_wordpiece = wordpiece(self.max_input_chars_per_word, no_pretokenization=False)
        # The exact path (and offsets): words split from the raw text, then
        # WordPiece per word; a word of n characters has at most 4n bytes.
        self._max_bytes_per_word = 4 * self.max_input_chars_per_word
        self._word_wordpiece = wordpiece(self._max_bytes_per_word, no_pretokenization=True)
        self._tokens_tensor = tf.constant(self._vocabulary)
        self._special_token_ids = [self._token_to_id[token] for token in SPECIAL_TOKENS]
        # Eager calls run op by op until enough work makes a compiled graph
        # pay (`eager_calls`); that graph splits a large batch in shards
        # that run in parallel (one per CPU core).
        strings = [tf.TensorSpec([None], tf.string)]
        self._tokenize_graph = tf.function(self._tokenize_sharded, input_signature=strings, autograph=False)
        # Traced once and called from each shard, and from the fast path's
        # redo of long words: one copy of each graph, not one per call site
        # (tracing, not running, is most of a first call's cost).
        self._batch_graph = tf.function(self._tokenize_batch, input_signature=strings, autograph=False)
        self._exact_graph = tf.function(self._tokenize_text_with_offsets, input_signature=strings, autograph=False)
        self._tokenize_with_offsets_graph = tf.function(
            self._tokenize_with_offsets_batch, input_signature=strings, autograph=False
        )
        self._eager_tokenize = eager_calls.EagerRunner(self._tokenize_graph, self._tokenize_batch)
        self._eager_tokenize_with_offsets = eager_calls.EagerRunner(
            self._tokenize_with_offsets_graph, self._tokenize_with_offsets_batch
        )

    # === Vocabulary lookups (Python): `TokenizerLayer` ===
    def lookup_tables(self):
        return self._vocabulary, self._token_to_id, "vocabulary"

    # === Tokenization (TF ops) ===
    def tokenize(self, inputs):
        """Strings -> token ids.

        Args:
            inputs: str, list of str, or tf.string tensor of any rank.

        Returns:
            `tf.Tensor` [(tokens)] for a scalar; otherwise `tf.RaggedTensor`
            [..., (tokens)] with one more (ragged) dimension than `inputs`.
        """
        # In a graph (tf.data, a SavedModel), a call of the function traced once per tokenizer: each
        # `map` or serving function that tokenizes would otherwise trace the whole graph anew (seconds).
        fn = self._eager_tokenize if tf.executing_eagerly() else self._batch_graph
        with tf.device("cpu"):
            return eager_calls.map_over_strings(fn, inputs, name="BertTokenizer")

    def tokenize_with_offsets(self, inputs):
        """Strings -> (token ids, start offsets, end offsets).

        Offsets are UTF-8 byte offsets into each input string (start
        inclusive, end exclusive), so `text.encode()[start:end]` is the
        original text of a token; for a `[UNK]` word it is the whole word,
        and characters dropped by cleaning (controls) or by accent stripping
        are inside or between the spans. `byte_to_char_offsets` converts to
        character (code point) offsets. Invalid UTF-8 is first replaced by
        U+FFFD, and offsets then refer to that repaired string.

        Returns:
            (ids, starts, ends): same shapes as `tokenize(inputs)`; the
            offsets are int64.
        """
        eager = tf.executing_eagerly()
        fn = self._eager_tokenize_with_offsets if eager else self._tokenize_with_offsets_graph
        with tf.device("cpu"):
            return eager_calls.map_over_strings(fn, inputs, num_outputs=3, name="BertTokenizer")

    # --- the fast path ---
    def _tokenize_sharded(self, text):
        # text: [batch] tf.string -> ids [batch, (tokens)]
        num_shards = min(os.cpu_count() or 1, MAX_SHARDS)
        if num_shards == 1:
            return self._tokenize_batch(text)

        def sharded():
            size = tf.shape(text, out_type=tf.int64)[0]
            bounds = [size * i // num_shards for i in range(num_shards + 1)]
            shards = [self._batch_graph(text[start:stop]) for start, stop in zip(bounds[:-1], bounds[1:])]
            return tf.concat(shards, axis=0)

        return tf.cond(tf.size(text) >= MIN_SHARDED_BATCH, sharded, lambda: self._batch_graph(text))

    def _tokenize_batch(self, text):
        # text: [batch] tf.string -> ids [batch, (tokens)]
        if not self.special_tokens_in_strings:
            return self._tokenize_text(text)
        return self._around_special_tokens(text, lambda pieces: (self._tokenize_text(pieces),))[0]

    def _around_special_tokens(self, text, tokenize):
        special_token_ids = tf.constant(self._special_token_ids, self._id_dtype)
        return special_tokens.tokenize_around_special_tokens(
            bert_normalization.valid_utf8(text), special_token_ids, tokenize
        )

    def _tokenize_text(self, text):
        # text: [batch] tf.string, no special tokens matched -> ids [batch, (tokens)]
        text = bert_normalization.valid_utf8(text)
        normalized = bert_normalization.normalize(text, self.lowercase)
        ids, starts, ends = self._text_wordpiece.tokenize_with_offsets(normalized)
        # A word over `cap` bytes came out as [UNK]; redo its row exactly.
        long_unknown = (ids.flat_values == self.unk_token_id) & (
            ends.flat_values - starts.flat_values > self.max_input_chars_per_word
        )
        return tf.cond(
            tf.reduce_any(long_unknown),
            lambda: self._redo_rows(ids, text, ids.with_flat_values(long_unknown)),
            lambda: ids,
        )

    def _redo_rows(self, ids, text, long_unknown):
        redo = tf.reduce_any(long_unknown, axis=1)  # [batch]
        redo_rows = tf.where(redo)[:, 0]
        keep_rows = tf.where(~redo)[:, 0]
        exact_ids, _, _ = self._exact_graph(tf.gather(text, redo_rows))
        stacked = tf.concat([tf.gather(ids, keep_rows), exact_ids], axis=0)
        order = tf.argsort(tf.concat([keep_rows, redo_rows], axis=0))
        return tf.gather(stacked, order)

    # --- the exact path, with offsets ---
    def _tokenize_with_offsets_batch(self, text):
        # text: [batch] tf.string -> ids, starts, ends [batch, (tokens)]
        if not self.special_tokens_in_strings:
            return self._tokenize_text_with_offsets(text)
        return self._around_special_tokens(text, self._tokenize_text_with_offsets)

    def _tokenize_text_with_offsets(self, text):
        # text: [batch] tf.string, no special tokens matched -> ids, starts, ends [batch, (tokens)]
        text = bert_normalization.valid_utf8(text)
        words, word_starts, _ = bert_normalization.split_words_with_offsets(
            text, self.lowercase
        )  # [batch, (words)], on the raw text
        raw = words.flat_values  # [words]
        normalized = bert_normalization.normalize(raw, self.lowercase)
        pieces, starts, ends = self._word_pieces_with_offsets(normalized)  # [words, (pieces)]
        starts, ends = offsets.normalized_to_raw_offsets(
            raw, normalized, starts, ends, self.lowercase
        )
        word_of_piece = pieces.value_rowids()
        base = tf.gather(word_starts.flat_values, word_of_piece)
        starts = starts.with_flat_values(base + starts.flat_values)
        ends = ends.with_flat_values(base + ends.flat_values)
        return tuple(
            words.with_flat_values(x).merge_dims(1, 2) for x in (pieces, starts, ends)
        )

    def _word_pieces_with_offsets(self, words):
        # words: [words] normalised -> ids, starts, ends [words, (pieces)]
        too_long = tf.strings.length(words, unit="UTF8_CHAR") > self.max_input_chars_per_word
        # Over max_bytes_per_word: FastWordpiece makes it one [UNK].
        too_long_word = "x" * (self._max_bytes_per_word + 1)
        ids, starts, ends = self._word_wordpiece.tokenize_with_offsets(
            tf.where(too_long, too_long_word, words)
        )
        rows = ids.value_rowids()
        word_bytes = tf.cast(tf.strings.length(words), ends.dtype)
        ends = ends.with_flat_values(
            tf.where(tf.gather(too_long, rows), tf.gather(word_bytes, rows), ends.flat_values)
        )
        return ids, starts, ends

    def detokenize(self, ids):
        """Token ids [..., tokens] -> text [...]: tokens joined by spaces, "##" merged.

        The inverse of `tokenize` up to normalisation: lower-casing, accents,
        spacing around punctuation and `[UNK]` are not undone.
        """
        tokens = self.ids_to_tokens(ids)
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(text, " " + SUFFIX_INDICATOR, "")

    # === Config and presets ===
    def get_config(self):
        return {
            **super().get_config(),
            "vocabulary": self.get_vocabulary(),
            "lowercase": self.lowercase,
            "max_input_chars_per_word": self.max_input_chars_per_word,
            "special_tokens_in_strings": self.special_tokens_in_strings,
        }

    @classmethod
    def from_preset(cls, name_or_path, **kwargs):
        """The tokenizer of a built-in preset name or a preset folder.

        Uses the preset's `vocab.txt` and `config.json["tokenizer"]`
        (`lowercase`, and `max_input_chars_per_word` and
        `special_tokens_in_strings` when set); `kwargs` override.
        """
        from keras_bert_app.convert import resolve  # our preset folders and foreign checkpoints alike

        resolved = resolve.resolve_preset(name_or_path)
        config = resolved.config.get("tokenizer", {})
        kwargs.setdefault("lowercase", bool(config.get("lowercase", True)))
        if "max_input_chars_per_word" in config:
            kwargs.setdefault("max_input_chars_per_word", int(config["max_input_chars_per_word"]))
        if "special_tokens_in_strings" in config:
            kwargs.setdefault("special_tokens_in_strings", config["special_tokens_in_strings"])  # checked: a bool
        return cls(vocabulary=resolved.vocabulary_path, **kwargs)

    def save_to_preset(self, path):
        """Write `vocab.txt` and the "tokenizer" entry of `config.json` in `path` (its other keys are kept)."""
        folder = pathlib.Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        write_vocabulary(self._vocabulary, folder / presets.VOCABULARY_FILE)
        entry = {"vocabulary": presets.VOCABULARY_FILE, "lowercase": self.lowercase}
        if self.max_input_chars_per_word != MAX_INPUT_CHARS_PER_WORD:
            entry["max_input_chars_per_word"] = self.max_input_chars_per_word
        if self.special_tokens_in_strings:
            entry["special_tokens_in_strings"] = True
        presets.write_config_entry(folder, "tokenizer", entry)
        return folder
