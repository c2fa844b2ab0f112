"""Layer norms and GELUs of Keras' ONNX export rewritten to the forms ONNX Runtime fuses.

Keras (3.15.1) computes `LayerNormalization` from moments on TensorFlow, and
tf2onnx (1.17.0) exports it as 11 nodes (two `GlobalAveragePool` means,
`Sqrt`, `Reciprocal`, the scale and shift spread over `Neg`/`Mul`/`Add`);
`tf.nn.gelu(approximate=False)` becomes `0.5 x erfc(-x / sqrt 2)`. Neither
form is one that ONNX Runtime's graph optimizer (session level) or its
transformer optimizer (`onnxruntime.transformers.optimizer`, model types
`bert`, `bert_tf`, `bert_keras`: 0 fusions on this graph) recognizes, so each
runs node by node: at one short request, per-node overhead is most of the
time. These rewrites replace each with what the exporters of PyTorch emit:

- `fuse_layer_norms`: the 11 nodes -> ONNX's `LayerNormalization` (opset 17);
- `fuse_gelus`: `0.5 x erfc(-x / sqrt 2)` -> `0.5 x (1 + erf(x / sqrt 2))`
  (the same function), which ONNX Runtime fuses into `Gelu`/`BiasGelu`;
- `drop_squeezed_ones`: tf2onnx's einsum (each `EinsumDense`) reshapes its
  product to trailing axes of size 1 and squeezes them: one `Reshape` to
  the final shape instead.

Each match is checked whole (every inner value used only inside it, the
constants of the right size); a graph without the pattern is left as it is.
"""

import math

import numpy as np


class _Graph:
    """Producers, consumers and constant values of an `onnx.GraphProto`, for matching."""

    def __init__(self, graph):
        import onnx

        self.graph = graph
        self.producer = {output: node for node in graph.node for output in node.output}
        self.consumers = {}
        for node in graph.node:
            for name in dict.fromkeys(node.input):  # (once per node: Mul(d, d) reads d twice)
                self.consumers.setdefault(name, []).append(node)
        self.constants = {tensor.name: onnx.numpy_helper.to_array(tensor) for tensor in graph.initializer}
        for node in graph.node:
            if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
                self.constants[node.output[0]] = onnx.numpy_helper.to_array(node.attribute[0].t)
        self.outputs = {value.name for value in graph.output}

    def node(self, name, op_type):
        """The node of `op_type` producing `name`, or None."""
        node = self.producer.get(name)
        return node if node is not None and node.op_type == op_type else None

    def users(self, name, op_type=None):
        return [node for node in self.consumers.get(name, []) if op_type is None or node.op_type == op_type]

    def other(self, node, name):
        """The input of a two-input `node` that is not `name` (None if both are)."""
        first, second = node.input
        return second if first == name else first if second == name else None

    def constant(self, name):
        return self.constants.get(name)

    def inner(self, nodes, outputs_kept):
        """Whether every output of `nodes` except `outputs_kept` is used only by `nodes` (and not a graph output)."""
        members = {id(node) for node in nodes}
        for node in nodes:
            for name in node.output:
                if name in outputs_kept:
                    continue
                if name in self.outputs or any(id(user) not in members for user in self.users(name)):
                    return False
        return True


def _replace(graph, matches):
    """Remove each match's nodes, put its new nodes where its last node was, drop the constants left unused."""
    removed = {id(node) for old, _ in matches for node in old}
    anchors = {id(old[-1]): new for old, new in matches}
    nodes = []
    for node in graph.node:
        if id(node) in anchors:
            nodes.extend(anchors[id(node)])
        elif id(node) not in removed:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    used = _used_names(graph)
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    if len(kept) < len(graph.initializer):
        del graph.initializer[:]
        graph.initializer.extend(kept)


def _used_names(graph):
    """Every value name read by `graph`'s nodes (in subgraphs too) or returned by it."""
    used = {value.name for value in graph.output}
    for node in graph.node:
        used.update(node.input)
        for attribute in node.attribute:
            for subgraph in list(attribute.graphs) + ([attribute.g] if attribute.HasField("g") else []):
                used |= _used_names(subgraph)
    return used


def _scalar(value, expected=None):
    if value is None or value.size != 1:
        return None
    number = float(value.reshape(()))
    return number if expected is None or math.isclose(number, expected, rel_tol=1e-5) else None


def _is_mean_over_last_axis(node, graph):
    """A `GlobalAveragePool` (tf2onnx's mean over the last axis of a rank-3 value) or `ReduceMean` over -1."""
    if node is None:
        return False
    if node.op_type == "GlobalAveragePool":
        return True
    if node.op_type != "ReduceMean":
        return False
    axes = graph.constant(node.input[1]) if len(node.input) > 1 else next(
        (np.array(a.ints) for a in node.attribute if a.name == "axes"), None)
    keepdims = next((a.i for a in node.attribute if a.name == "keepdims"), 1)
    return axes is not None and list(axes.reshape(-1)) == [-1] and keepdims == 1


def _match_layer_norm(mean, graph):
    """The nodes of one layer norm whose first mean is `mean`, and its x, gamma, beta, epsilon; or None.

    x -> mean -> Sub(x, mean) -> Mul(d, d) -> mean -> Add(eps) -> Sqrt -> Reciprocal -> Mul(gamma) = scale;
    Add(Mul(x, scale), Add(Mul(Neg(mean), scale), beta)).
    """
    x = mean.input[0]
    subs = [node for node in graph.users(mean.output[0], "Sub") if list(node.input) == [x, mean.output[0]]]
    negs = graph.users(mean.output[0], "Neg")
    if len(subs) != 1 or len(negs) != 1:
        return None
    square = graph.users(subs[0].output[0], "Mul")
    if len(square) != 1 or square[0].input[0] != square[0].input[1]:
        return None
    variance = graph.users(square[0].output[0])
    if len(variance) != 1 or not _is_mean_over_last_axis(variance[0], graph):
        return None
    chain, current = [], variance[0].output[0]
    for op_type in ("Add", "Sqrt", "Reciprocal", "Mul"):
        users = graph.users(current, op_type)
        if len(users) != 1:
            return None
        chain.append(users[0])
        current = users[0].output[0]
    add_epsilon, sqrt, reciprocal, scale = chain
    epsilon = _scalar(graph.constant(graph.other(add_epsilon, variance[0].output[0])))
    gamma = graph.constant(graph.other(scale, reciprocal.output[0]))
    if epsilon is None or gamma is None:
        return None
    scaled_x = [node for node in graph.users(scale.output[0], "Mul") if x in node.input]
    scaled_mean = graph.users(negs[0].output[0], "Mul")
    if len(scaled_x) != 1 or len(scaled_mean) != 1 or scale.output[0] not in scaled_mean[0].input:
        return None
    shift = graph.users(scaled_mean[0].output[0], "Add")
    if len(shift) != 1:
        return None
    beta = graph.constant(graph.other(shift[0], scaled_mean[0].output[0]))
    final = [node for node in graph.users(shift[0].output[0], "Add") if scaled_x[0].output[0] in node.input]
    if beta is None or len(final) != 1 or gamma.size != beta.size:
        return None
    nodes = [mean, subs[0], negs[0], square[0], variance[0], *chain, scaled_x[0], scaled_mean[0], shift[0], final[0]]
    if not graph.inner(nodes, {final[0].output[0]}):
        return None
    return nodes, x, gamma.reshape(-1), beta.reshape(-1), epsilon


def fuse_layer_norms(model):
    """Replace each exported Keras layer norm of `model` (an `onnx.ModelProto`) by `LayerNormalization`.

    Returns their number.
    """
    import onnx
    from onnx import helper

    graph = _Graph(model.graph)
    matches = []
    for node in list(model.graph.node):
        if not _is_mean_over_last_axis(node, graph):
            continue
        found = _match_layer_norm(node, graph)
        if found is None:
            continue
        nodes, x, gamma, beta, epsilon = found
        final = nodes[-1]
        gamma_name, beta_name = f"{final.name}/layer_norm_gamma", f"{final.name}/layer_norm_beta"
        model.graph.initializer.extend([onnx.numpy_helper.from_array(gamma.astype(np.float32), gamma_name),
                                        onnx.numpy_helper.from_array(beta.astype(np.float32), beta_name)])
        fused = helper.make_node("LayerNormalization", [x, gamma_name, beta_name], [final.output[0]],
                                 name=f"{final.name}/layer_norm", axis=-1, epsilon=epsilon)
        matches.append((nodes, [fused]))
    _replace(model.graph, matches)
    return len(matches)


def _match_gelu(erfc, graph):
    """The nodes of one `0.5 x erfc(-x / sqrt 2)` around `erfc`, and its x; or None.

    Mul(Neg(x), 1/sqrt 2) -> Erfc; Mul(Mul(0.5, x), Erfc).
    """
    scaled = graph.node(erfc.input[0], "Mul")
    if scaled is None:
        return None
    neg = next((graph.node(name, "Neg") for name in scaled.input if graph.node(name, "Neg") is not None), None)
    if neg is None or _scalar(graph.constant(graph.other(scaled, neg.output[0])), 1 / math.sqrt(2)) is None:
        return None
    x = neg.input[0]
    outputs = graph.users(erfc.output[0], "Mul")
    if len(outputs) != 1:
        return None
    half = graph.node(graph.other(outputs[0], erfc.output[0]), "Mul")
    if half is None or x not in half.input or _scalar(graph.constant(graph.other(half, x)), 0.5) is None:
        return None
    nodes = [neg, scaled, half, erfc, outputs[0]]
    return (nodes, x) if graph.inner(nodes, {outputs[0].output[0]}) else None


def fuse_gelus(model):
    """Rewrite each exact GELU of `model` from TensorFlow's erfc form to the erf form ONNX Runtime fuses.

    Returns their number.
    """
    import onnx
    from onnx import helper

    graph = _Graph(model.graph)
    matches = []
    for node in list(model.graph.node):
        if node.op_type != "Erfc" or node.domain not in ("", "ai.onnx"):
            continue
        found = _match_gelu(node, graph)
        if found is None:
            continue
        nodes, x = found
        name = nodes[-1].name
        constants = {"sqrt_2": math.sqrt(2), "one": 1.0, "half": 0.5}
        model.graph.initializer.extend([onnx.numpy_helper.from_array(np.array(value, np.float32), f"{name}/{key}")
                                        for key, value in constants.items()])
        new = [helper.make_node("Div", [x, f"{name}/sqrt_2"], [f"{name}/scaled"], name=f"{name}/div"),
               helper.make_node("Erf", [f"{name}/scaled"], [f"{name}/erf"], name=f"{name}/erf"),
               helper.make_node("Add", [f"{name}/erf", f"{name}/one"], [f"{name}/one_plus"], name=f"{name}/add"),
               helper.make_node("Mul", [x, f"{name}/one_plus"], [f"{name}/x_times"], name=f"{name}/mul"),
               helper.make_node("Mul", [f"{name}/x_times", f"{name}/half"], [nodes[-1].output[0]],
                                name=f"{name}/half_mul")]
        matches.append((nodes, new))
    _replace(model.graph, matches)
    return len(matches)


def _length(name, graph):
    """The number of entries of a 1-D shape piece: a constant's, or a `Gather` of constant indices'; else None."""
    value = graph.constant(name)
    if value is not None:
        return value.size
    gather = graph.node(name, "Gather")
    indices = graph.constant(gather.input[1]) if gather is not None else None
    return None if indices is None or indices.ndim != 1 else indices.size


def drop_squeezed_ones(model):
    """`Squeeze(Reshape(x, Concat(..., ones)), last axes)` -> `Reshape(x, Concat(...))` in `model`.

    Returns their number.
    """
    from onnx import helper

    graph = _Graph(model.graph)
    matches = []
    for squeeze in list(model.graph.node):
        if squeeze.op_type != "Squeeze" or len(squeeze.input) != 2:
            continue
        reshape = graph.node(squeeze.input[0], "Reshape")
        concat = graph.node(reshape.input[1], "Concat") if reshape is not None else None
        axes, ones = graph.constant(squeeze.input[1]), graph.constant(concat.input[-1]) if concat else None
        if concat is None or axes is None or ones is None or not (ones.ndim == 1 and (ones == 1).all()):
            continue
        lengths = [_length(name, graph) for name in concat.input]
        if None in lengths:
            continue
        rank = sum(lengths)
        if sorted(int(axis) % rank for axis in axes.reshape(-1)) != list(range(rank - ones.size, rank)):
            continue
        if not graph.inner([concat, reshape, squeeze], {squeeze.output[0]}):
            continue
        shape = f"{concat.name}/without_ones"
        matches.append(([concat, reshape, squeeze], [
            helper.make_node("Concat", list(concat.input[:-1]), [shape], name=shape, axis=0),
            helper.make_node("Reshape", [reshape.input[0], shape], [squeeze.output[0]], name=reshape.name),
        ]))
    _replace(model.graph, matches)
    return len(matches)
