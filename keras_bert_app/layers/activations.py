"""Activation names used by BERT checkpoints, mapped to Keras functions."""

import keras


def gelu_approximate(x):
    """GELU with the tanh approximation, as in the original BERT TF code."""
    return keras.activations.gelu(x, approximate=True)


def gelu_exact(x):
    """GELU with the exact erf, as HF `gelu` and keras-hub checkpoints."""
    return keras.activations.gelu(x, approximate=False)


def quick_gelu(x):
    """`x * sigmoid(1.702 x)`, the sigmoid approximation of GELU (HF `quick_gelu`)."""
    return x * keras.activations.sigmoid(1.702 * x)


# Checkpoint spellings (HF `hidden_act`, original `hidden_act`) -> function.
ACTIVATIONS = {
    "gelu": gelu_exact,
    "gelu_exact": gelu_exact,
    "gelu_approximate": gelu_approximate,
    "gelu_new": gelu_approximate,
    "gelu_pytorch_tanh": gelu_approximate,
    "quick_gelu": quick_gelu,
}


def get_activation(name):
    """The activation function for a name: BERT's GELU spellings, else Keras'."""
    if name in ACTIVATIONS:
        return ACTIVATIONS[name]
    try:
        return keras.activations.get(name)
    except ValueError:
        raise ValueError(
            f"Unknown activation {name!r}: expected one of {sorted(ACTIVATIONS)} "
            "or a Keras activation name."
        ) from None
