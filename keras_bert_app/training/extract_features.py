"""`kba.extract_features`: per-token contextual features, as the original BERT's `extract_features.py`.

```python
import keras_bert_app as kba

kba.extract_features(
    "sentences.txt", "path/to/preset", "features.jsonl", layers=(-1, -2, -3, -4)
)
```

The input has one example a line; `text_a ||| text_b` for a pair. Each
output line follows the original `extract_features.py`:
`{"linex_index": i, "features": [{"token": "[CLS]", "layers": [{"index": -1,
"values": [...]}, ...]}, ...]}` for every real (non-padding) token.
"""

import json
import os
import pathlib
from typing import Callable, Optional, Sequence, Union

from keras_bert_app import errors
from keras_bert_app.convert import resolve
from keras_bert_app.data.text_file import open_text
from keras_bert_app.models.sequence_length import sequence_length_for
from keras_bert_app.tasks.base import check_preset

PAIR_SEPARATOR = " ||| "
DEFAULT_SEQUENCE_LENGTH = 128


def extract_features(
    input: Union[str, os.PathLike],
    preset: Union[str, os.PathLike],
    output: Union[str, os.PathLike],
    layers: Sequence[int] = (-1, -2, -3, -4),
    sequence_length: Optional[int] = None,
    batch_size: int = 8,
    *,
    bucketing: bool = True,
    log: Optional[Callable[[str], None]] = None,
) -> pathlib.Path:
    """Write the features of chosen encoder layers for every token of every input line.

    Args:
        input: str or path. A text file, one example a line (`a ||| b` for pairs).
        preset: str or path. A preset name or folder (with weights).
        output: str or path. The JSON lines file to write.
        layers: sequence of int. Encoder layer indices (negative from the top).
        sequence_length: int or None. Tokens per example (longer ones are
            truncated); None: 128, or the encoder's `max_sequence_length` when shorter.
        batch_size: int.
        bucketing: bool. Pad each batch (in input order) to its longest
            example rounded up to a bucket length (`data.bucketing`); False
            pads every batch to `sequence_length`. The features are the same
            either way.
        log: callable taking a str, for progress lines (None: quiet).

    Returns:
        pathlib.Path of `output`.

    Raises:
        keras_bert_app.errors.MissingFileError: no input file.
        keras_bert_app.errors.ArgumentError: bad layers or sizes (naming the argument).
        keras_bert_app.errors.DataError: an empty input, or one mixing single texts and pairs.
    """
    log = log or (lambda message: None)
    input_path = errors.check_file("input", input)
    preset = resolve.resolve_preset(check_preset("preset", preset))  # read once, passed down as it is
    output = errors.check_path("output", output)
    errors.check_type("layers", layers, (list, tuple), "a sequence of int")
    layers = tuple(errors.check_int("layers", layer) for layer in layers)
    if not layers:
        raise errors.ArgumentError("layers", "layers must name at least one layer.")
    if sequence_length is not None:
        errors.check_int("sequence_length", sequence_length, minimum=3)
    sequence_length = sequence_length_for(preset, sequence_length, DEFAULT_SEQUENCE_LENGTH)
    errors.check_int("batch_size", batch_size, minimum=1)
    errors.check_type("bucketing", bucketing, bool)
    with open_text(input_path) as file:  # UTF-8, with or without a byte-order mark
        all_lines = [line.rstrip("\n") for line in file]
    lines = [line for line in all_lines if line.strip()]
    if not lines:
        raise errors.DataError(f"{input_path}: no examples (the file is empty).")
    if len(lines) < len(all_lines):
        log(f"{input_path}: skipped {len(all_lines) - len(lines)} blank lines (linex_index counts the others).")
    texts = [line.split(PAIR_SEPARATOR, 1) for line in lines]
    paired = all(len(text) == 2 for text in texts)
    if not paired and any(len(text) == 2 for text in texts):
        raise errors.DataError(f"{input_path}: mixes single texts and '{PAIR_SEPARATOR.strip()}' pairs.")

    import numpy as np
    import tensorflow as tf

    from keras_bert_app.data.bucketing import describe, trim
    from keras_bert_app.models.bert_feature_extractor import BertFeatureExtractor
    from keras_bert_app.models.xla import pads_to_exact_length
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor

    extractor = BertFeatureExtractor.from_preset(preset, layers=layers, combine="concat")
    if paired and extractor.encoder.num_segments < 2:
        raise errors.DataError(f"{input_path}: holds '{PAIR_SEPARATOR.strip()}' pairs, but the preset's encoder has "
                               f"{extractor.encoder.num_segments} segment type (type_vocab_size): single texts only.")
    preprocessor = BertPreprocessor.from_preset(preset, sequence_length=sequence_length)
    segments = tuple(zip(*texts)) if paired else ([text[0] for text in texts],)
    dataset = tf.data.Dataset.from_tensor_slices(tuple(list(s) for s in segments)).batch(batch_size)
    dataset = dataset.map(lambda *s: preprocessor(s if paired else s[0]))
    exact_lengths = bucketing and pads_to_exact_length(extractor)
    if bucketing:
        dataset = dataset.map(lambda inputs: trim((inputs,), sequence_length, exact_lengths)[0])
    log(_truncation_line(segments, preprocessor) + " " + describe(sequence_length, bucketing,
                                                                  exact_lengths=exact_lengths))
    hidden_dim = extractor.encoder.hidden_dim
    output.parent.mkdir(parents=True, exist_ok=True)
    index = 0
    with output.open("w", encoding="utf-8") as file:
        for inputs in dataset.as_numpy_iterator():  # NumPy batches: JAX and PyTorch models take no TF tensors
            features = np.asarray(extractor.predict_on_batch(inputs))  # (batch, seq, hidden * layers)
            token_ids = inputs["token_ids"]
            mask = np.asarray(inputs["padding_mask"]).astype(bool)
            tokens = preprocessor.tokenizer.ids_to_tokens(token_ids).numpy()
            for row in range(len(token_ids)):
                record = {"linex_index": index, "features": []}
                for position in np.nonzero(mask[row])[0]:
                    values = features[row, position].reshape(len(layers), hidden_dim)
                    record["features"].append(
                        {
                            "token": tokens[row, position].decode("utf-8"),
                            "layers": [
                                {"index": layer, "values": [round(float(v), 6) for v in values[k]]}
                                for k, layer in enumerate(layers)
                            ],
                        }
                    )
                file.write(json.dumps(record) + "\n")
                index += 1
    log(f"Wrote features of {index} examples ({len(layers)} layers x {hidden_dim}) to {output}.")
    return output


def _truncation_line(segments, preprocessor):
    """How many examples the packer cuts at the sequence length."""
    lengths = sum(preprocessor.tokenizer(list(segment)).row_lengths().numpy() for segment in segments)
    budget = preprocessor.sequence_length - 1 - len(segments)
    truncated = int((lengths > budget).sum())
    line = f"{len(lengths)} examples"
    if truncated:
        line += f"; {truncated} longer than {preprocessor.sequence_length} tokens were truncated"
    return line + "."
