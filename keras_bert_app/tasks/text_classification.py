"""Text classification and regression on your own CSV, TSV or JSON lines files."""

from keras_bert_app.tasks.base import Split, Task
from keras_bert_app.tasks.options import Option

# The head on [CLS] (`models.sentence_head`): a model's config records it, so it is not part of the task's data.
POOLING = Option("pooling", "text", "the head on [CLS]: 'pooler' (tanh(dense), BERT's and ALBERT's) or 'cls' (the raw "
                 "[CLS], ELECTRA's); default: the preset's family", choices=("pooler", "cls"), stored=False)


class TextClassification(Task):
    """Sentence (or sentence-pair) classification, or regression, with `BertClassifier`.

    The `[CLS]` vector goes through a dense softmax layer (section 4.1 of the
    paper; pooled as the preset's family fine-tunes unless `pooling` says);
    with `regression=True` one linear output trained with MSE (STS-B).
    Class names come from `labels` or, sorted, from the training file.

    Example:
    ```python
    import keras_bert_app as kba

    result = kba.finetune(
        "classify", "bert_tiny_uncased_folder", "runs/topics",
        train="train.csv", dev="dev.csv", text_column="text", label_column="label",
    )
    ```
    """

    NAME = "classify"
    DESCRIPTION = "your own CSV/TSV/JSONL text classification"
    READER = "classify"
    MODEL_CLASS_NAME = "BertClassifier"
    SERVING_TASK = "classification"  # "regression" for one output
    ONE_LABEL = True  # a class id (a target with --regression) per example: length groups stratified by it
    OPTIONS = (
        Option("train", "file", "training file", required=True, stored=False),
        Option("dev", "file", "dev file (evaluated after training)", required=True, stored=False),
        Option("text_column", "text", "column of the text (segment A)", required=True),
        Option("text_pair_column", "text", "column of segment B, for sentence-pair tasks"),
        Option("label_column", "text", "column of the label", required=True),
        Option("labels", "names", "comma-separated class names in id order (default: sorted train labels)", stored=False),
        Option("regression", "bool", "labels are numbers: regress with MSE", default=False),
        POOLING,
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.label_names = self.options.get("labels")

    # === Files and features ===
    def read(self, path, labeled=True):
        from keras_bert_app.data.text_classification import read_text_classification

        return read_text_classification(
            path,
            self.options["text_column"],
            label_column=self.options["label_column"] if labeled else None,
            text_pair_column=self.options["text_pair_column"],
            label_names=self.label_names,
            regression=self.options["regression"],
        )

    def learn_labels(self, examples):
        from keras_bert_app import errors

        if self.label_names is None:
            self.label_names = examples.label_names
        if self.label_names is not None and len(self.label_names) < 2:
            # One class would build a one-output model: a regressor, silently.
            raise errors.DataError(
                f"{examples.source}: every training example has the label {self.label_names[0]!r}; "
                "a classifier needs at least 2 classes (list them with --labels, or use --regression for scores)."
            )

    def featurize(self, name, examples, training=False):
        from keras_bert_app.data.text_classification import token_counts

        truncated, empty = token_counts(examples, self.preprocessor) if len(examples) else (0, 0)
        return Split(name, examples, examples, len(examples), truncated, empty)

    def examples_dataset(self, split):
        from keras_bert_app.data.text_classification import classification_examples

        return classification_examples(split.features, self.preprocessor)

    # === Model ===
    def model_class(self):
        from keras_bert_app.models.bert_classifier import BertClassifier

        return BertClassifier

    def model_arguments(self):
        return {"num_classes": 1 if self.label_names is None else len(self.label_names),
                **({"pooling": self.options["pooling"]} if self.options["pooling"] else {})}

    def num_segments(self):
        return 2 if self.options["text_pair_column"] else 1

    # === Predictions and scores ===
    def decode(self, split, logits):
        if self.label_names is None:
            return logits[:, 0].tolist()
        return [self.label_names[i] for i in logits.argmax(-1)]

    def metric_names(self):
        """GLUE's metric names of this task: correlations, or accuracy (and F1 for two classes)."""
        if self.label_names is None:
            return ("pearson", "spearman")
        return ("accuracy",) if len(self.label_names) > 2 else ("accuracy", "f1")

    def metrics(self, split, predictions):
        from keras_bert_app.evaluation import glue_metrics

        if self.label_names is not None:
            index = {name: i for i, name in enumerate(self.label_names)}
            predictions = [index[prediction] for prediction in predictions]
        return glue_metrics.compute_metrics(self.metric_names(), split.examples.labels, predictions)

    # === Serving ===
    def serving_task(self, model):
        return "regression" if model.num_classes == 1 else self.SERVING_TASK

    def serving_defaults(self):
        return {"text_pair": bool(self.options["text_pair_column"])}

    def serving_head(self, model, preprocessor, label_names=None, text_pair=False, **settings):
        from keras_bert_app.export.sequence_head import SequenceHead

        return SequenceHead(self.serving_task(model), preprocessor, label_names, text_pair)
