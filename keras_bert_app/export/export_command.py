"""`keras-bert-app export`: a run or preset folder -> `EXPORT_BASE/<version>/` for TF Serving."""

MODEL_CLASSES = {
    "BertClassifier": "keras_bert_app.models.bert_classifier",
    "BertQuestionAnswerer": "keras_bert_app.models.bert_question_answerer",
    "BertTokenClassifier": "keras_bert_app.models.bert_token_classifier",
}
HEADS = ("auto", "features", "masked_lm")


def add_arguments(parser):
    parser.add_argument("--model", required=True, help="fine-tuned run folder or preset (name or folder)")
    parser.add_argument("--output", required=True, help="EXPORT_BASE: TF Serving's model base folder")
    parser.add_argument("--version", type=int, default=None, help="version number (default: next free)")
    parser.add_argument("--sequence-length", type=int, default=None, help="default: the run's, else 128")
    parser.add_argument("--text-pair", action="store_true", default=None, help="serve text_a + text_b")
    parser.add_argument(
        "--head", choices=HEADS, default="auto",
        help="for a folder without a fine-tuned task: 'features' (encoder outputs) or 'masked_lm' "
        "(top-k tokens at [MASK]s; needs the pretrainer.weights.h5 that `pretrain` writes); "
        "auto: masked_lm when that file is there, else features",
    )
    parser.add_argument("--top-k", type=int, default=5, help="masked_lm: tokens returned per [MASK] (default 5)")
    parser.add_argument("--max-predictions", type=int, default=20, help="masked_lm: [MASK]s predicted per text (default 20)")


def load_for_serving(model_dir, head="auto"):
    """The model and the preset's "task" entry (`{}` when it has none) from a folder.

    A "task" entry (written by `finetune`) names the class: `BertClassifier`,
    `BertQuestionAnswerer` or `BertTokenClassifier`, rebuilt with its head.
    Without one the folder is an encoder preset: `head="masked_lm"` (or
    "auto" with the `pretrainer.weights.h5` of a `pretrain` run) gives a
    `BertPretrainer`, "features" a `BertEncoder`.
    """
    import importlib

    from keras_bert_app import presets
    from keras_bert_app.models.bert_pretrainer import HEAD_WEIGHTS_FILE

    if head not in HEADS:
        raise ValueError(f"export: --head must be one of {HEADS}; got {head!r}.")
    task = presets.read_config(model_dir).get("task", {})
    class_name = task.get("class_name")
    if class_name is not None and head != "auto":
        raise ValueError(f"export: {model_dir} holds a fine-tuned {class_name}; --head applies to encoder presets only.")
    if class_name is not None:
        if class_name not in MODEL_CLASSES:
            raise ValueError(f"export: {model_dir} holds a {class_name}; expected one of {sorted(MODEL_CLASSES)}.")
        model_class = getattr(importlib.import_module(MODEL_CLASSES[class_name]), class_name)
        return model_class.from_preset(model_dir), task
    if head == "auto":
        head = "masked_lm" if (presets.preset_dir(model_dir) / HEAD_WEIGHTS_FILE).is_file() else "features"
    if head == "masked_lm":
        from keras_bert_app.models.bert_pretrainer import BertPretrainer

        return BertPretrainer.from_preset(model_dir), task
    from keras_bert_app.models.bert_encoder import BertEncoder

    return BertEncoder.from_preset(model_dir, load_weights=presets.weights_path(model_dir) is not None), task


def run(args):
    from keras_bert_app.export.serving import export_for_serving
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor

    model, task = load_for_serving(args.model, args.head)
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
        max_query_length=data.get("max_query_length", 64),
        max_answer_length=data.get("max_answer_length", 30),
        top_k=args.top_k,
        max_predictions=args.max_predictions,
    )
    print(f"exported {type(model).__name__} to {target} (sequence length {sequence_length})")
    print(f"inspect: saved_model_cli show --dir {target} --all")
    return 0
