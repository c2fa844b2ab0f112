"""A plain single-process Python port of the original `create_pretraining_data.py`.

Written for the benchmark and the statistical tests from the published
algorithm (BERT paper section 3.1 and appendix A, and the behaviour of the
original script): a pure-Python BERT tokenizer (text cleanup, whitespace and
punctuation split, lowercasing and accent stripping, greedy longest-match
WordPiece), one `random.Random(seed)`, pairing and masking token by token,
`tf.train.Example` records. It is how users of the original run it today, so
it is the baseline `tools/benchmark_pretraining_data.py` measures against.

    python tools/reference_create_pretraining_data.py --input corpus.txt \\
        --output out.tfrecord --vocab vocab.txt [--use-our-tokenizer]
"""

import argparse
import collections
import random
import time
import unicodedata


# --------------------------------------------------------------------------
# Pure-Python tokenizer.


def _is_whitespace(char):
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char):
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char):
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(code):
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F
        or 0x2B740 <= code <= 0x2B81F
        or 0x2B820 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )


class PythonBertTokenizer:
    """Basic (cleanup, split, lowercase) then WordPiece tokenization in Python."""

    def __init__(self, vocabulary_path, lowercase=True, max_chars_per_word=200):
        with open(vocabulary_path, encoding="utf-8") as stream:
            self.vocabulary = [line.rstrip("\n") for line in stream]
        self.token_ids = {token: i for i, token in enumerate(self.vocabulary)}
        self.lowercase = lowercase
        self.max_chars_per_word = max_chars_per_word
        self.unknown = "[UNK]"

    def _basic_tokens(self, text):
        cleaned = []
        for char in text:
            code = ord(char)
            if code == 0 or code == 0xFFFD or _is_control(char):
                continue
            if _is_cjk(code):
                cleaned.append(f" {char} ")
            elif _is_whitespace(char):
                cleaned.append(" ")
            else:
                cleaned.append(char)
        words = []
        for word in "".join(cleaned).split():
            if self.lowercase:
                word = unicodedata.normalize("NFD", word.lower())
                word = "".join(c for c in word if unicodedata.category(c) != "Mn")
            piece = []
            for char in word:
                if _is_punctuation(char):
                    if piece:
                        words.append("".join(piece))
                        piece = []
                    words.append(char)
                else:
                    piece.append(char)
            if piece:
                words.append("".join(piece))
        return words

    def _wordpieces(self, word):
        if len(word) > self.max_chars_per_word:
            return [self.unknown]
        pieces = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                candidate = word[start:end]
                if start > 0:
                    candidate = "##" + candidate
                if candidate in self.token_ids:
                    found = candidate
                    break
                end -= 1
            if found is None:
                return [self.unknown]
            pieces.append(found)
            start = end
        return pieces

    def tokenize(self, text):
        return [p for word in self._basic_tokens(text) for p in self._wordpieces(word)]


class FastTokens:
    """Our TensorFlow tokenizer, behind the same `tokenize(text)` interface.

    Lines are tokenized in one batch per file (`tokenize_lines`), as a user
    would do when swapping the tokenizer into the original script.
    """

    def __init__(self, vocabulary_path, lowercase=True):
        from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

        self.tokenizer = BertTokenizer(vocabulary=vocabulary_path, lowercase=lowercase)
        self.vocabulary = list(self.tokenizer.get_vocabulary())

    def tokenize_lines(self, lines):
        import tensorflow as tf

        ids = self.tokenizer(tf.constant(lines)).to_list()
        return [[self.vocabulary[i] for i in row] for row in ids]


# --------------------------------------------------------------------------
# The algorithm.

Instance = collections.namedtuple(
    "Instance", "tokens segment_ids is_random_next masked_positions masked_labels"
)


def read_documents(paths, tokenizer):
    documents = [[]]
    for path in paths:
        with open(path, encoding="utf-8") as stream:
            lines = [line.strip() for line in stream]
        if isinstance(tokenizer, FastTokens):
            nonblank = [line for line in lines if line]
            tokenized = iter(tokenizer.tokenize_lines(nonblank) if nonblank else [])
            token_lines = [next(tokenized) if line else None for line in lines]
        else:
            token_lines = [tokenizer.tokenize(line) if line else None for line in lines]
        for tokens in token_lines:
            if tokens is None:
                documents.append([])
            elif tokens:
                documents[-1].append(tokens)
        documents.append([])
    return [document for document in documents if document]


def truncate_pair(tokens_a, tokens_b, max_num_tokens, rng):
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def mask_instance(tokens, masked_lm_prob, max_predictions_per_seq, vocabulary, rng,
                  whole_word_masking=False):
    candidates = []
    for index, token in enumerate(tokens):
        if token in ("[CLS]", "[SEP]"):
            continue
        if whole_word_masking and candidates and token.startswith("##"):
            candidates[-1].append(index)
        else:
            candidates.append([index])
    rng.shuffle(candidates)
    output = list(tokens)
    count = min(max_predictions_per_seq, max(1, int(round(len(tokens) * masked_lm_prob))))
    masked = []
    for group in candidates:
        if len(masked) >= count:
            break
        if len(masked) + len(group) > count:
            continue
        for index in group:
            if rng.random() < 0.8:
                replacement = "[MASK]"
            elif rng.random() < 0.5:
                replacement = tokens[index]
            else:
                replacement = vocabulary[rng.randint(0, len(vocabulary) - 1)]
            output[index] = replacement
            masked.append((index, tokens[index]))
    masked.sort()
    return output, [i for i, _ in masked], [t for _, t in masked]


def document_instances(documents, document_index, max_seq_length, short_seq_prob,
                       masked_lm_prob, max_predictions_per_seq, vocabulary, rng,
                       whole_word_masking=False):
    document = documents[document_index]
    max_num_tokens = max_seq_length - 3
    target_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_length = rng.randint(2, max_num_tokens)
    instances = []
    chunk = []
    chunk_length = 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        chunk_length += len(document[i])
        if i == len(document) - 1 or chunk_length >= target_length:
            a_end = 1
            if len(chunk) >= 2:
                a_end = rng.randint(1, len(chunk) - 1)
            tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
            tokens_b = []
            is_random_next = len(chunk) == 1 or rng.random() < 0.5
            if is_random_next:
                target_b = target_length - len(tokens_a)
                for _ in range(10):
                    other = rng.randint(0, len(documents) - 1)
                    if other != document_index:
                        break
                random_document = documents[other]
                for sentence in random_document[rng.randint(0, len(random_document) - 1):]:
                    tokens_b.extend(sentence)
                    if len(tokens_b) >= target_b:
                        break
                i -= len(chunk) - a_end
            else:
                tokens_b = [t for sentence in chunk[a_end:] for t in sentence]
            truncate_pair(tokens_a, tokens_b, max_num_tokens, rng)
            tokens = ["[CLS]"] + tokens_a + ["[SEP]"] + tokens_b + ["[SEP]"]
            segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
            tokens, positions, labels = mask_instance(
                tokens, masked_lm_prob, max_predictions_per_seq, vocabulary, rng,
                whole_word_masking,
            )
            instances.append(Instance(tokens, segment_ids, is_random_next, positions, labels))
            chunk = []
            chunk_length = 0
        i += 1
    return instances


def create_instances(documents, vocabulary, max_seq_length=128, dupe_factor=10,
                     short_seq_prob=0.1, masked_lm_prob=0.15, max_predictions_per_seq=20,
                     seed=12345, whole_word_masking=False):
    rng = random.Random(seed)
    documents = list(documents)
    rng.shuffle(documents)
    instances = []
    for _ in range(dupe_factor):
        for index in range(len(documents)):
            instances.extend(
                document_instances(
                    documents, index, max_seq_length, short_seq_prob, masked_lm_prob,
                    max_predictions_per_seq, vocabulary, rng, whole_word_masking,
                )
            )
    rng.shuffle(instances)
    return instances


def write_instances(instances, token_ids, path, max_seq_length, max_predictions_per_seq):
    import tensorflow as tf

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    with tf.io.TFRecordWriter(path) as writer:
        for instance in instances:
            ids = [token_ids[t] for t in instance.tokens]
            padding = [0] * (max_seq_length - len(ids))
            num_masked = len(instance.masked_positions)
            prediction_padding = [0] * (max_predictions_per_seq - num_masked)
            features = {
                "input_ids": ints(ids + padding),
                "input_mask": ints([1] * len(ids) + padding),
                "segment_ids": ints(instance.segment_ids + padding),
                "masked_lm_positions": ints(instance.masked_positions + prediction_padding),
                "masked_lm_ids": ints(
                    [token_ids[t] for t in instance.masked_labels] + prediction_padding
                ),
                "masked_lm_weights": tf.train.Feature(
                    float_list=tf.train.FloatList(value=[1.0] * num_masked + prediction_padding)
                ),
                "next_sentence_labels": ints([1 if instance.is_random_next else 0]),
            }
            example = tf.train.Example(features=tf.train.Features(feature=features))
            writer.write(example.SerializeToString())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", nargs="+", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--vocab", required=True)
    parser.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--max-predictions-per-seq", type=int, default=20)
    parser.add_argument("--masked-lm-prob", type=float, default=0.15)
    parser.add_argument("--short-seq-prob", type=float, default=0.1)
    parser.add_argument("--dupe-factor", type=int, default=10)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--whole-word-masking", action="store_true")
    parser.add_argument("--use-our-tokenizer", action="store_true")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    if args.use_our_tokenizer:
        tokenizer = FastTokens(args.vocab, args.lowercase)
    else:
        tokenizer = PythonBertTokenizer(args.vocab, args.lowercase)
    documents = read_documents(args.input, tokenizer)
    instances = create_instances(
        documents, tokenizer.vocabulary, args.max_seq_length, args.dupe_factor,
        args.short_seq_prob, args.masked_lm_prob, args.max_predictions_per_seq,
        args.seed, args.whole_word_masking,
    )
    token_ids = {token: i for i, token in enumerate(tokenizer.vocabulary)}
    write_instances(instances, token_ids, args.output, args.max_seq_length,
                    args.max_predictions_per_seq)
    print(f"{len(documents)} documents, {len(instances)} instances in "
          f"{time.perf_counter() - start:.1f} s -> {args.output}")


if __name__ == "__main__":
    main()
