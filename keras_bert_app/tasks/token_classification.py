"""Token classification: named entities from CoNLL-2003 column files (the paper's section 5.3)."""

from keras_bert_app.tasks.base import DEFAULTS, Split, Task
from keras_bert_app.tasks.options import Option


class TokenClassification(Task):
    """Tag each word with `BertTokenClassifier`: the first piece's vector, a softmax over the tags.

    Tags come from the training file ("O" first, then sorted); words cut at
    the sequence length are predicted "O". Metric: conlleval's entity
    precision, recall and F1 (whole spans only).

    Example:
    ```python
    kba.finetune("ner", "path/to/preset", "runs/ner", train="train.txt", dev="dev.txt")
    ```
    """

    NAME = "ner"
    DESCRIPTION = "named entities from CoNLL-2003 column files"
    READER = "ner"
    MODEL_CLASS_NAME = "BertTokenClassifier"
    SERVING_TASK = "token_classification"
    DEFAULTS = {**DEFAULTS, "learning_rate": 5e-5}
    PER_POSITION = True
    OPTIONS = (
        Option("train", "file", "training file", required=True, stored=False),
        Option("dev", "file", "dev file (evaluated after training)", required=True, stored=False),
    )

    def read(self, path, labeled=True):
        from keras_bert_app.data.conll import read_conll

        return read_conll(path, labeled=labeled)

    def learn_labels(self, examples):
        from keras_bert_app.data.conll import tag_names

        if self.label_names is None:
            self.label_names = tag_names(examples)

    def featurize(self, name, examples, training=False):
        """Split whose features are `encode_tagged`'s arrays."""
        from keras_bert_app.data.conll import encode_tagged

        arrays, truncated = encode_tagged(examples, self.tokenizer, self.sequence_length, self.label_names)
        return Split(name, examples, arrays, len(examples), truncated)

    def examples_dataset(self, split):
        from keras_bert_app.data.conll import tagging_examples

        return tagging_examples(split.features)

    def model_class(self):
        from keras_bert_app.models.bert_token_classifier import BertTokenClassifier

        return BertTokenClassifier

    def model_arguments(self):
        return {"num_classes": len(self.label_names)}

    def num_segments(self):
        return 1

    def summary(self, split):
        line = super().summary(split)
        if split.truncated:  # their words past the limit have no logits: `decode_tags` tags them O
            head, said, tail = line.rpartition(" were truncated")
            line = f"{head}{said} (their words past the limit are tagged O){tail}"
        return line

    def decode(self, split, logits):
        from keras_bert_app.data.conll import decode_tags

        return decode_tags(logits, split.features, split.examples, self.label_names)

    def metrics(self, split, predictions):
        from keras_bert_app.evaluation.entity_f1 import entity_scores

        return entity_scores(split.examples.tags, predictions)

    def prediction_record(self, split, index, prediction, logits=None):
        return {"line": split.examples.lines[index], "words": split.examples.words[index], "tags": prediction}

    def serving_head(self, model, preprocessor, label_names=None, text_pair=False, **settings):
        from keras_bert_app.export.token_classification_head import TokenClassificationHead

        return TokenClassificationHead(preprocessor, label_names)
