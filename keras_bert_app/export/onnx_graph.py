"""Edits of an ONNX graph after Keras' export, through the `onnx` package's public API.

- `replace_erfc`: tf2onnx (1.17.0, checked with TensorFlow 2.21.0 and Keras
  3.15.1) has no converter for TensorFlow's `Erfc`, which `tf.nn.gelu(x,
  approximate=False)` (BERT's exact GELU) lowers to, and leaves the node
  in the graph, so ONNX Runtime refuses the file ("No Op registered for
  Erfc"). Upstream: https://github.com/onnx/tensorflow-onnx/issues/2347
  (fix proposed in PR #2463); `erfc(x) = 1 - erf(x)` is exact, and ONNX
  has `Erf` since opset 9. `tests/export/test_onnx_export.py` notices when
  tf2onnx converts `Erfc` itself.
- `rename`: Keras names the graph's inputs `args_0_<name>` and its outputs
  `Identity:0`, ...; a served model takes `token_ids`, ... and returns
  `probabilities`, ... (the SavedModel's names).
"""

import numpy as np


def replace_erfc(model):
    """Replace every `Erfc(x)` node of `model` (an `onnx.ModelProto`) by `1 - Erf(x)`; returns their number."""
    import onnx

    graph = model.graph
    nodes = []
    replaced = 0
    for node in graph.node:
        if node.op_type != "Erfc" or node.domain not in ("", "ai.onnx"):
            nodes.append(node)
            continue
        replaced += 1
        erf = f"{node.name}/erf_output"
        one = f"{node.name}/one"
        nodes.append(onnx.helper.make_node("Constant", [], [one], name=f"{node.name}/one_constant",
                                           value=onnx.numpy_helper.from_array(np.array(1.0, np.float32))))
        nodes.append(onnx.helper.make_node("Erf", list(node.input), [erf], name=f"{node.name}/erf"))
        nodes.append(onnx.helper.make_node("Sub", [one, erf], list(node.output), name=node.name))
    del graph.node[:]
    graph.node.extend(nodes)
    return replaced


def rename(model, names):
    """Rename values of `model`'s graph: `{old name: new name}` over inputs, outputs and every node."""
    graph = model.graph
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        value.name = names.get(value.name, value.name)
    for node in graph.node:
        for index, name in enumerate(node.input):
            node.input[index] = names.get(name, name)
        for index, name in enumerate(node.output):
            node.output[index] = names.get(name, name)


def order_outputs(model, names):
    """Put the graph's outputs in the order of `names` (the SavedModel's)."""
    outputs = sorted(model.graph.output, key=lambda value: names.index(value.name))
    copies = [type(value)() for value in outputs]
    for copy, value in zip(copies, outputs):
        copy.CopyFrom(value)
    del model.graph.output[:]
    model.graph.output.extend(copies)


def name_dynamic_axes(model, axis_names):
    """Name the open axes of the graph's inputs (`axis_names` in order) instead of tf2onnx's `unk__N`."""
    for value in model.graph.input:
        for dim, name in zip(value.type.tensor_type.shape.dim, axis_names):
            if not dim.HasField("dim_value"):
                dim.dim_param = name


def opset(model):
    """The default-domain opset version of `model`."""
    return next(entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx"))




def add_labels(model, label_names):
    """Add a classifier's `label` output ([batch] strings): `label_names[label_id]`."""
    import onnx

    graph = model.graph
    table = onnx.helper.make_tensor("label_names", onnx.TensorProto.STRING, [len(label_names)],
                                    [name.encode("utf-8") for name in label_names])
    graph.node.append(onnx.helper.make_node("Constant", [], ["label_names"], name="label_names", value=table))
    graph.node.append(onnx.helper.make_node("Gather", ["label_names", "label_id"], ["label"], name="label", axis=0))
    graph.output.append(onnx.helper.make_tensor_value_info("label", onnx.TensorProto.STRING, [None]))
