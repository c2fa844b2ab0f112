"""`keras-bert-app extract-features`: per-token contextual features, as the original BERT's.

    keras-bert-app extract-features --input in.txt --preset P --layers -1,-2,-3,-4 --output out.jsonl

The input has one example a line; `text_a ||| text_b` for a pair. Each
output line follows the original `extract_features.py`:
`{"linex_index": i, "features": [{"token": "[CLS]", "layers": [{"index": -1,
"values": [...]}, ...]}, ...]}` for every real (non-padding) token.
"""

import json
import pathlib
import re

PAIR_SEPARATOR = " ||| "


def add_arguments(parser):
    # Let `--layers -1,-2` parse: argparse takes "-1,-2" for an option unless
    # it counts as a negative number.
    if hasattr(parser, "_negative_number_matcher"):
        parser._negative_number_matcher = re.compile(r"^-\d+(,-?\d+)*$|^-\d*\.\d+$")
    parser.add_argument("--input", required=True, help="text file, one example a line ('a ||| b' for pairs)")
    parser.add_argument("--preset", required=True, help="preset name or folder (with weights)")
    parser.add_argument("--output", required=True, help="JSON lines file to write")
    parser.add_argument("--layers", default="-1,-2,-3,-4", help="comma-separated layer indices (default -1,-2,-3,-4)")
    parser.add_argument("--sequence-length", type=int, default=128, help="tokens per example (default 128)")
    parser.add_argument("--batch-size", type=int, default=8, help="batch size (default 8)")


def run(args):
    import numpy as np
    import tensorflow as tf

    from keras_bert_app.models.bert_feature_extractor import BertFeatureExtractor
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor

    layers = _parse_layers(args.layers)
    input_path = pathlib.Path(args.input)
    if not input_path.is_file():
        raise FileNotFoundError(f"{input_path}: no such file.")
    lines = [line.rstrip("\n") for line in input_path.open(encoding="utf-8")]
    lines = [line for line in lines if line.strip()]
    if not lines:
        raise ValueError(f"{input_path}: no examples (the file is empty).")
    texts = [line.split(PAIR_SEPARATOR, 1) for line in lines]
    paired = all(len(text) == 2 for text in texts)
    if not paired and any(len(text) == 2 for text in texts):
        raise ValueError(f"{input_path}: mixes single texts and '{PAIR_SEPARATOR.strip()}' pairs.")

    extractor = BertFeatureExtractor.from_preset(args.preset, layers=layers, combine="concat")
    preprocessor = BertPreprocessor.from_preset(args.preset, sequence_length=args.sequence_length)
    segments = tuple(zip(*texts)) if paired else ([text[0] for text in texts],)
    dataset = tf.data.Dataset.from_tensor_slices(tuple(list(s) for s in segments)).batch(args.batch_size)
    dataset = dataset.map(lambda *s: preprocessor(s if paired else s[0]))
    hidden_dim = extractor.encoder.hidden_dim
    output = pathlib.Path(args.output).expanduser()
    output.parent.mkdir(parents=True, exist_ok=True)
    index = 0
    with output.open("w", encoding="utf-8") as file:
        for inputs in dataset:
            features = np.asarray(extractor.predict_on_batch(inputs))  # (batch, seq, H * layers)
            token_ids = inputs["token_ids"].numpy()
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
    print(f"Wrote features of {index} examples ({len(layers)} layers x {hidden_dim}) to {output}.")
    return 0


def _parse_layers(text):
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"--layers must be comma-separated integers such as -1,-2; got {text!r}.") from None
