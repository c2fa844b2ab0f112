"""What a TensorFlow graph tensor is computed from: for tests that a model's step does not need some ops."""


def feed_forward_matmuls(output, layer):
    """Names of the MatMul ops of `layer`'s feed-forward sublayer ("intermediate") that `output` is computed from."""
    reachable, stack = set(), [output.op]
    while stack:
        op = stack.pop()
        if op.name not in reachable:
            reachable.add(op.name)
            stack.extend(tensor.op for tensor in op.inputs)
    return {name for name in reachable if f"/{layer}" in name and "/intermediate" in name and name.endswith("MatMul")}
