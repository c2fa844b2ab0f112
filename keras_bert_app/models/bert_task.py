"""BertTask: what the pretrainer and every task model share.

Config and serialization, the heads' initializer, `compile()` defaults
(the paper's AdamW with warmup and linear decay, each model's own losses and
metrics), and presets: `from_preset` through `convert.resolve` (one place for
our folders, foreign checkpoints and built-in names) and `save_to_preset`
in Keras' own weights format (`models.head_weights`).
"""

import math

import keras

from keras_bert_app import errors, presets
from keras_bert_app.compat import DictOutputNames, DistributionWorkarounds
from keras_bert_app.convert import resolve
from keras_bert_app.layers.initializers import truncated_normal
from keras_bert_app.models import head_weights
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.optimizer import BertAdamW, create_optimizer
from keras_bert_app.models.xla import resolve_jit_compile

TASK_WEIGHTS_FILE = "task.weights.h5"


def head_initializer(encoder):
    """BERT's initializer for new head weights: truncated normal with the encoder's `initializer_range`."""
    return truncated_normal(encoder.initializer_range)


class BertTask(DistributionWorkarounds, DictOutputNames, keras.Model):
    """Base of the models built on a `BertEncoder`: an encoder plus heads, built functionally.

    A subclass builds its graph in `__init__` (calling
    `super().__init__(inputs=..., outputs=...)`), keeps `self.encoder`,
    returns its heads' constructor arguments from `head_config()` and its
    default losses and metrics from `compile_defaults()`. This class gives
    it `get_config`/`from_config`, `compile` with the paper's optimizer,
    `from_preset` and `save_to_preset`.

    Class attributes a subclass may change:
        weights_file: str. The heads' weights file in a preset folder.
        config_entry: str or None. The `config.json` entry that records the
            class and its head config ("task"); None writes none.
        default_learning_rate, default_total_steps, default_warmup_ratio:
            what `compile()` uses when they are not given.
        optimizer_recipe: "finetune" (the task models) or "pretrain" (the
            pretrainers). "finetune" is HF `Trainer`'s recipe where the paper
            is silent: AdamW epsilon 1e-8, ceil(warmup_ratio * total_steps)
            warmup steps, and linear decay from the peak at the end of
            warmup. "pretrain" is the original BERT `optimization.py`:
            epsilon 1e-6, rounded warmup steps, decay from step 0.
    """

    weights_file = TASK_WEIGHTS_FILE
    config_entry = "task"
    default_learning_rate = 5e-5
    default_total_steps = None  # None: a constant learning rate
    default_warmup_ratio = 0.1
    optimizer_recipe = "finetune"

    # === Subclass hooks ===
    def head_config(self):
        """The heads' constructor arguments (everything but the encoder)."""
        return {}

    def compile_defaults(self):
        """What the "auto" arguments of `compile` become: `loss`, `metrics`, `weighted_metrics`, `loss_weights`."""
        return {}

    # === Training ===
    def compile(
        self,
        optimizer="auto",
        loss="auto",
        metrics="auto",
        weighted_metrics="auto",
        *,
        learning_rate=None,
        total_steps=None,
        warmup_ratio=None,
        jit_compile="auto",
        layerwise_lr_decay=None,
        **kwargs,
    ):
        """`keras.Model.compile` with the paper's defaults for every "auto".

        Args:
            optimizer: "auto" or keras.optimizers.Optimizer. "auto" gives
                AdamW (weight decay 0.01, LayerNorm and biases excluded,
                global clip norm 1.0) with a linear warmup over
                `warmup_ratio` of `total_steps`, then linear decay to 0
                (`models.optimizer.create_optimizer`), following the class's
                `optimizer_recipe`; a constant `learning_rate` when there
                are no `total_steps`.
            loss: "auto" or keras.losses.Loss. "auto" gives the model's own.
            metrics: "auto" or list. Keras metrics; "auto" gives the model's
                own.
            weighted_metrics: "auto" or list. Keras metrics weighted by the
                sample weights; "auto" gives the model's own.
            learning_rate: float. Peak learning rate (default: the class's,
                5e-5 for the task models, 1e-4 for the pretrainer).
            total_steps: int or None. Optimizer steps of the run (default:
                the class's; None for the task models).
            warmup_ratio: float. Share of `total_steps` spent warming up
                (default: the class's; 0.1 for the task models).
            jit_compile: "auto" or bool. With Keras' meaning ("auto":
                XLA on JAX and on TensorFlow with a GPU or TPU).
            layerwise_lr_decay: float or None. In (0, 1]; with "auto":
                layer-wise learning-rate decay as ELECTRA's `_get_layer_lrs`
                (`models.layerwise_lr_decay`): layer i of n (0-based) learns
                at `lr * decay**(n + 1 - i)`, the embeddings at
                `decay**(n + 2)`, the pooler and heads at the full rate.
            **kwargs: other arguments of `keras.Model.compile`.
        """
        defaults = self.compile_defaults()
        if _is_auto(optimizer):
            optimizer = self.default_optimizer(learning_rate, total_steps, warmup_ratio, layerwise_lr_decay)
        if _is_auto(loss):
            loss = defaults.get("loss")
            if kwargs.get("loss_weights") is None:
                kwargs["loss_weights"] = defaults.get("loss_weights")
        if _is_auto(metrics):
            metrics = defaults.get("metrics")
        if _is_auto(weighted_metrics):
            weighted_metrics = defaults.get("weighted_metrics")
        jit_compile = resolve_jit_compile(jit_compile)
        super().compile(
            optimizer=optimizer,
            loss=loss,
            metrics=metrics,
            weighted_metrics=weighted_metrics,
            jit_compile=jit_compile,
            **kwargs,
        )
        self._build_optimizer_now()

    def _build_optimizer_now(self):
        """Create the optimizer's slots now, not inside the first traced train step.

        Left to Keras, a TensorFlow model without a `tf.distribute` strategy
        creates them while tracing its first step, lifting each variable out
        of the graph one by one, which makes that step much slower. Under a
        strategy Keras builds them itself, in its scope; JAX and PyTorch
        build them eagerly before the first step already.
        """
        optimizer = self.optimizer
        if keras.config.backend() != "tensorflow" or optimizer is None or optimizer.built or not self.built:
            return
        import tensorflow as tf

        if tf.distribute.has_strategy() or self.distribute_strategy is not tf.distribute.get_strategy():
            return
        optimizer.build(self.trainable_variables)

    def default_optimizer(self, learning_rate=None, total_steps=None, warmup_ratio=None, layerwise_lr_decay=None):
        """The optimizer of `compile(optimizer="auto")`; None arguments take the class defaults."""
        if layerwise_lr_decay is not None:
            from keras_bert_app.models.layerwise_lr_decay import with_layerwise_lr_decay

            optimizer = self.default_optimizer(learning_rate, total_steps, warmup_ratio)
            return with_layerwise_lr_decay(optimizer, self, layerwise_lr_decay)
        learning_rate = self.default_learning_rate if learning_rate is None else learning_rate
        total_steps = self.default_total_steps if total_steps is None else total_steps
        warmup_ratio = self.default_warmup_ratio if warmup_ratio is None else warmup_ratio
        finetune = self.optimizer_recipe == "finetune"
        epsilon = 1e-8 if finetune else 1e-6
        if total_steps is not None:
            # HF counts warmup as ceil(ratio * total); the original BERT rounds.
            warmup_steps = math.ceil(total_steps * warmup_ratio) if finetune else int(round(warmup_ratio * total_steps))
            return create_optimizer(
                learning_rate, total_steps, min(warmup_steps, total_steps), epsilon=epsilon, decay_from_warmup=finetune
            )
        return BertAdamW(learning_rate=learning_rate, weight_decay=0.01, epsilon=epsilon, global_clipnorm=1.0)

    # === Config ===
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

    # === Presets ===
    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Build from a preset: a fine-tuned run's preset, or a new head on any encoder preset.

        A preset whose `config.json` has a "task" entry for this class (written
        by `save_to_preset`) is rebuilt with its head and fine-tuned weights
        (arguments in `kwargs` override the saved ones; a changed head gets new
        weights); otherwise the encoder's weights come from the preset and the
        head is new (its required arguments must then be given).

        Args:
            preset: str or path. A built-in name, one of our preset folders,
                an HF checkpoint folder, a keras-hub preset or an original
                Google release (`convert.resolve`).
            load_weights: bool. Load the preset's weights.
            **kwargs: the head's constructor arguments.
        """
        return cls._from_preset(preset, load_weights, head_arguments=kwargs)

    @classmethod
    def _from_preset(cls, preset, load_weights, head_arguments, encoder_arguments=None):
        """Resolve the preset once, build the model, load each weight once."""
        resolved = resolve.resolve_preset(preset, fetch_weights=load_weights)
        saved = cls._saved_head_config(resolved)
        reuse_head = cls._reuses_saved_head(resolved, saved, head_arguments)
        encoder = BertEncoder(**{**resolved.config["encoder"], **(encoder_arguments or {})})
        model = cls(encoder, **{**(saved or {}), **head_arguments})
        if load_weights:
            model._load_preset_weights(resolved, reuse_head)
        return model

    @classmethod
    def _saved_head_config(cls, resolved):
        """The head config this preset holds weights for (`{}` if it has no arguments), or None."""
        entry = resolved.config.get(cls.config_entry, {}) if cls.config_entry else {}
        if entry.get("class_name") != cls.__name__ or resolved.source_format is not None:
            return None
        return dict(entry.get("config", {}))

    @classmethod
    def _reuses_saved_head(cls, resolved, saved, head_arguments):
        """True when the saved head weights fit the head asked for (no argument changes it)."""
        return saved is not None and all(saved.get(k, v) == v for k, v in head_arguments.items())

    def _heads_file(self, resolved):
        entry = resolved.config.get(self.config_entry, {}) if self.config_entry else {}
        return resolved.folder / entry.get("weights", self.weights_file)

    def _load_preset_weights(self, resolved, reuse_head):
        if resolved.source_format is not None:
            # A foreign checkpoint fills the encoder (and a pretrainer's heads) in one pass.
            heads = resolved.load_weights(self._foreign_weights_target())
            if not heads:
                self._warn_fresh_heads(resolved)
            return
        resolved.load_weights(self.encoder)
        if reuse_head:
            path = self._heads_file(resolved)
            if not path.is_file():
                raise errors.MissingFileError(
                    "preset", f"{resolved.folder} holds a fine-tuned {type(self).__name__} (config.json's "
                    f"{self.config_entry!r} entry) but not its head's weights, {path.name}.",
                )
            head_weights.load_head_weights(self, path)
        else:
            self._warn_fresh_heads(resolved)

    def _foreign_weights_target(self):
        """What a foreign checkpoint fills: the encoder (task heads are never in one)."""
        return self.encoder

    def _warn_fresh_heads(self, resolved):
        """Called when the heads start from fresh weights; new task heads are expected, so silent."""

    def save_to_preset(self, preset_dir, label_names=None):
        """Write the encoder preset (`config.json`, `model.weights.h5`), the heads' weights and a config entry.

        Args:
            preset_dir: str or path. The folder (created; other entries of
                an existing `config.json` are kept).
            label_names: list of str or None. Names of the classes, recorded
                in the "task" entry.

        Returns:
            pathlib.Path of the folder.
        """
        folder = self.encoder.save_to_preset(preset_dir)
        head_weights.save_head_weights(self, folder / self.weights_file)
        if self.config_entry:
            entry = {"class_name": type(self).__name__, "config": self.head_config(), "weights": self.weights_file}
            if label_names is not None:
                entry["label_names"] = [str(name) for name in label_names]
            presets.write_config_entry(folder, self.config_entry, entry)
        return folder


def _is_auto(value):
    return isinstance(value, str) and value == "auto"

