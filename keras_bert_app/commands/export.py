"""`keras-bert-app export`: a run or preset folder -> `EXPORT_BASE/<version>/` for TF Serving (`kba.export_for_serving`).

    keras-bert-app export --model RUN/preset --output /models/bert_topics
    keras-bert-app export --model RUN/preset --output serving/topics_onnx --format onnx --with-tokenizer
"""

import json

from keras_bert_app.commands.options import keywords


def add_arguments(parser):
    from keras_bert_app.export.preset_loading import HEADS  # imports no TensorFlow
    from keras_bert_app.export.runtime_export import FORMATS

    parser.add_argument("--model", required=True, help="fine-tuned run folder or preset (name or folder), or a foreign checkpoint folder (converted once)")
    parser.add_argument("--output", required=True, help="EXPORT_BASE: TF Serving's model base folder")
    parser.add_argument("--version", type=int, default=None, help="version number (default: next free)")
    parser.add_argument(
        "--sequence-length", type=int, default=None,
        help="default: the run's, else 128 (or the model's max_sequence_length when shorter)",
    )
    parser.add_argument("--text-pair", action="store_true", default=None, help="serve text_a + text_b")
    parser.add_argument(
        "--no-bucketing", action="store_true",
        help="run the model at the full sequence length for every request (default: each batch at its "
        "longest input rounded up to 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, ...; outputs keep their shapes)",
    )
    parser.add_argument(
        "--head", choices=HEADS, default="auto",
        help="for a folder without a fine-tuned task: 'features' (encoder outputs) or 'masked_lm' "
        "(top-k tokens at [MASK]s; needs the pretrainer.weights.h5 that `pretrain` writes); "
        "auto: masked_lm when that file is there, else features",
    )
    parser.add_argument(
        "--format", choices=FORMATS, default="tf_saved_model",
        help="tf_saved_model (TF Serving, raw text in; default), onnx (ONNX Runtime; extra [onnx]), "
        "openvino (extra [openvino]) or litert (extra [litert]): token ids in",
    )
    parser.add_argument(
        "--with-tokenizer", action="store_true",
        help="--format onnx: also write model_with_tokenizer.onnx, raw strings in through "
        "onnxruntime-extensions' BertTokenizer op (default: off, token ids in)",
    )
    parser.add_argument(
        "--quantize", choices=("int8",), default=None,
        help="--format onnx: int8 weights (ONNX Runtime dynamic quantization; default: none, float32)",
    )
    parser.add_argument("--top-k", type=int, default=5, help="masked_lm: tokens returned per [MASK] (default 5)")
    parser.add_argument("--max-predictions", type=int, default=20, help="masked_lm: [MASK]s predicted per text (default 20)")


def run(args):
    import pathlib

    from keras_bert_app import errors
    from keras_bert_app.export.serving import METADATA_FILE, export_for_serving

    if pathlib.Path(args.output).expanduser().is_file():
        raise errors.ArgumentError(
            "output", f"--output {args.output} is a file; it names the folder that holds the model's versions."
        )
    target = export_for_serving(
        args.model,
        args.output,
        bucketing=not args.no_bucketing,
        format=args.format,
        quantize=args.quantize,
        with_tokenizer=args.with_tokenizer,
        **keywords(args, "version", "text_pair", "top_k", "max_predictions", "head", "sequence_length"),
    )
    if args.format != "tf_saved_model":
        metadata = json.loads((target / "keras_bert_app.json").read_text())
        files = ", ".join(sorted(path.name for path in target.iterdir()))
        opset = f", opset {metadata['opset']}" if "opset" in metadata else ""
        print(f"exported {metadata['model_class']} as {args.format} to {target} ({files}{opset}; "
              f"outputs {', '.join(metadata['outputs'])})")
        return 0
    metadata_file = target / "assets.extra" / METADATA_FILE
    metadata = json.loads(metadata_file.read_text()) if metadata_file.is_file() else {}
    print(
        f"exported {metadata.get('model_class', 'the model')} to {target} "
        f"(sequence length {metadata.get('sequence_length', '?')}; "
        f"runs at {', '.join(map(str, metadata.get('bucket_lengths', [])))})"
    )
    print(f"inspect: saved_model_cli show --dir {target} --all")
    return 0
