"""How a tokenizer runs when it is called eagerly: op by op, or its compiled graph.

Tracing a tokenizer's graph takes seconds; running its ops one by one
(vectorised over the batch) takes milliseconds per call. The graph only
saves per-op overhead, which pays for many calls: an eager tokenizer runs op
by op and compiles its graph after `COMPILE_AFTER` calls. Both run the same
ops and give the same ids. Inside `tf.data` or a SavedModel none of this applies.
"""

import tensorflow as tf

COMPILE_AFTER = 32  # eager calls before the graph is compiled


class EagerRunner:
    """Call `op_by_op(text)` until the work done makes `graph(text)` (a tf.function) worth tracing.

    Args:
        graph: the compiled function, [batch] tf.string -> outputs.
        op_by_op: the same function, not compiled.
    """

    def __init__(self, graph, op_by_op):
        self.graph = graph
        self.op_by_op = op_by_op
        self.work = 0

    @property
    def compiled(self):
        """True once calls go to the compiled graph."""
        return self.work > COMPILE_AFTER

    def __call__(self, text):
        # text: [batch] tf.string, eager (its batch size is known)
        self.work += 1
        return (self.graph if self.compiled else self.op_by_op)(text)


def map_over_strings(fn, inputs, num_outputs=1, name="tokenizer"):
    """Apply `fn` ([batch] strings -> ragged [batch, (...)], or a tuple of
    `num_outputs` of them) to strings of any rank."""
    single = num_outputs == 1
    apply = (lambda x: (fn(x),)) if single else fn
    if isinstance(inputs, tf.RaggedTensor):
        outputs = tuple(inputs.with_flat_values(y) for y in apply(inputs.flat_values))
    else:
        inputs = tf.convert_to_tensor(inputs, dtype=tf.string)
        rank = inputs.shape.rank
        if rank is None:
            raise ValueError(f"{name}: the input strings must have a known rank")
        if rank == 0:  # one row: its values are the row
            outputs = tuple(y.flat_values for y in apply(tf.reshape(inputs, [1])))
        elif rank == 1:
            outputs = apply(inputs)
        else:
            ragged = tf.RaggedTensor.from_tensor(inputs, ragged_rank=rank - 1)
            outputs = tuple(ragged.with_flat_values(y) for y in apply(ragged.flat_values))
    return outputs[0] if single else outputs
