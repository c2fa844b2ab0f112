"""One call that sets up data/model parallel training from a name.

TensorFlow backend: `tf.distribute` strategies (TPU, Mirrored,
MultiWorkerMirrored). JAX backend: `keras.distribution` (DataParallel,
ModelParallel with a LayoutMap for BERT's weights). Batches fed to `fit` hold
the *global* batch: the strategy splits it across replicas and averages the
gradients, so the learning rate is the one for the global batch.
"""

import contextlib
import json
import os

import keras

from keras_bert_app import errors

TF_STRATEGIES = ("tpu", "mirrored", "multi_worker", "cpu")
JAX_DISTRIBUTIONS = ("data_parallel", "model_parallel")
STRATEGY_NAMES = ("auto", *TF_STRATEGIES, *JAX_DISTRIBUTIONS)
TPU_ADVICE = "On Colab pick a TPU runtime; on Cloud pass --tpu NAME; or use another --strategy."


class TrainingDistribution:
    """How training is spread over devices.

    Attributes:
        name: str. The resolved name ("single" when nothing is distributed).
        num_replicas: int. Data-parallel replicas the global batch is split over.
        strategy: a `tf.distribute.Strategy`, or None.
        distribution: a `keras.distribution.Distribution`, or None.
    """

    def __init__(self, name, num_replicas=1, strategy=None, distribution=None):
        self.name = name
        self.num_replicas = num_replicas
        self.strategy = strategy
        self.distribution = distribution

    def scope(self):
        """Build and compile the model inside this context."""
        if self.strategy is not None:
            return self.strategy.scope()
        return contextlib.nullcontext()

    def per_replica_batch_size(self, global_batch_size):
        """The per-replica share of `global_batch_size`; it must divide evenly."""
        if global_batch_size % self.num_replicas:
            raise errors.ArgumentError(
                "batch_size", f"Batch size {global_batch_size} is not divisible by the {self.num_replicas} replicas "
                f"of the {self.name!r} strategy: use a multiple of {self.num_replicas}."
            )
        return global_batch_size // self.num_replicas

    @property
    def is_chief(self):
        """True on the worker that writes checkpoints, logs and the preset."""
        if self.name != "multi_worker":
            return True
        resolver = self.strategy.cluster_resolver
        return resolver.task_type in (None, "chief") or (resolver.task_type == "worker" and resolver.task_id == 0)

    def __repr__(self):
        return f"TrainingDistribution({self.name!r}, num_replicas={self.num_replicas})"


def create_distribution(name="auto", tpu_address=None, model_parallel_size=None):
    """Set up distributed training from a name.

    Args:
        name: str. One of "auto" (TPU if one is reachable, else all GPUs,
            else a multi-worker cluster from `TF_CONFIG`, else one device;
            on JAX, data parallel over all devices when there are several),
            "tpu", "mirrored", "multi_worker", "cpu" (TensorFlow backend),
            "data_parallel", "model_parallel" (JAX backend).
        tpu_address: optional str. TPU name or `grpc://` address for "tpu"
            ("" or None: the Colab / Cloud TPU VM default).
        model_parallel_size: optional int. Devices along the "model" axis
            for "model_parallel" (default: all devices).

    Returns:
        A `TrainingDistribution`. For the JAX distributions it has been
        made the global `keras.distribution` already.
    """
    if name not in STRATEGY_NAMES:
        raise errors.ArgumentError("strategy", f"Unknown strategy {name!r}: expected one of {list(STRATEGY_NAMES)}.")
    backend = keras.backend.backend()
    if name == "auto":
        return _auto(backend, tpu_address)
    if name in TF_STRATEGIES and backend != "tensorflow":
        raise errors.ArgumentError(
            "strategy", f"Strategy {name!r} is a tf.distribute strategy: run with KERAS_BACKEND=tensorflow (the "
            f"backend is {backend!r})."
        )
    if name in JAX_DISTRIBUTIONS and backend != "jax":
        raise errors.ArgumentError(
            "strategy", f"Strategy {name!r} uses keras.distribution: run with KERAS_BACKEND=jax (the backend is "
            f"{backend!r})."
        )
    if name == "tpu":
        return _tpu(tpu_address)
    if name == "mirrored":
        return _mirrored()
    if name == "multi_worker":
        return _multi_worker()
    if name == "cpu":
        import tensorflow as tf

        return TrainingDistribution("cpu", 1, strategy=tf.distribute.OneDeviceStrategy("/cpu:0"))
    if name == "data_parallel":
        return _data_parallel()
    return _model_parallel(model_parallel_size)


def distribution_in_scope_or(name="auto", tpu_address=None):
    """The `tf.distribute` strategy whose scope the caller is in, else `create_distribution(name, tpu_address)`.

    For fine-tuning: one machine, and data sets of any size. "multi_worker"
    is refused (every worker would write the same run folder), and so are
    JAX's distributions, which need every batch, the last one included, to
    split evenly over the devices; "auto" on JAX is one device.
    """
    if name == "multi_worker":
        raise errors.ArgumentError(
            "strategy", "Fine-tuning runs on one machine: use 'mirrored' (all its GPUs or CPUs) or 'tpu', not "
            "'multi_worker'.",
        )
    if name in JAX_DISTRIBUTIONS:
        raise errors.ArgumentError(
            "strategy", f"Fine-tuning takes tf.distribute strategies ('tpu', 'mirrored', 'cpu'; KERAS_BACKEND="
            f"tensorflow), not {name!r}: keras.distribution on JAX needs every batch, the last one of an epoch or of "
            "a dev set included, to split evenly over the devices.",
        )
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        if tf.distribute.has_strategy():
            strategy = tf.distribute.get_strategy()
            return TrainingDistribution(type(strategy).__name__, strategy.num_replicas_in_sync, strategy=strategy)
    if name != "auto":
        return create_distribution(name, tpu_address=tpu_address)
    if backend != "tensorflow":
        return TrainingDistribution("single")
    return _auto(backend, tpu_address, multi_worker=False)  # a TF_CONFIG cluster is for pretraining


def _auto(backend, tpu_address, multi_worker=True):
    if backend == "tensorflow":
        import tensorflow as tf

        if tpu_address or os.environ.get("TPU_NAME") or os.environ.get("COLAB_TPU_ADDR"):
            return _tpu(tpu_address)
        if len(tf.config.list_physical_devices("GPU")) > 1:
            return _mirrored()
        if multi_worker and _tf_config_workers() > 1:
            return _multi_worker()
        return TrainingDistribution("single")
    if backend == "jax" and len(keras.distribution.list_devices()) > 1:
        return _data_parallel()
    return TrainingDistribution("single")


def _tpu(tpu_address):
    import tensorflow as tf

    _check_tpu_reachable(tpu_address)
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu_address or "")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError) as error:
        where = repr(tpu_address) if tpu_address else "this machine (Colab/TPU VM default)"
        raise errors.ArgumentError(
            "tpu",
            f"No TPU found at {where}: {str(error).splitlines()[0] if str(error) else type(error).__name__}. "
            + TPU_ADVICE
        ) from None
    strategy = tf.distribute.TPUStrategy(resolver)
    return TrainingDistribution("tpu", strategy.num_replicas_in_sync, strategy=strategy)


def _check_tpu_reachable(tpu_address, timeout_seconds=10):
    """Fail fast where TF's connect would wait: no local TPU, or a dead grpc address."""
    address = tpu_address or os.environ.get("TPU_NAME") or os.environ.get("COLAB_TPU_ADDR") or ""
    if not address:
        local = [path for path in ("/dev/accel0", "/dev/vfio/0") if os.path.exists(path)]
        if not local:
            raise errors.ArgumentError(
                "tpu", f"No TPU found on this machine (no TPU device, no TPU_NAME). {TPU_ADVICE}")
        return
    target = address[len("grpc://"):] if address.startswith("grpc://") else address
    host, _, port = target.rpartition(":")
    if host and port.isdigit():
        import socket

        try:
            socket.create_connection((host, int(port)), timeout=timeout_seconds).close()
        except OSError as error:
            raise errors.ArgumentError("tpu", f"No TPU found at {address!r}: {error}. {TPU_ADVICE}") from None


def _mirrored():
    import tensorflow as tf

    devices = [device.name for device in tf.config.list_logical_devices("GPU")]
    if not devices:
        # No GPU: mirror over the logical CPU devices (one unless configured).
        devices = [device.name for device in tf.config.list_logical_devices("CPU")]
    strategy = tf.distribute.MirroredStrategy(devices=devices)
    return TrainingDistribution("mirrored", strategy.num_replicas_in_sync, strategy=strategy)


def _tf_config_workers():
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    cluster = config.get("cluster", {})
    return len(cluster.get("worker", [])) + len(cluster.get("chief", []))


def _multi_worker():
    import tensorflow as tf

    if not os.environ.get("TF_CONFIG"):
        raise errors.ArgumentError(
            "strategy", "Strategy 'multi_worker' needs TF_CONFIG (cluster and task of this worker) in the "
            "environment; it is not set."
        )
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    return TrainingDistribution("multi_worker", strategy.num_replicas_in_sync, strategy=strategy)


def _data_parallel():
    devices = keras.distribution.list_devices()
    distribution = keras.distribution.DataParallel(devices=devices)
    keras.distribution.set_distribution(distribution)
    return TrainingDistribution("data_parallel", len(devices), distribution=distribution)


def _model_parallel(model_parallel_size):
    devices = keras.distribution.list_devices()
    model_parallel_size = model_parallel_size or len(devices)
    if len(devices) % model_parallel_size:
        raise errors.ArgumentError(
            "model_parallel_size", f"model_parallel_size {model_parallel_size} does not divide the {len(devices)} "
            "devices."
        )
    batch_size = len(devices) // model_parallel_size
    mesh = keras.distribution.DeviceMesh(shape=(batch_size, model_parallel_size), axis_names=("batch", "model"),
                                         devices=devices)
    distribution = keras.distribution.ModelParallel(layout_map=bert_layout_map(mesh), batch_dim_name="batch")
    keras.distribution.set_distribution(distribution)
    return TrainingDistribution("model_parallel", batch_size, distribution=distribution)


def bert_layout_map(mesh):
    """Shard BERT's embeddings and dense kernels along the mesh's "model" axis.

    Megatron-style: the attention projections are split by head, the
    feed-forward by its intermediate units, the embeddings by hidden unit.
    Everything else (LayerNorms, biases of row-split layers) is replicated.
    """
    layout_map = keras.distribution.LayoutMap(mesh)
    model = "model"
    layout_map[r"embeddings/token_embedding/embeddings"] = (None, model)
    layout_map[r"embeddings/position_embeddings"] = (None, model)
    layout_map[r"embeddings/segment_embedding/embeddings"] = (None, model)
    # (hidden, heads, head_dim): split the heads.
    layout_map[r"attention/(query|key|value)/kernel"] = (None, model, None)
    layout_map[r"attention/(query|key|value)/bias"] = (model, None)
    # (heads, head_dim, hidden)
    layout_map[r"attention/attention_output/kernel"] = (model, None, None)
    # (hidden, intermediate) then (intermediate, hidden)
    layout_map[r"transformer_layer_\d+/intermediate/kernel"] = (None, model)
    layout_map[r"transformer_layer_\d+/intermediate/bias"] = (model,)
    layout_map[r"transformer_layer_\d+/output/kernel"] = (model, None)
    layout_map[r"masked_lm_head/dense/kernel"] = (None, model)
    return layout_map
