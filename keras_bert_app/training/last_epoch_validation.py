"""The last epoch's validation scores and the dev predictions from one pass over the dev set.

`kba.finetune` scores the first dev set twice after its last epoch if left
to Keras: `fit`'s validation pass (the `val_*` figures of the logs) and the
prediction pass behind the official metrics. Both run the same model on the
same length-grouped batches. So the last epoch's validation is not Keras':
`LastEpochValidation` runs the prediction pass at the end of that epoch and
scores each of its batches as Keras' `test_step` does (the compiled loss,
averaged over batches weighted by their size, and the compiled metrics),
so the logs get the same `val_*` figures and the official metrics reuse the
logits. Earlier epochs (per `validation_freq`) keep Keras' own pass.
"""

import inspect

import keras


def scores_from_predictions(task):
    """True when `task`'s validation batches are its prediction batches, so one pass can give both.

    `Task`'s own `validation_data`, and a `logits` that takes `on_batch`;
    a subclass that overrides the first, or an older `logits(model, split,
    batch_size)`, keeps Keras' validation pass.
    """
    from keras_bert_app.tasks.base import Task

    return (
        type(task).validation_data is Task.validation_data
        and "on_batch" in inspect.signature(task.logits).parameters
    )


def keras_validation_epochs(epochs, validation_freq):
    """The 1-based epochs whose validation Keras still runs: `validation_freq`'s, but the last."""
    return [epoch for epoch in range(1, epochs) if epoch % validation_freq == 0]


class LastEpochValidation(keras.callbacks.Callback):
    """At the end of the last epoch: the dev logits, and `val_*` in the epoch's logs.

    Put it before the callbacks that read the logs (`CSVLogger`,
    `TensorBoard`); Keras adds its progress bar and `History` after the
    callbacks it is given. Those in `callbacks` also get `on_test_begin`
    and `on_test_end`, as Keras' validation pass gives them (TensorBoard's
    `evaluation_*_vs_iterations`).

    Args:
        epochs: int. The epochs of the `fit`.
        logits: callable taking `on_batch` and returning the dev logits
            (`Task.logits` on the dev split), calling `on_batch(labels, outputs)`
            for each batch it runs.
        callbacks: the other callbacks of the `fit`.

    Attributes:
        dev_logits: the logits of the last epoch's pass (None before it).
    """

    def __init__(self, epochs, logits, callbacks=()):
        super().__init__()
        self.epochs = epochs
        self.compute_logits = logits
        self.callbacks = list(callbacks)
        self.dev_logits = None

    def on_epoch_end(self, epoch, logs=None):
        if epoch != self.epochs - 1:
            return
        model = self.model
        for callback in self.callbacks:
            callback.on_test_begin()
        model.reset_metrics()
        loss = keras.metrics.Mean(name="loss")
        self.dev_logits = self.compute_logits(on_batch=lambda labels, outputs: score_batch(model, labels, outputs, loss))
        scores = {name: float(value) for name, value in model.get_metrics_result().items()}
        scores["loss"] = float(loss.result())
        for callback in self.callbacks:
            callback.on_test_end(dict(scores))
        if logs is not None:
            logs.update({f"val_{name}": value for name, value in scores.items()})


def score_batch(model, labels, outputs, loss_mean):
    """Keras' `test_step` on one batch whose outputs are known: `loss_mean` and the compiled metrics updated.

    The loss is `model.compute_loss` (the compiled losses), averaged over the
    batches weighted by their size as Keras' loss tracker averages it; the
    metrics are `model.compute_metrics`'s. Under a `tf.distribute`
    strategy's scope the loss comes divided by the replicas (for summing
    their gradients): the figure kept is the whole batch's, as Keras logs it.
    """
    y = labels[0] if labels else None
    sample_weight = labels[1] if len(labels) > 1 else None
    loss = model.compute_loss(x=None, y=y, y_pred=outputs, sample_weight=sample_weight, training=False)
    batch = len(keras.tree.flatten(outputs)[0])
    loss_mean.update_state(_unscaled_for_distribution(loss), sample_weight=batch)
    model.compute_metrics(None, y, outputs, sample_weight=sample_weight)


def _unscaled_for_distribution(loss):
    """`loss` times the replicas of the current TensorFlow strategy (it divides each replica's loss by them)."""
    if keras.config.backend() != "tensorflow":
        return loss
    import tensorflow as tf

    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    return loss * replicas if replicas > 1 else loss
