"""`TaskData`: how one fine-tuning task reads its files, batches, predicts and scores.

`finetune` trains with it; `predict` and `evaluate` rebuild it from a
fine-tuned preset's "task" entry, so new files are read the way training
read them.
"""

import json

READERS = ("glue", "classify", "swag", "ner")


class TaskData:
    """Reading, batching, predicting and scoring for one task spec.

    The spec is a dict: `reader` ("glue", "classify", "swag" or "ner"),
    `sequence_length`, and the reader's options (`glue_task`; `text_column`,
    `text_pair_column`, `label_column`, `regression`; `num_choices`). A
    fine-tuned preset stores it (with the label names) in its "task" entry,
    so `predict` and `evaluate` read new files the way training did.

    Args:
        spec: dict, as above.
        preset: str. The preset whose tokenizer to use.
        label_names: list of str or None. Class (or tag) names in id order;
            None takes them from the training file (`set_label_names`).
    """

    def __init__(self, spec, preset, label_names=None):
        from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
        from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

        if spec.get("reader") not in READERS:
            raise ValueError(f"Unknown task reader {spec.get('reader')!r}: expected one of {list(READERS)}.")
        self.spec = dict(spec)
        self.reader = spec["reader"]
        self.tokenizer = BertTokenizer.from_preset(preset)
        self.preprocessor = BertPreprocessor(self.tokenizer, sequence_length=spec["sequence_length"])
        self.label_names = label_names
        if self.reader == "glue":
            from keras_bert_app.data.glue import glue_task

            names = glue_task(spec["glue_task"]).label_names
            self.label_names = list(names) if names else None
        self._encoded = {}

    @classmethod
    def from_preset(cls, preset):
        """The TaskData a fine-tuned preset was trained with."""
        from keras_bert_app import presets

        task = presets.read_config(preset).get("task")
        if not task or "data" not in task:
            raise ValueError(
                f"Preset {str(preset)!r} has no fine-tuned task (no 'task' entry with "
                "'data' in its config.json); pass the preset/ folder of a finetune run."
            )
        return cls(task["data"], preset, label_names=task.get("label_names"))

    @property
    def regression(self):
        return self.reader in ("glue", "classify") and self.label_names is None and (
            self.reader == "glue" or self.spec.get("regression", False)
        )

    # === Reading ===
    def read(self, path, labeled=True):
        """The examples of a file in the spec's format."""
        spec = self.spec
        if self.reader == "glue":
            from keras_bert_app.data.glue import read_glue

            return read_glue(path, spec["glue_task"], labeled=labeled)
        if self.reader == "classify":
            from keras_bert_app.data.text_classification import read_text_classification

            return read_text_classification(
                path,
                spec["text_column"],
                label_column=spec["label_column"] if labeled else None,
                text_pair_column=spec.get("text_pair_column"),
                label_names=self.label_names,
                regression=spec.get("regression", False),
            )
        if self.reader == "swag":
            from keras_bert_app.data.swag import read_swag

            return read_swag(path, num_choices=spec["num_choices"], labeled=labeled)
        from keras_bert_app.data.conll import read_conll

        return read_conll(path, labeled=labeled)

    def set_label_names(self, train):
        """Take the class or tag names from the training examples when not given."""
        if self.label_names is not None or self.reader == "swag":
            return
        if self.reader == "ner":
            from keras_bert_app.data.conll import tag_names

            self.label_names = tag_names(train)
        else:
            self.label_names = train.label_names

    def summary(self, name, examples):
        """One line: how many examples, how many truncated."""
        truncated = self._truncated(examples)
        line = f"{name}: {len(examples)} examples from {examples.source}"
        if truncated:
            unit = "pairs" if self.reader == "swag" else "examples"
            line += f"; {truncated} {unit} longer than {self.spec['sequence_length']} tokens were truncated"
        return line

    def _truncated(self, examples):
        if self.reader == "ner":
            return self._encode(examples)[1]
        if self.reader == "swag":
            from keras_bert_app.data.swag import count_truncated
        else:
            from keras_bert_app.data.text_classification import count_truncated
        return count_truncated(examples, self.preprocessor) if len(examples) else 0

    def _encode(self, examples):
        from keras_bert_app.data.conll import encode_tagged

        key = id(examples)
        if key not in self._encoded:
            self._encoded[key] = encode_tagged(
                examples, self.tokenizer, self.spec["sequence_length"], self.label_names
            )
        return self._encoded[key]

    def dataset(self, examples, batch_size, shuffle=False, seed=None):
        """tf.data batches of the examples (with labels when they have them)."""
        if self.reader == "ner":
            from keras_bert_app.data.conll import tagging_dataset

            return tagging_dataset(self._encode(examples)[0], batch_size, shuffle, seed)
        if self.reader == "swag":
            from keras_bert_app.data.swag import multiple_choice_dataset

            return multiple_choice_dataset(examples, self.preprocessor, batch_size, shuffle, seed)
        from keras_bert_app.data.text_classification import classification_dataset

        return classification_dataset(examples, self.preprocessor, batch_size, shuffle, seed)

    # === Model ===
    def build_model(self, preset):
        """The task model on the preset's encoder (or the preset's own fine-tuned task)."""
        if self.reader == "ner":
            from keras_bert_app.models.bert_token_classifier import BertTokenClassifier

            return BertTokenClassifier.from_preset(preset, num_classes=len(self.label_names))
        if self.reader == "swag":
            from keras_bert_app.models.bert_multiple_choice import BertMultipleChoice

            return BertMultipleChoice.from_preset(preset, num_choices=self.spec["num_choices"])
        from keras_bert_app.models.bert_classifier import BertClassifier

        num_classes = 1 if self.label_names is None else len(self.label_names)
        return BertClassifier.from_preset(preset, num_classes=num_classes)

    def save_preset(self, model, folder):
        """Tokenizer + model preset, with this spec and the labels in the "task" entry."""
        from keras_bert_app import presets

        self.tokenizer.save_to_preset(folder)
        folder = model.save_to_preset(folder, label_names=self.label_names)
        task = presets.read_config(folder)["task"]
        presets.write_config_entry(folder, "task", {**task, "data": self.spec})
        return folder

    # === Predictions and scores ===
    def predict(self, model, examples, batch_size):
        """`(predictions, logits)`: class names, scores, choice ids or tag lists per example."""
        import numpy as np

        dataset = self.dataset(examples, batch_size).map(lambda inputs, *rest: inputs)
        logits = np.asarray(model.predict(dataset, verbose=0), dtype="float32")
        if self.reader == "ner":
            from keras_bert_app.data.conll import decode_tags

            return decode_tags(logits, self._encode(examples)[0], examples, self.label_names), logits
        if self.reader == "swag":
            return logits.argmax(-1).tolist(), logits
        if self.label_names is None:
            return logits[:, 0].tolist(), logits
        return [self.label_names[i] for i in logits.argmax(-1)], logits

    def metrics(self, examples, predictions):
        """The official metrics of the task on labelled examples."""
        from keras_bert_app.evaluation import glue_metrics

        if self.reader == "ner":
            from keras_bert_app.evaluation.entity_f1 import entity_scores

            return entity_scores(examples.tags, predictions)
        if self.reader == "swag":
            return {"accuracy": glue_metrics.accuracy(examples.labels, predictions)}
        if self.label_names is None:
            names = ("pearson", "spearman")
            gold = examples.labels
        else:
            names = ("accuracy",) if len(self.label_names) > 2 else ("accuracy", "f1")
            if self.reader == "glue":
                from keras_bert_app.data.glue import glue_task

                names = glue_task(self.spec["glue_task"]).metrics
            index = {name: i for i, name in enumerate(self.label_names)}
            gold, predictions = examples.labels, [index[p] for p in predictions]
        return glue_metrics.compute_metrics(names, gold, predictions)

    def write_predictions(self, path, examples, predictions):
        """JSON lines: the source line and the prediction of each example."""
        with open(path, "w", encoding="utf-8") as file:
            for index, (line, prediction) in enumerate(zip(examples.lines, predictions)):
                if self.reader == "ner":
                    record = {"line": line, "words": examples.words[index], "tags": prediction}
                else:
                    record = {"line": line, "prediction": prediction}
                file.write(json.dumps(record) + "\n")
