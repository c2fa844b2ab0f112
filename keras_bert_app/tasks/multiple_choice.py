"""Multiple choice: SWAG (Zellers et al. 2018), the paper's section 4.4."""

from keras_bert_app.tasks.base import Split, Task
from keras_bert_app.tasks.options import Option
from keras_bert_app.tasks.text_classification import POOLING


class MultipleChoice(Task):
    """Pick the right continuation of a sentence with `BertMultipleChoice`.

    Each (context, ending) pair is packed as `[CLS] sent1 [SEP] sent2 ending
    [SEP]`; one score per pair from the `[CLS]` vector (pooled as the
    preset's family fine-tunes unless `pooling` says), softmax over the
    choices. Metric: accuracy. Not exported for serving.

    Example:
    ```python
    kba.finetune("swag", "path/to/preset", "runs/swag", train="train.csv", dev="val.csv")
    ```
    """

    NAME = "swag"
    DESCRIPTION = "SWAG multiple choice from its CSV files"
    READER = "swag"
    MODEL_CLASS_NAME = "BertMultipleChoice"
    TRUNCATED_UNIT = "pairs"
    ONE_LABEL = True  # the right choice's id per example: length groups stratified by it
    OPTIONS = (
        Option("train", "file", "training file", required=True, stored=False),
        Option("dev", "file", "dev file (evaluated after training)", required=True, stored=False),
        Option("num_choices", "int", "endings per row", default=4, minimum=2),
        POOLING,
    )

    def read(self, path, labeled=True):
        from keras_bert_app.data.swag import read_swag

        return read_swag(path, num_choices=self.options["num_choices"], labeled=labeled)

    def featurize(self, name, examples, training=False):
        from keras_bert_app.data.swag import count_truncated

        truncated = count_truncated(examples, self.preprocessor) if len(examples) else 0
        return Split(name, examples, examples, len(examples), truncated)

    def examples_dataset(self, split):
        from keras_bert_app.data.swag import multiple_choice_examples

        return multiple_choice_examples(split.features, self.preprocessor)

    def model_class(self):
        from keras_bert_app.models.bert_multiple_choice import BertMultipleChoice

        return BertMultipleChoice

    def model_arguments(self):
        pooling = {"pooling": self.options["pooling"]} if self.options["pooling"] else {}
        return {"num_choices": self.options["num_choices"], **pooling}

    def decode(self, split, logits):
        return logits.argmax(-1).tolist()

    def metrics(self, split, predictions):
        from keras_bert_app.evaluation import glue_metrics

        return {"accuracy": glue_metrics.accuracy(split.examples.labels, predictions)}
