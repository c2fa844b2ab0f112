"""`keras-bert-app convert`: Google, HF or keras-hub checkpoints to and from our presets (`kba.convert_checkpoint`).

In:  keras-bert-app convert --from {google,huggingface,keras-hub} SRC --output PRESET_DIR
     [--generator HF_GENERATOR_DIR]   (an HF ELECTRA discriminator + its generator: the pair's preset)
Out: keras-bert-app convert --to {huggingface,keras-hub} PRESET --output DIR
An HF BERT task class (`BertForSequenceClassification`, ...) becomes the fine-tuned preset `finetune` writes, and
such a preset goes out to HF as that class.
"""

from keras_bert_app.commands.options import keywords

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
    parser.add_argument(
        "--generator",
        metavar="DIR",
        help="with --from huggingface and an ELECTRA discriminator as SRC: its generator's folder "
        "(ElectraForMaskedLM); the pair becomes an ElectraPretrainer preset (generator in OUTPUT/generator)",
    )
    parser.add_argument("--overwrite", action="store_true", help="allow a non-empty --output folder")


def run(args):
    from keras_bert_app import presets
    from keras_bert_app.convert.checkpoint import GENERATOR_FOLDER, HEAD_FILES, convert_checkpoint

    if args.source_format:
        print(f"Converting {args.source_format.replace('-', '_')} checkpoint {args.source} ...")
    else:
        print(f"Writing preset {args.source} as {args.target_format.replace('-', '_')} ...")
    folder = convert_checkpoint(
        args.source,
        args.output,
        **keywords(args, "source_format", "target_format", "overwrite", "generator"),
    )
    if args.target_format:
        print(f"Wrote {args.target_format.replace('-', '_')} checkpoint {folder}.")
        return 0
    preset = presets.read_config(folder)
    config = preset["encoder"]
    heads = any((folder / name).is_file() for name in HEAD_FILES)
    embedding = f", embeddings {config['embedding_dim']}" if config.get("embedding_dim") else ""
    print(
        f"Wrote preset {folder}: {config['num_layers']} layers, hidden "
        f"{config['hidden_dim']}{embedding}, vocabulary {config['vocabulary_size']}"
        + (_task_summary(preset["task"]) if "task" in preset
           else ", with pretraining heads" if heads else " (encoder only)")
        + (f"; generator in {folder / GENERATOR_FOLDER}." if (folder / GENERATOR_FOLDER).is_dir() else ".")
    )
    return 0


def _task_summary(entry):
    """What a converted task checkpoint became, and what `predict` reads with it."""
    data = entry.get("data", {})
    names = entry.get("label_names")
    labels = f" (labels {', '.join(names)})" if names else " (regression)" if data.get("regression") else ""
    inputs = {"classify": f"CSV/TSV/JSONL with a {data.get('text_column')!r} column",
              "ner": "CoNLL column files", "squad": "SQuAD JSON (`predict squad --data`)",
              "swag": f"SWAG CSV with {data.get('num_choices')} endings"}.get(data.get("reader"), "its task's files")
    return (f", a fine-tuned {entry['class_name']}{labels}; `predict` reads {inputs} "
            "(the 'data' of the 'task' entry in its config.json)")
