"""`keras-bert-app convert`: Google, HF or keras-hub checkpoints to and from our presets.

In:  keras-bert-app convert --from {google,huggingface,keras-hub} SRC --output PRESET_DIR
Out: keras-bert-app convert --to {huggingface,keras-hub} PRESET --output DIR
"""

import pathlib

SOURCE_FORMATS = ("google", "huggingface", "keras-hub")
TARGET_FORMATS = ("huggingface", "keras-hub")


def add_arguments(parser):
    direction = parser.add_mutually_exclusive_group(required=True)
    direction.add_argument(
        "--from",
        dest="source_format",
        choices=SOURCE_FORMATS,
        help="convert a checkpoint of this format into our preset folder",
    )
    direction.add_argument(
        "--to",
        dest="target_format",
        choices=TARGET_FORMATS,
        help="write one of our presets (name or folder) in this format",
    )
    parser.add_argument(
        "source",
        metavar="SRC",
        help="checkpoint folder (or a .bin/.safetensors file for HF) with --from; "
        "our preset name or folder with --to",
    )
    parser.add_argument("--output", required=True, help="folder to write")
    parser.add_argument("--overwrite", action="store_true", help="allow a non-empty --output folder")


def run(args):
    from keras_bert_app.convert import detect

    source = pathlib.Path(args.source).expanduser()
    output = pathlib.Path(args.output).expanduser()
    if output.exists() and any(output.iterdir()) and not args.overwrite:
        raise FileExistsError(f"{output} is not empty; pass --overwrite to write into it.")
    if args.source_format:
        if not source.exists():
            raise FileNotFoundError(f"{source}: no such checkpoint folder or file.")
        source_format = args.source_format.replace("-", "_")
        print(f"Converting {source_format} checkpoint {source} ...")
        folder, heads = detect.convert_to_preset(source, output, source_format)
        config = detect.read_config(source, source_format)["encoder"]
        print(
            f"Wrote preset {folder}: {config['num_layers']} layers, hidden "
            f"{config['hidden_dim']}, vocabulary {config['vocabulary_size']}"
            + (", with pretraining heads." if heads else " (encoder only).")
        )
        return 0
    target_format = args.target_format.replace("-", "_")
    print(f"Writing preset {args.source} as {target_format} ...")
    folder = detect.export_preset(args.source, output, target_format)
    print(f"Wrote {target_format} checkpoint {folder}.")
    return 0
