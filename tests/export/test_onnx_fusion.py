"""The ONNX export's layer norms and GELUs in the forms ONNX Runtime fuses, computing the same function."""

import keras
import numpy as np
import pytest

from keras_bert_app.export.runtime_export import NEWEST_CHECKED_KERAS

pytestmark = pytest.mark.skipif(
    keras.config.backend() != "tensorflow"
    or tuple(int(part) for part in keras.__version__.split(".")[:2]) < NEWEST_CHECKED_KERAS,
    reason="Keras' ONNX export of TensorFlow graphs, checked on Keras 3.15")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("tf2onnx")


def exported(outputs_mean=False):
    """tf2onnx's graph of a Keras layer norm and a Dense with exact GELU (optionally also returning the mean)."""
    import tensorflow as tf
    import tf2onnx

    keras.utils.set_random_seed(3)
    norm = keras.layers.LayerNormalization(epsilon=1e-12, beta_initializer="random_normal",
                                           gamma_initializer="random_normal")
    dense = keras.layers.Dense(8)
    norm.build((None, None, 8))
    dense.build((None, None, 8))

    def function(x):
        result = [keras.activations.gelu(dense(norm(x)), approximate=False)]
        return result + [tf.reduce_mean(x, axis=-1, keepdims=True)] if outputs_mean else result

    spec = [tf.TensorSpec([None, None, 8], tf.float32)]
    model, _ = tf2onnx.convert.from_function(tf.function(function, input_signature=spec), input_signature=spec,
                                             opset=17)
    return model


def run(model, x):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})


def op_types(model):
    return [node.op_type for node in model.graph.node]


def test_layer_norm_and_gelu_become_fusable_ops_computing_the_same():
    from keras_bert_app.export import onnx_fusion, onnx_graph

    x = np.random.default_rng(0).normal(size=(3, 5, 8)).astype("float32") * 4
    reference = exported()
    onnx_graph.replace_erfc(reference)
    model = exported()
    assert onnx_fusion.fuse_gelus(model) == 1
    assert onnx_fusion.fuse_layer_norms(model) == 1
    onnx_graph.replace_erfc(model)
    onnx.checker.check_model(model)
    ops = op_types(model)
    assert ops.count("LayerNormalization") == 1 and "GlobalAveragePool" not in ops and "Reciprocal" not in ops
    assert "Erfc" not in ops and "Neg" not in ops
    used = {name for node in model.graph.node for name in node.input}
    assert all(tensor.name in used for tensor in model.graph.initializer)  # no constants left behind
    np.testing.assert_allclose(run(model, x)[0], run(reference, x)[0], atol=1e-5)


def test_onnx_runtime_fuses_the_rewritten_gelu():
    from keras_bert_app.export import onnx_fusion

    model = exported()
    onnx_fusion.fuse_gelus(model)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(pytest.importorskip("tempfile").mktemp(suffix=".onnx"))
    ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    ops = op_types(onnx.load(options.optimized_model_filepath))
    assert {"Gelu", "BiasGelu", "FastGelu"} & set(ops) and "Erf" not in ops


def test_a_layer_norm_whose_mean_is_used_elsewhere_is_left_as_it_is():
    from keras_bert_app.export import onnx_fusion

    model = exported(outputs_mean=True)
    before = op_types(model)
    if "GlobalAveragePool" not in before and "ReduceMean" not in before:
        pytest.fail(f"tf2onnx's layer norm changed form: {before}")
    assert onnx_fusion.fuse_layer_norms(model) == 0
    assert op_types(model) == before


def test_an_einsum_dense_reshapes_once_instead_of_reshaping_and_squeezing():
    import tensorflow as tf
    import tf2onnx

    from keras_bert_app.export import onnx_fusion

    keras.utils.set_random_seed(4)
    projection = keras.layers.EinsumDense("bsh,hnd->bsnd", output_shape=(None, 2, 4), bias_axes="nd")
    merge = keras.layers.EinsumDense("bsnd,ndh->bsh", output_shape=(None, 8), bias_axes="h")
    spec = [tf.TensorSpec([None, None, 8], tf.float32)]
    function = tf.function(lambda x: merge(projection(x)), input_signature=spec)
    model, _ = tf2onnx.convert.from_function(function, input_signature=spec, opset=17)
    x = np.random.default_rng(1).normal(size=(2, 3, 8)).astype("float32")
    reference = run(model, x)[0]
    assert op_types(model).count("Squeeze") == 2
    assert onnx_fusion.drop_squeezed_ones(model) == 2
    onnx.checker.check_model(model)
    assert "Squeeze" not in op_types(model)
    np.testing.assert_allclose(run(model, x)[0], reference, atol=1e-6)
    for shape in ((1, 1, 8), (4, 7, 8)):  # other batch sizes and lengths
        y = np.ones(shape, np.float32)
        np.testing.assert_allclose(run(model, y)[0], keras.ops.convert_to_numpy(merge(projection(y))), atol=1e-5)
