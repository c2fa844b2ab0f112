"""BertTask: what every fine-tuning model shares (config, presets, the paper's optimizer)."""

import keras

from keras_bert_app import presets
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.training.xla import resolve_jit_compile

TASK_WEIGHTS_FILE = "task.weights.h5"


class BertTask(keras.Model):
    """Base of the task models: an encoder plus a head, built functionally.

    A subclass builds its graph in `__init__` (calling
    `super().__init__(inputs=..., outputs=...)`), keeps `self.encoder`, and
    returns its head's constructor arguments from `head_config()`; this class
    gives it `get_config`/`from_config`, `from_preset` (a fine-tuned task
    preset, or a new head on an encoder preset) and `save_to_preset`.
    """

    def head_config(self):
        """The head's constructor arguments (everything but the encoder)."""
        return {}

    def compile(self, *args, jit_compile="auto", **kwargs):
        """`keras.Model.compile`; "auto" `jit_compile` is XLA on TensorFlow and JAX, CPU included."""
        super().compile(*args, jit_compile=resolve_jit_compile(jit_compile, self), **kwargs)

    def get_config(self):
        return {
            "encoder": keras.layers.serialize(self.encoder),
            **self.head_config(),
            "name": self.name,
            "trainable": self.trainable,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.layers.deserialize(config["encoder"])
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Build from a preset: a fine-tuned run's preset or a plain encoder one.

        A preset whose `config.json` has a "task" entry for this class (written
        by `save_to_preset`) is rebuilt with its head and fine-tuned weights
        (arguments in `kwargs` override the saved ones; a changed head gets new
        weights); otherwise the encoder comes from `BertEncoder.from_preset`
        and the head is new (its required arguments must then be given).

        Args:
            preset: str. A built-in preset name or a preset folder.
            load_weights: bool. Load the preset's weights.
            **kwargs: the head's constructor arguments.
        """
        task = presets.read_config(preset).get("task", {})
        saved = task.get("config", {}) if task.get("class_name") == cls.__name__ else None
        reuse_head = saved is not None and all(saved.get(k, v) == v for k, v in kwargs.items())
        arguments = {**(saved or {}), **kwargs}
        encoder = BertEncoder.from_preset(preset, load_weights=load_weights and not reuse_head)
        model = cls(encoder, **arguments)
        if load_weights and reuse_head:
            model.load_weights(str(presets.preset_dir(preset) / task.get("weights", TASK_WEIGHTS_FILE)))
        return model

    def save_to_preset(self, preset_dir, label_names=None):
        """Write the encoder preset, `task.weights.h5` and a "task" config entry."""
        folder = self.encoder.save_to_preset(preset_dir)
        self.save_weights(str(folder / TASK_WEIGHTS_FILE))
        entry = {"class_name": type(self).__name__, "config": self.head_config(), "weights": TASK_WEIGHTS_FILE}
        if label_names is not None:
            entry["label_names"] = [str(name) for name in label_names]
        presets.write_config_entry(folder, "task", entry)
        return folder


def default_optimizer(learning_rate, total_steps, warmup_ratio):
    """The fine-tuning optimizer of the paper (appendix A.3), shared by the task models.

    AdamW from `training.optimizer.create_optimizer` with `warmup_ratio` of
    `total_steps` of linear warmup then linear decay; a constant learning
    rate with the same AdamW settings when `total_steps` is None.
    """
    from keras_bert_app.training import optimizer as bert_optimizer

    if total_steps is not None:
        warmup_steps = int(round(warmup_ratio * total_steps))
        return bert_optimizer.create_optimizer(learning_rate, total_steps, warmup_steps)
    optimizer = keras.optimizers.AdamW(
        learning_rate=learning_rate, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0
    )
    optimizer.exclude_from_weight_decay(var_names=list(bert_optimizer.NO_DECAY_NAMES))
    return optimizer
