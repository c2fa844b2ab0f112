"""`keras-bert-app export`: a run or preset folder -> `EXPORT_BASE/<version>/` for TF Serving."""


def add_arguments(parser):
    parser.add_argument("--model", required=True, help="fine-tuned run folder or preset (name or folder)")
    parser.add_argument("--output", required=True, help="EXPORT_BASE: TF Serving's model base folder")
    parser.add_argument("--version", type=int, default=None, help="version number (default: next free)")
    parser.add_argument("--sequence-length", type=int, default=None, help="default: the run's, else 128")
    parser.add_argument("--text-pair", action="store_true", default=None, help="serve text_a + text_b")


def load_for_serving(model_dir):
    """The model, its label names and its recorded preprocessing from a folder."""
    from keras_bert_app import presets

    config = presets.read_config(model_dir)
    task = config.get("task", {})
    class_name = task.get("class_name", "BertEncoder")
    if class_name == "BertClassifier":
        from keras_bert_app.models.bert_classifier import BertClassifier

        model = BertClassifier.from_preset(model_dir)
    elif class_name == "BertEncoder":
        from keras_bert_app.models.bert_encoder import BertEncoder

        model = BertEncoder.from_preset(model_dir, load_weights=presets.weights_path(model_dir) is not None)
    else:
        raise ValueError(f"export: {model_dir} holds a {class_name}; only BertClassifier and BertEncoder export yet.")
    return model, task


def run(args):
    from keras_bert_app.export.serving import export_for_serving
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor

    model, task = load_for_serving(args.model)
    data = task.get("data", {})  # how the finetune run read its files
    sequence_length = args.sequence_length or data.get("sequence_length") or 128
    if args.text_pair is not None:
        text_pair = args.text_pair
    elif data.get("reader") == "glue":
        from keras_bert_app.data.glue import glue_task

        text_pair = glue_task(data["glue_task"]).text_pair_column is not None
    else:
        text_pair = bool(data.get("text_pair_column"))
    preprocessor = BertPreprocessor.from_preset(args.model, sequence_length=sequence_length)
    target = export_for_serving(
        model,
        args.output,
        preprocessor,
        version=args.version,
        label_names=task.get("label_names"),
        text_pair=text_pair,
    )
    print(f"exported {type(model).__name__} to {target} (sequence length {sequence_length})")
    print(f"inspect: saved_model_cli show --dir {target} --all")
    return 0
