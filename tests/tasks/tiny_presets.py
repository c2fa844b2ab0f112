"""Tiny preset folders for the task tests: a real or a made-up vocabulary, a 1-2 layer encoder."""

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def write_tiny_preset(folder, vocabulary, max_sequence_length=32, num_layers=1, hidden_dim=16, seed=0):
    """A preset folder with `vocabulary` (a list of tokens or a vocab.txt path) and a tiny encoder (seeded)."""
    import keras

    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    keras.utils.set_random_seed(seed)
    tokenizer = BertTokenizer(vocabulary, lowercase=True)
    tokenizer.save_to_preset(folder)
    BertEncoder(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=num_layers, num_heads=2,
        hidden_dim=hidden_dim, intermediate_dim=2 * hidden_dim, max_sequence_length=max_sequence_length,
    ).save_to_preset(folder)
    return folder
