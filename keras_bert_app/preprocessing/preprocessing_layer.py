"""`PreprocessingLayer`: a Keras layer that runs TF string/ragged ops on any backend."""

import keras


class PreprocessingLayer(keras.layers.Layer):
    """Base of the text preprocessing layers (tokenizer, packer, preprocessor).

    Their inputs are strings or ragged ids, which no backend but TensorFlow
    can hold, so Keras must neither convert them nor build on them: a call
    with real data goes straight to `call` and returns TF tensors (inside
    tf.data or a tf.function) whatever the Keras backend.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.built = True

    def __call__(self, *args, **kwargs):
        if any(_is_symbolic(x) for x in args):
            return super().__call__(*args, **kwargs)
        return self.call(*args, **kwargs)

    def get_build_config(self):
        return None


class TokenizerLayer(PreprocessingLayer):
    """Base of the tokenizers: `call` tokenizes, and the Python lookups over the vocabulary.

    A subclass gives `lookup_tables()`: its tokens in id order, its
    `{token: id}` map, and how to name its vocabulary in an error; and
    `_tokens_tensor`, its tokens as a `tf.string` tensor.
    """

    def lookup_tables(self):
        raise NotImplementedError

    def call(self, inputs):
        return self.tokenize(inputs)

    def vocabulary_size(self):
        """The number of tokens (pieces) in the vocabulary."""
        return len(self.lookup_tables()[0])

    def get_vocabulary(self):
        """The tokens (pieces), in id order (a copy)."""
        return list(self.lookup_tables()[0])

    def tokenize_as_strings(self, inputs):
        """Strings -> token strings (like `tokenize`, with tokens for ids)."""
        return self.ids_to_tokens(self.tokenize(inputs))

    def ids_to_tokens(self, ids):
        """Token ids (tensor or ragged, any rank) -> the token strings, same shape."""
        import tensorflow as tf

        if isinstance(ids, (list, tuple)):
            ids = tf.ragged.constant(ids)
        if isinstance(ids, tf.RaggedTensor):
            return ids.with_flat_values(tf.gather(self._tokens_tensor, ids.flat_values))
        return tf.gather(self._tokens_tensor, ids)

    def id_to_token(self, id):
        """The token (piece) of an integer id."""
        tokens, _, name = self.lookup_tables()
        return token_of(tokens, id, f"{name} of {len(tokens)} entries")

    def token_to_id(self, token):
        """The id of a token (piece)."""
        _, ids, name = self.lookup_tables()
        return id_of(ids, token, f"the {name}")


def token_of(tokens, id, what):
    """`tokens[id]` for an integer `id`, or a ValueError naming the vocabulary (`what`: "a vocabulary of N tokens")."""
    id = int(id)
    if not 0 <= id < len(tokens):
        raise ValueError(f"id {id} is out of range for {what}")
    return tokens[id]


def id_of(ids, token, what):
    """`ids[token]`, or a ValueError naming the vocabulary (`what`: "the vocabulary")."""
    if token not in ids:
        raise ValueError(f"{token!r} is not in {what}")
    return ids[token]


def _is_symbolic(x):
    """A KerasTensor, or a tuple of them (segments); lists of str are not scanned."""
    if isinstance(x, tuple):
        return any(isinstance(item, keras.KerasTensor) for item in x)
    return isinstance(x, keras.KerasTensor)
