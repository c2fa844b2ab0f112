"""Keras' TensorBoard callback, its scalars written by TensorFlow's own summary ops.

`keras.callbacks.TensorBoard` writes each scalar through
`tf.summary.scalar`, whose first call imports the `tensorboard` package's
summary modules (its scalar plugin, its TensorFlow stub, fsspec): 0.5 to
0.6 s on 2 CPU cores, paid in the first training step of every run, for
one protocol buffer. The same event is three lines of TensorFlow: the
scalar as a float32 tensor, under the scalar plugin's metadata (plugin
"scalars", version 0, whose serialized content is empty), through
`tf.summary.write`. `tests/training/test_tensorboard_logs.py` checks that
the events are byte for byte the ones `tf.summary.scalar` writes. Every
other summary (histograms, images, the graph) is `tf.summary`'s own.
"""

import keras

# TensorBoard's scalar plugin: its name, and `ScalarPluginData(version=0)` serialized (proto3 default: empty).
SCALAR_PLUGIN_NAME = "scalars"
SCALAR_PLUGIN_CONTENT = b""


class _SummaryModule:
    """`tf.summary` with `scalar` written by core TensorFlow; every other name is `tf.summary`'s."""

    def __init__(self):
        import tensorflow as tf

        self._summary = tf.summary

    def __getattr__(self, name):
        return getattr(self._summary, name)

    def scalar(self, name, data, step=None, description=None):
        """`tf.summary.scalar`'s event: the same tag, tensor, step and metadata."""
        import tensorflow as tf
        from tensorflow.core.framework import summary_pb2

        metadata = summary_pb2.SummaryMetadata(
            summary_description=description,
            plugin_data=summary_pb2.SummaryMetadata.PluginData(
                plugin_name=SCALAR_PLUGIN_NAME, content=SCALAR_PLUGIN_CONTENT
            ),
        )
        with self._summary.experimental.summary_scope(name, "scalar_summary", values=[data, step]) as (tag, _):
            tf.debugging.assert_scalar(data)
            return self._summary.write(tag=tag, tensor=tf.cast(data, tf.float32), step=step, metadata=metadata)


class TensorBoard(keras.callbacks.TensorBoard):
    """`keras.callbacks.TensorBoard` (same arguments, logs and layout) without the `tensorboard` import.

    Example:
    ```python
    model.fit(x, y, callbacks=[TensorBoard("run/logs")])
    ```
    """

    @property
    def summary(self):
        if self._summary_module is None:
            self._summary_module = _SummaryModule()
        return self._summary_module
