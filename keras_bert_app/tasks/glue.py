"""GLUE (Wang et al. 2018): a task of the benchmark from its distributed TSV files."""

from keras_bert_app import errors
from keras_bert_app.tasks.options import Option
from keras_bert_app.tasks.text_classification import POOLING, TextClassification


class GlueClassification(TextClassification):
    """A GLUE task: `TextClassification` configured from the GLUE task table.

    The table (`keras_bert_app.data.glue.GLUE_TASKS`) gives each task's
    columns, label names (none for STS-B: regression), official metrics and
    dev files (MNLI: matched and mismatched).

    Example:
    ```python
    kba.finetune(
        "glue", "path/to/preset", "runs/mrpc", glue_task="MRPC", data_dir="glue_data/MRPC"
    )
    ```
    """

    NAME = "glue"
    DESCRIPTION = "a GLUE task from its distributed TSV files"
    READER = "glue"
    OPTIONS = (
        Option("glue_task", "text", "CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE or WNLI", required=True, flag="--task"),
        Option("data_dir", "folder", "the task's folder with train.tsv and dev*.tsv", required=True, stored=False),
        POOLING,
    )

    def __init__(self, **options):
        super().__init__(**options)
        if self.options["glue_task"] is not None:
            table = self.table()  # an unknown name fails here
            self.options["glue_task"] = self.options["glue_task"].lower().replace("-", "")
            self.label_names = list(table.label_names) if table.label_names else None

    def table(self):
        """The task's `GlueTask` row: columns, labels, metrics, dev files."""
        from keras_bert_app.data.glue import glue_task

        try:
            return glue_task(self.options["glue_task"])
        except ValueError as error:
            raise errors.ArgumentError("glue_task", f"glue_task (--task): {error}") from None

    def training_files(self):
        from keras_bert_app.data import glue

        data_dir = self.options["data_dir"]
        try:
            return (
                glue.glue_file(data_dir, "train"),
                [(name, glue.glue_file(data_dir, name)) for name in self.table().dev_files],
            )
        except FileNotFoundError as error:
            raise errors.MissingFileError("data_dir", str(error)) from None

    def read(self, path, labeled=True):
        from keras_bert_app.data.glue import read_glue

        return read_glue(path, self.options["glue_task"], labeled=labeled)

    def metric_names(self):
        return ("pearson", "spearman") if self.label_names is None else self.table().metrics

    def num_segments(self):
        return 2 if self.table().text_pair_column is not None else 1

    def serving_defaults(self):
        return {"text_pair": self.table().text_pair_column is not None}
