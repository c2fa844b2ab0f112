"""SentencePiece models trained in tests (with the `sentencepiece` package) on real text, ALBERT's way.

ALBERT's `spiece.model` has `<pad>` 0, `<unk>` 1, `[CLS]` 2, `[SEP]` 3, `[MASK]` 4
(control pieces: never matched in text) and a unigram vocabulary learned on
lower-cased text.
"""

import io
import unicodedata

SPECIAL = ["[CLS]", "[SEP]", "[MASK]"]


def train_model(path, lines, vocabulary_size):
    """Train a unigram model on `lines` (lower-cased, accents stripped) and write it to `path`."""
    spm = __import__("pytest").importorskip("sentencepiece")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter([preprocess_text(line) for line in lines if line.strip()]),
        model_writer=model,
        vocab_size=vocabulary_size,
        model_type="unigram",
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        control_symbols=SPECIAL,
        character_coverage=0.9995,
        num_threads=1,
        minloglevel=2,
    )
    path.write_bytes(model.getvalue())
    return path


def preprocess_text(text, lowercase=True, strip_accents=True):
    """The reference normalisation, as google-research/albert describes it (written here from its rule)."""
    text = " ".join(text.split()).replace("``", '"').replace("''", '"')
    if strip_accents:
        text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return text.lower() if lowercase else text
