"""One battery of checks that every model in the package passes (keras-hub style).

`run_model_battery(model_factory, inputs, ...)` checks: config round trip,
variable sequence lengths, predict on a tf.data dataset, fit on a toy loss,
`.keras` save/load with identical outputs, and a mixed-precision forward pass.
"""

import keras
import numpy as np
from keras import tree


def _outputs_to_numpy(outputs):
    return tree.map_structure(keras.ops.convert_to_numpy, outputs)


def assert_close(actual, expected, atol=1e-5):
    flat_actual = tree.flatten(actual)
    flat_expected = tree.flatten(expected)
    assert len(flat_actual) == len(flat_expected)
    for a, e in zip(flat_actual, flat_expected):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(e), atol=atol, rtol=0
        )


def check_config_round_trip(model):
    config = model.get_config()
    clone = model.__class__.from_config(config)
    assert clone.get_config() == config
    assert clone.count_params() == model.count_params()


def check_predict_on_dataset(model, inputs, batch_size=2):
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices(inputs).batch(batch_size)
    from_dataset = model.predict(dataset, verbose=0)
    from_arrays = model.predict(inputs, batch_size=batch_size, verbose=0)
    assert_close(from_dataset, from_arrays, atol=1e-5)


def check_fit(model, inputs, loss_output):
    """A few steps of fit on a toy loss (squared distance of one output to 0.5) lower it."""

    class Toy(keras.Model):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def call(self, x, training=False):
            out = self.inner(x, training=training)
            return out[loss_output] if isinstance(out, dict) else out

    toy = Toy(model)
    first = toy(inputs)
    targets = np.full(tuple(first.shape), 0.5, "float32")
    toy.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    history = toy.fit(inputs, targets, epochs=6, batch_size=len(targets), verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses))
    assert losses[-1] < 0.8 * losses[0], losses


def check_saved_model(model, inputs, tmp_path):
    expected = _outputs_to_numpy(model(inputs))
    path = str(tmp_path / "model.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert isinstance(restored, model.__class__)
    assert_close(_outputs_to_numpy(restored(inputs)), expected, atol=1e-6)


def check_mixed_precision(model_factory, inputs):
    previous = keras.config.dtype_policy()
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        model = model_factory()
        outputs = model(inputs)
        for value in tree.flatten(outputs):
            array = keras.ops.convert_to_numpy(keras.ops.cast(value, "float32"))
            assert np.all(np.isfinite(array))
        # Variables stay float32 under a mixed policy.
        assert all(v.dtype == "float32" for v in model.trainable_weights)
    finally:
        keras.mixed_precision.set_global_policy(previous)


def run_model_battery(model_factory, inputs, loss_output, tmp_path, variable_length_inputs=()):
    """Run every check on a fresh model from `model_factory()`."""
    keras.utils.set_random_seed(0)
    model = model_factory()
    check_config_round_trip(model)
    for other_inputs in variable_length_inputs:
        model(other_inputs)
    check_predict_on_dataset(model, inputs)
    check_saved_model(model, inputs, tmp_path)
    check_fit(model_factory(), inputs, loss_output)
    check_mixed_precision(model_factory, inputs)
