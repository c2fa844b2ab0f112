"""The fine-tuning optimizer that `compile` builds vs HF transformers' `Trainer` (issue 24).

Step for step the learning rates of `get_linear_schedule_with_warmup` with
Trainer's warmup count (`ceil(total_steps * warmup_ratio)`), and AdamW
updates within 1% of torch's for gradients of fine-tuning size.
"""

import math

import keras
import numpy as np
import pytest

import keras_bert_app as kba

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

# The schedule is keras.ops arithmetic on a step counter: checked on TensorFlow; the AdamW
# update, which each backend computes its own way, on every backend.


def _tiny_encoder():
    return kba.BertEncoder(vocabulary_size=20, num_layers=1, num_heads=1, hidden_dim=4,
                           intermediate_dim=8, max_sequence_length=8)


def _hf_learning_rates(learning_rate, total_steps, warmup_ratio=0.1):
    """The rate HF's loop uses for each update (`Trainer`: warmup_ratio -> ceil)."""
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=learning_rate)
    scheduler = transformers.get_linear_schedule_with_warmup(
        optimizer, math.ceil(total_steps * warmup_ratio), total_steps
    )
    rates = []
    for _ in range(total_steps + 2):
        rates.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    return rates


def _our_learning_rates(model, num_steps):
    optimizer = model.optimizer
    rates = []
    for step in range(num_steps):
        optimizer.iterations.assign(step)  # the update counter before the update
        rates.append(float(keras.ops.convert_to_numpy(optimizer.learning_rate)))
    return rates


# (peak learning rate, total steps): 10% warmup of 1, 3.7 -> 4, 5.6 -> 6, 12.3 -> 13 and 3.0000000000000004 -> 4 steps.
@pytest.mark.parametrize("learning_rate,total_steps", [(5e-5, 10), (2e-5, 37), (5e-5, 56), (1e-4, 123), (3e-5, 30), (5e-5, 1)])
def test_classifier_learning_rates_equal_hf_linear_schedule_with_warmup(learning_rate, total_steps):
    model = kba.BertClassifier(_tiny_encoder(), num_classes=2)
    model.compile(learning_rate=learning_rate, total_steps=total_steps)  # finetune's call; warmup_ratio 0.1
    expected = _hf_learning_rates(learning_rate, total_steps)
    ours = _our_learning_rates(model, len(expected))
    np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-12)
    assert max(ours) == pytest.approx(learning_rate) or total_steps == 1  # the peak is reached


def test_every_task_model_uses_the_same_schedule():
    expected = _hf_learning_rates(3e-5, 25)
    for model in (kba.BertTokenClassifier(_tiny_encoder(), num_classes=3),
                  kba.BertMultipleChoice(_tiny_encoder(), num_choices=2),
                  kba.BertQuestionAnswerer(_tiny_encoder())):
        model.compile(learning_rate=3e-5, total_steps=25)
        np.testing.assert_allclose(_our_learning_rates(model, len(expected)), expected, rtol=1e-6, atol=1e-12,
                                   err_msg=type(model).__name__)


@pytest.mark.all_backends
def test_adamw_updates_match_torch_for_small_gradients():
    """Keras adds epsilon to the uncorrected root of v: 1e-6 there damped 1e-4 gradients by ~25% at step 1."""
    total_steps, learning_rate = 10, 5e-5
    model = kba.BertClassifier(_tiny_encoder(), num_classes=2)
    # What `compile()` uses (`default_optimizer`), before `compile` builds it for the model's own variables.
    optimizer = model.default_optimizer(learning_rate=learning_rate, total_steps=total_steps)
    start = np.array([[0.5, -0.2], [0.1, 0.3]], "float32")
    variable = keras.Variable(start, name="kernel")  # a decayed variable
    parameter = torch.nn.Parameter(torch.tensor(start, dtype=torch.float64))
    reference = torch.optim.AdamW([parameter], lr=learning_rate, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    scheduler = transformers.get_linear_schedule_with_warmup(reference, math.ceil(total_steps * 0.1), total_steps)
    gradients = np.random.default_rng(0).normal(scale=1e-4, size=(5, 2, 2))  # global norm far below the clip
    for gradient in gradients:
        before = np.array(keras.ops.convert_to_numpy(variable), "float64")
        optimizer.apply([keras.ops.convert_to_tensor(gradient.astype("float32"))], [variable])
        expected_before = parameter.detach().numpy().copy()
        parameter.grad = torch.tensor(gradient)
        reference.step()
        scheduler.step()
        ours = np.array(keras.ops.convert_to_numpy(variable), "float64") - before
        theirs = parameter.detach().numpy() - expected_before
        np.testing.assert_allclose(ours, theirs, rtol=1e-2, atol=1e-12)
