"""`keras-bert-app convert`: Google, HF or keras-hub checkpoints to and from our presets (`kba.convert_checkpoint`).

In:  keras-bert-app convert --from {google,huggingface,keras-hub} SRC --output PRESET_DIR
Out: keras-bert-app convert --to {huggingface,keras-hub} PRESET --output DIR
"""

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
    from keras_bert_app import presets
    from keras_bert_app.convert.checkpoint import convert_checkpoint
    from keras_bert_app.models.bert_pretrainer import HEAD_WEIGHTS_FILE

    if args.source_format:
        print(f"Converting {args.source_format.replace('-', '_')} checkpoint {args.source} ...")
    else:
        print(f"Writing preset {args.source} as {args.target_format.replace('-', '_')} ...")
    folder = convert_checkpoint(
        args.source,
        args.output,
        source_format=args.source_format,
        target_format=args.target_format,
        overwrite=args.overwrite,
    )
    if args.target_format:
        print(f"Wrote {args.target_format.replace('-', '_')} checkpoint {folder}.")
        return 0
    config = presets.read_config(folder)["encoder"]
    heads = (folder / HEAD_WEIGHTS_FILE).is_file()
    print(
        f"Wrote preset {folder}: {config['num_layers']} layers, hidden "
        f"{config['hidden_dim']}, vocabulary {config['vocabulary_size']}"
        + (", with pretraining heads." if heads else " (encoder only).")
    )
    return 0
