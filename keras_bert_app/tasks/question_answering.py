"""Extractive question answering: SQuAD v1.1 and v2.0 (the paper's sections 4.2 and 4.3)."""

import math

from keras_bert_app import errors
from keras_bert_app.tasks.base import DEFAULTS, Split, Task
from keras_bert_app.tasks.options import Option


class QuestionAnswering(Task):
    """Answer spans with `BertQuestionAnswerer`, on windows of long paragraphs.

    Each question is packed with overlapping windows of its paragraph
    (`doc_stride` pieces apart); the answer is the best-scoring span over the
    windows (`n_best_size` candidates, at most `max_answer_length` pieces).
    SQuAD v2.0 questions may have no answer: the null score ([CLS] span)
    wins when it beats the best span by more than `null_score_diff_threshold`,
    which fine-tuning tunes on dev for the best F1 (as `evaluate-v2.0.py`'s
    `best_f1_thresh`) unless given. Metrics: the official exact match and F1.
    Predictions are written as the official scripts' files:
    `predictions.json`, `nbest_predictions.json` and (v2.0) `null_odds.json`.

    Example:
    ```python
    kba.finetune("squad", "path/to/preset", "runs/squad", version="2.0",
                 train="train-v2.0.json", dev="dev-v2.0.json")
    ```
    """

    NAME = "squad"
    DESCRIPTION = "SQuAD v1.1/v2.0 question answering from its JSON files"
    READER = "squad"
    MODEL_CLASS_NAME = "BertQuestionAnswerer"
    SERVING_TASK = "question_answering"
    DEFAULTS = {**DEFAULTS, "epochs": 2, "learning_rate": 3e-5, "sequence_length": 384}
    PER_POSITION = True
    OPTIONS = (
        Option("version", "text", "SQuAD version", required=True, choices=("1.1", "2.0")),
        Option("train", "file", "training SQuAD JSON file", required=True, stored=False),
        Option("dev", "file", "dev SQuAD JSON file (predicted and scored after training)", required=True, stored=False),
        Option("doc_stride", "int", "context pieces between windows", default=128, minimum=1),
        Option("max_query_length", "int", "question pieces kept", default=64, minimum=0),
        Option("n_best_size", "int", "n-best list length", default=20, minimum=1),
        Option("max_answer_length", "int", "longest answer in pieces", default=30, minimum=1),
        Option(
            "null_score_diff_threshold", "float",
            "v2.0: fixed no-answer threshold (default: tuned on dev for the best F1)",
        ),
    )

    def spec(self):
        spec = super().spec()
        return {"reader": spec.pop("reader"), "version": spec.pop("version"), **spec}

    @property
    def version_2(self):
        return self.options["version"] == "2.0"

    @property
    def threshold(self):
        """The no-answer threshold predictions are made with (0.0 until set)."""
        threshold = self.options["null_score_diff_threshold"]
        return 0.0 if threshold is None else threshold

    # === Files and features ===
    def read(self, path, labeled=True):
        """`SquadData`; unlabelled input (`predict`) detects its version from the file."""
        from keras_bert_app.data.squad import read_squad

        return read_squad(path, version=self.options["version"] if labeled else None)

    def featurize(self, name, examples, training=False):
        """Split whose features are the `SquadFeatures` windows."""
        from keras_bert_app.data.squad_features import featurize_squad

        features = featurize_squad(
            examples.examples,
            self.tokenizer,
            max_seq_length=self.sequence_length,
            doc_stride=self.options["doc_stride"],
            max_query_length=self.options["max_query_length"],
            training=training,
        )
        if training and not len(features):
            why = ""
            if features.skipped:
                qas_id, reason = features.skipped[0]
                why = (
                    f": all {len(features.skipped)} questions were skipped, their answer not located "
                    f"(first, {qas_id}: {reason})"
                )
            raise errors.DataError(f"{examples.source}: no training window could be made{why}.")
        return Split(name, examples, features, len(features))

    def summary(self, split):
        data, features = split.examples, split.features
        line = f"{split.name}: {len(data)} SQuAD v{data.version} questions from {data.source} -> {len(features)} windows"
        if features.skipped:
            reasons = "; ".join(f"{qas_id}: {reason}" for qas_id, reason in features.skipped[:3])
            line += f"; warning: {len(features.skipped)} questions skipped (answer not located: {reasons})"
        return line

    def examples_dataset(self, split):
        """Single windows `(inputs, {"start_logits", "end_logits"})` (positions 0 when not training)."""
        import tensorflow as tf

        return tf.data.Dataset.from_tensor_slices((split.features.inputs, split.features.labels()))

    def fit_arguments(self, split, batch_size, seed):
        if self.bucketing:
            return super().fit_arguments(split, batch_size, seed)
        return {"x": split.features.inputs, "y": split.features.labels(), "batch_size": batch_size, "shuffle": True}

    def validation_data(self, split, batch_size):
        return None

    # === Model ===
    def model_class(self):
        from keras_bert_app.models.bert_question_answerer import BertQuestionAnswerer

        return BertQuestionAnswerer

    # === Predictions and scores ===
    def logits(self, model, split, batch_size):
        """`(start_logits, end_logits)` float32 [features, seq] (0.0 past a bucketed batch's length)."""
        import numpy as np

        from keras_bert_app.data.bucketing import plain_map, predict_in_order
        from keras_bert_app.models.xla import pads_to_exact_length

        if self.bucketing:
            inputs = plain_map(self.packed_examples(split), lambda inputs, *rest: inputs)
            outputs = predict_in_order(
                model, inputs, split.num_features, batch_size, self.sequence_length, per_position=True,
                exact_lengths=pads_to_exact_length(model),
            )
        else:
            outputs = model.predict(split.features.inputs, batch_size=batch_size, verbose=0)
        return np.asarray(outputs["start_logits"], "float32"), np.asarray(outputs["end_logits"], "float32")

    def tune(self, split, logits, log):
        """v2.0 without a given threshold: the one with the best dev F1; then fixed (0.0 for v1.1)."""
        if self.version_2 and self.options["null_score_diff_threshold"] is None:
            threshold = self.tune_null_threshold(split, logits)
            log(f"Tuned the no-answer threshold on dev: {threshold:.4f} (best F1).")
            self.options["null_score_diff_threshold"] = threshold
        self.options["null_score_diff_threshold"] = float(self.threshold)

    def tune_null_threshold(self, split, logits):
        """A null-score threshold with the best F1 on the split (`null_threshold_of_best_f1`).

        The sweep needs every question's best non-null answer, so predictions
        are made with an infinite threshold first.
        """
        always_answer = self.decode(split, logits, threshold=math.inf)
        return null_threshold_of_best_f1(split.examples.articles, always_answer.predictions, always_answer.null_odds)

    def decode(self, split, logits, threshold=None):
        """`SquadPredictions`: answers, n-best lists and (v2.0) null odds."""
        from keras_bert_app.evaluation.squad_postprocessing import squad_predictions

        start_logits, end_logits = logits
        return squad_predictions(
            split.features,
            start_logits,
            end_logits,
            version_2=self.version_2,
            n_best_size=self.options["n_best_size"],
            max_answer_length=self.options["max_answer_length"],
            null_score_diff_threshold=self.threshold if threshold is None else threshold,
        )

    def metrics(self, split, predictions):
        """Official scores; v2.0 with the null odds as no-answer scores at the threshold used, plus `best_*`."""
        from keras_bert_app.evaluation import squad_metrics

        articles = split.examples.articles
        if predictions.null_odds is None:
            try:
                return squad_metrics.evaluate_v1(articles, predictions.predictions)
            except ValueError as error:  # a question without a gold answer: name the file
                raise errors.DataError(f"{split.examples.source}: {error}") from None
        return squad_metrics.evaluate_v2(articles, predictions.predictions, predictions.null_odds, self.threshold)

    def statistics(self, split):
        return {"examples": len(split), "features": split.num_features}

    def training_statistics(self, split):
        return {"train_features": split.num_features, "train_skipped": len(split.features.skipped)}

    def predictions_path(self, output, name):
        return output

    def write_predictions(self, path, split, predictions, logits=None):
        """`predictions.json`, `nbest_predictions.json` (and `null_odds.json`) in the folder `path`."""
        return predictions.write(path)

    # === Serving ===
    def serving_defaults(self):
        # The featurizer refuses a question that leaves no room for the context (more than S - 4 pieces), so
        # a run at a short sequence length S kept at most S - 4 question pieces, whatever max_query_length says.
        return {"max_query_length": min(self.options["max_query_length"], self.sequence_length - 4),
                "max_answer_length": self.options["max_answer_length"]}

    def serving_head(self, model, preprocessor, label_names=None, text_pair=False, **settings):
        from keras_bert_app.export.question_answering_head import QuestionAnsweringHead

        return QuestionAnsweringHead(preprocessor, settings["max_query_length"], settings["max_answer_length"])


def null_threshold_of_best_f1(articles, predictions, null_odds):
    """The no-answer threshold with the best official v2.0 F1, halfway between two questions' null score differences.

    Args:
        articles: the `data` list of the SQuAD file.
        predictions: dict question id -> best non-null answer.
        null_odds: dict question id -> null score difference (no answer above the threshold).

    Unlike the official sweep (`best_f1_thresh`), which returns one
    question's own difference (a rounding error elsewhere can flip that
    question) and may split a group of equal differences, this sweep answers
    each group of equal differences at once and puts the threshold halfway
    to the next group.
    """
    from keras_bert_app.evaluation.squad_metrics import raw_scores

    has_answer, _, f1 = raw_scores(articles, predictions)
    groups = {}
    for qas_id, odds in null_odds.items():
        if qas_id in has_answer:  # answering it: its F1 if it has an answer, else -1 for a non-empty prediction
            gain = f1[qas_id] if has_answer[qas_id] else -float(bool(predictions.get(qas_id)))
            groups[float(odds)] = groups.get(float(odds), 0.0) + gain
    values = sorted(groups)
    if not values:
        return 0.0
    score = best = 0.0
    best_index = -1  # -1: answer nothing
    for index, value in enumerate(values):
        score += groups[value]
        if score > best + 1e-12:
            best, best_index = score, index
    if best_index < 0:
        return values[0] - 1.0
    if best_index == len(values) - 1:
        return values[-1] + 1.0
    return (values[best_index] + values[best_index + 1]) / 2
