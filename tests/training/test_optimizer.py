"""BERT's optimizer: the schedule step by step, weight decay variable by variable, AdamW vs NumPy."""

import keras
import numpy as np
import pytest

from keras_bert_app.models.optimizer import BertAdamW
from keras_bert_app.training.optimizer import create_optimizer
from keras_bert_app.training.schedules import WarmupLinearDecay

pytestmark = pytest.mark.all_backends


def test_schedule_warms_up_then_decays_linearly_to_zero():
    peak, total, warmup = 1e-3, 20, 5
    schedule = WarmupLinearDecay(peak, total_steps=total, warmup_steps=warmup)
    for step in range(total + 3):
        # The original optimization.py: warmup line below warmup_steps, else polynomial (power 1) decay.
        expected = peak * step / warmup if step < warmup else peak * max(0.0, 1 - step / total)
        np.testing.assert_allclose(float(schedule(step)), expected, rtol=1e-6, atol=1e-12, err_msg=f"step {step}")


def test_schedule_rejects_bad_steps():
    with pytest.raises(ValueError, match="warmup_steps must be in"):
        WarmupLinearDecay(1e-4, total_steps=10, warmup_steps=11)
    with pytest.raises(ValueError, match="Unknown optimizer 'sgd'"):
        create_optimizer(1e-4, 10, 1, name="sgd")


def _pretrainer():
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.models.bert_pretrainer import BertPretrainer

    return BertPretrainer(
        BertEncoder(vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8,
                    intermediate_dim=16, max_sequence_length=16, dropout=0.0)
    )


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_weight_decay_skips_layer_norm_and_bias_variable_by_variable(name):
    model = _pretrainer()
    variables = model.trainable_variables
    before = [np.array(keras.ops.convert_to_numpy(v)) for v in variables]
    learning_rate, decay = 0.1, 0.01
    optimizer = create_optimizer(learning_rate, total_steps=10, warmup_steps=0, weight_decay=decay, name=name)
    # Zero gradients: the Adam/LAMB update is 0, only the decoupled decay moves a variable.
    optimizer.apply([keras.ops.zeros(tuple(v.shape)) for v in variables], variables)
    decayed = set()
    for variable, old in zip(variables, before):
        new = keras.ops.convert_to_numpy(variable)
        excluded = variable.name in ("gamma", "beta", "bias", "output_bias")
        expected = old if excluded else old * (1 - learning_rate * decay)
        np.testing.assert_allclose(new, expected, rtol=1e-6, atol=1e-7, err_msg=variable.path)
        if not excluded:
            decayed.add(variable.name)
    assert decayed == {"kernel", "embeddings", "position_embeddings"}


def test_adamw_steps_match_numpy_with_global_norm_clipping_and_schedule():
    variable = keras.Variable(np.array([[1.0, -2.0], [0.5, 3.0]], "float32"), name="kernel")
    optimizer = create_optimizer(0.1, total_steps=4, warmup_steps=2, weight_decay=0.01)
    gradients = [np.array([[3.0, 4.0], [0.0, 0.0]]), np.array([[0.1, 0.0], [0.0, 0.2]]), np.array([[-6.0, 8.0], [0.0, 0.0]])]
    value = variable.numpy() if hasattr(variable, "numpy") else np.array(keras.ops.convert_to_numpy(variable))
    value = np.array(value, "float64")
    m = np.zeros_like(value)
    v = np.zeros_like(value)
    for step, gradient in enumerate(gradients):
        optimizer.apply([keras.ops.convert_to_tensor(gradient.astype("float32"))], [variable])
        norm = np.sqrt((gradient**2).sum())
        gradient = gradient * min(1.0, 1.0 / norm)  # global norm 1.0
        lr = 0.1 * step / 2 if step < 2 else 0.1 * (1 - step / 4)
        value = value - lr * 0.01 * value  # decoupled weight decay
        m = 0.9 * m + 0.1 * gradient
        v = 0.999 * v + 0.001 * gradient**2
        t = step + 1
        alpha = lr * np.sqrt(1 - 0.999**t) / (1 - 0.9**t)
        value = value - alpha * m / (np.sqrt(v) + 1e-6)
        np.testing.assert_allclose(keras.ops.convert_to_numpy(variable), value, rtol=1e-5, atol=1e-6, err_msg=f"step {step}")


def test_gradient_accumulation_updates_every_n_batches_with_the_schedule_in_updates():
    variable = keras.Variable(np.ones((2,), "float32"), name="kernel")
    optimizer = create_optimizer(0.1, total_steps=4, warmup_steps=0, weight_decay=0.0, accumulation_steps=2)
    values = []
    for _ in range(4):
        optimizer.apply([keras.ops.ones((2,))], [variable])
        values.append(np.array(keras.ops.convert_to_numpy(variable)))
    np.testing.assert_array_equal(values[0], np.ones(2))  # accumulating
    assert not np.allclose(values[1], values[0])  # first update
    np.testing.assert_array_equal(values[2], values[1])
    assert int(keras.ops.convert_to_numpy(optimizer.iterations)) == 2
    assert optimizer.get_config()["learning_rate"]["config"]["total_steps"] == 8


def _embedding_and_dense_model():
    inputs = keras.Input((None,), dtype="int32")
    hidden = keras.layers.Embedding(40, 6, name="embedding")(inputs)  # an IndexedSlices gradient on TensorFlow
    outputs = keras.layers.Dense(3, name="dense")(keras.ops.mean(hidden, axis=1))
    return keras.Model(inputs, outputs)


def _ours_or_keras_adamw(name, total_steps, warmup_steps):
    """`create_optimizer`'s AdamW ("ours") or Keras' AdamW with the same settings (any other name)."""
    if name == "ours":
        return create_optimizer(0.01, total_steps=total_steps, warmup_steps=warmup_steps, epsilon=1e-8)
    optimizer = keras.optimizers.AdamW(
        learning_rate=WarmupLinearDecay(0.01, total_steps=total_steps, warmup_steps=warmup_steps),
        weight_decay=0.01, epsilon=1e-8, global_clipnorm=1.0,
    )
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    return optimizer


@pytest.mark.parametrize("jit_compile", [False, True])
def test_our_adamw_trains_as_keras_adamw_does(jit_compile):
    """`create_optimizer`'s AdamW against Keras' AdamW, `fit` by `fit` (no clipping at these gradients): on
    TensorFlow its Adam part is TensorFlow's kernel, elsewhere `keras.ops`; with and without XLA."""
    if jit_compile and keras.config.backend() == "torch":
        pytest.skip("PyTorch has no XLA.")
    rng = np.random.default_rng(0)
    x = rng.integers(0, 40, size=(64, 7)).astype("int32")
    y = rng.integers(0, 3, size=(64,)).astype("int32")
    weights = []
    for optimizer in ("ours", "keras"):
        keras.utils.set_random_seed(1)
        model = _embedding_and_dense_model()
        optimizer = _ours_or_keras_adamw(optimizer, total_steps=12, warmup_steps=2)
        model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      jit_compile=jit_compile)
        model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
        weights.append([keras.ops.convert_to_numpy(v) for v in model.trainable_variables])
    initial = _embedding_and_dense_model()  # the same seed's starting point: the updates must have moved it
    for ours, reference in zip(*weights):
        np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-6)
    assert not np.allclose(weights[0][0], keras.ops.convert_to_numpy(initial.trainable_variables[0]))


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="TensorFlow's Adam kernel")
def test_on_tensorflow_each_dense_gradient_goes_through_the_adam_kernel():
    """One `ResourceApplyAdam` per variable with a dense gradient (the clipped embedding's included), none for an
    embedding's sliced gradient when nothing clips (that one takes the `keras.ops` update)."""
    import tensorflow as tf

    model = _embedding_and_dense_model()
    model.build((None, 7))
    token_ids = tf.constant([[1, 2, 2, 5, 0, 0, 3]])

    def kernels(optimizer):
        def step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(model(token_ids))
            optimizer.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)

        optimizer.build(model.trainable_variables)
        graph = tf.function(step).get_concrete_function().graph
        return sum(op.type == "ResourceApplyAdam" for op in graph.get_operations())

    clipping = create_optimizer(1e-3, total_steps=10, warmup_steps=1)
    assert kernels(clipping) == len(model.trainable_variables) == 3
    assert kernels(BertAdamW(learning_rate=1e-3)) == 2  # the embedding's IndexedSlices: not through the kernel


def _embedding_step(optimizer, model, token_ids, scale, dense=False, jit_compile=False):
    """One `optimizer.apply` of the gradient of `scale * sum(model(token_ids))`, in a `tf.function`.

    `dense`: the embedding's IndexedSlices gradient made a dense array first.
    """
    import tensorflow as tf

    @tf.function(jit_compile=jit_compile)
    def step():
        with tf.GradientTape() as tape:
            loss = scale * tf.reduce_sum(model(token_ids))
        gradients = tape.gradient(loss, model.trainable_variables)
        if dense:
            gradients = [tf.convert_to_tensor(gradient) for gradient in gradients]
        optimizer.apply(gradients, model.trainable_variables)

    return step


REPEATED_IDS = [[1, 2, 2, 5, 1, 1], [7, 2, 3, 3, 9, 1]]


def _clipped_training(name, jit_compile=False, on_graph=None):
    """The weights after 3 steps of a large (clipped) gradient on `REPEATED_IDS`.

    "ours": `create_optimizer`'s AdamW on the IndexedSlices gradient; "keras-dense": Keras' AdamW given the
    dense gradient; "keras-slices": Keras' AdamW on the IndexedSlices. `on_graph(graph)` sees the step's graph.
    """
    import tensorflow as tf

    token_ids = tf.constant(REPEATED_IDS, "int32")
    keras.utils.set_random_seed(3)
    model = _embedding_and_dense_model()
    model(token_ids)
    optimizer = _ours_or_keras_adamw(name, total_steps=10, warmup_steps=0)
    optimizer.build(model.trainable_variables)
    step = _embedding_step(optimizer, model, token_ids, scale=50.0, dense=name == "keras-dense",
                           jit_compile=jit_compile)
    if on_graph is not None:
        on_graph(step.get_concrete_function().graph)
    for _ in range(3):
        step()
    return [keras.ops.convert_to_numpy(v) for v in model.trainable_variables]


def test_clipping_takes_the_norm_of_the_dense_embedding_gradient_with_repeated_ids():
    """The global norm of an IndexedSlices gradient is the dense gradient's: rows of repeated ids summed first.

    Keras' TensorFlow clipping squares the rows as given, one per
    occurrence, so a batch that repeats a token gets a smaller norm than
    the dense gradient has (and than JAX, PyTorch, HF's
    `clip_grad_norm_` or the original BERT's one-hot embeddings on TPU
    take). The reference is Keras' AdamW given the dense gradient. The
    gradient is large, so the clip scales it, and the ids repeat, so the
    two norms differ.
    """
    if keras.config.backend() != "tensorflow":
        pytest.skip("IndexedSlices are TensorFlow's; JAX and PyTorch gradients are dense.")
    reference = _clipped_training("keras-dense")
    for ours, expected in zip(_clipped_training("ours"), reference):
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(_clipped_training("keras-slices")[1], reference[1], rtol=1e-5, atol=1e-6)


def test_clipping_an_embedding_gradient_under_xla_keeps_static_shapes():
    """Under XLA too the slices are made dense (no `tf.unique`, whose size per batch would be a compile each)."""
    if keras.config.backend() != "tensorflow":
        pytest.skip("IndexedSlices are TensorFlow's.")
    kinds = set()
    ours = _clipped_training("ours", jit_compile=True,
                             on_graph=lambda graph: kinds.update(op.type for op in graph.get_operations()))
    assert not kinds & {"Unique", "If", "StatelessIf"}
    for got, expected in zip(ours, _clipped_training("keras-dense", jit_compile=True)):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
