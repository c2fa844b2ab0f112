"""Cross-backend checks, each backend in its own process."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.conftest import REPO_ROOT

BACKENDS = ("tensorflow", "jax", "torch")

FORWARD = textwrap.dedent(
    """
    import sys, numpy as np, keras
    import keras_bert_app as kba
    weights, inputs_file, output_file, preset = sys.argv[1:5]
    encoder = kba.BertEncoder(vocabulary_size=120, num_layers=3, num_heads=4, hidden_dim=32,
                              intermediate_dim=64, max_sequence_length=40)
    encoder.load_weights(weights)
    inputs = dict(np.load(inputs_file))
    mask_positions = inputs.pop("mask_positions")
    out = encoder(inputs)
    arrays = {"sequence_output": out["sequence_output"], "pooled_output": out["pooled_output"]}
    arrays.update({f"layer_{i}": x for i, x in enumerate(out["encoder_outputs"])})
    # A pretrainer preset (encoder + heads in Keras' weights format) written by another backend.
    heads = kba.BertPretrainer.from_preset(preset)({**inputs, "mask_positions": mask_positions})
    arrays.update({"pretrainer_mlm": heads["mlm"], "pretrainer_nsp": heads["nsp"]})
    np.savez(output_file, **{k: keras.ops.convert_to_numpy(v) for k, v in arrays.items()})
    """
)


def _run(backend, code, *args, extra_env=None):
    env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=str(REPO_ROOT), **(extra_env or {}))
    result = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"{backend} failed:\n{result.stderr[-3000:]}"
    return result


def _available(backend):
    module = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}[backend]
    try:
        __import__(module)
    except ImportError:
        return False
    return True


# `import keras_bert_app` and running an encoder must not import TensorFlow: checked in the JAX (else PyTorch)
# process that runs FORWARD too (one process start less), before and after FORWARD's code.
NO_TENSORFLOW = textwrap.dedent(
    """
    import sys
    sys.modules["tensorflow"] = None  # any `import tensorflow` now raises ImportError
    import numpy as np
    import keras_bert_app as kba
    encoder = kba.BertEncoder.from_preset("bert_tiny_uncased", load_weights=False)
    ids = np.array([[101, 7592, 102, 0]], "int32")
    out = encoder({"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": (ids > 0).astype("int32")})
    assert out["pooled_output"].shape == (1, 128)
    print("imported:", sorted(m for m, v in sys.modules.items() if v is not None and m.startswith(("tensorflow", "keras_hub"))))
    """
)
NO_TENSORFLOW_AFTER = textwrap.dedent(
    """
    print("imported:", sorted(m for m, v in sys.modules.items() if v is not None and m.startswith(("tensorflow", "keras_hub"))))
    """
)


def _no_tensorflow_backend():
    return "jax" if _available("jax") else "torch"


@pytest.fixture(scope="module")
def cross_backend(tmp_path_factory, backend):
    """Weights, a pretrainer preset and inputs written here (the suite's backend), FORWARD's outputs on each
    backend (this one in process), and the stdout of the process that checked the model side without TensorFlow."""
    import keras

    import keras_bert_app as kba

    tmp_path = tmp_path_factory.mktemp("backends")
    others = [b for b in BACKENDS if b != backend and _available(b)]
    keras.utils.set_random_seed(7)
    encoder = kba.BertEncoder(vocabulary_size=120, num_layers=3, num_heads=4, hidden_dim=32,
                              intermediate_dim=64, max_sequence_length=40)
    # Larger-than-init weights make the comparison meaningful.
    pretrainer = kba.BertPretrainer(encoder)
    for v in pretrainer.weights:
        v.assign(keras.random.normal(v.shape, stddev=0.3, seed=len(v.path)))
    weights = tmp_path / "encoder.weights.h5"
    encoder.save_weights(weights)
    pretrainer.save_to_preset(tmp_path / "pretrainer_preset")
    rng = np.random.default_rng(0)
    lengths = np.array([40, 17, 5])
    padding_mask = (np.arange(40)[None] < lengths[:, None]).astype("int32")
    inputs = {
        "token_ids": rng.integers(1, 120, (3, 40)).astype("int32") * padding_mask,
        "segment_ids": (np.arange(40)[None] >= lengths[:, None] // 2).astype("int32") * padding_mask,
        "padding_mask": padding_mask,
        "mask_positions": np.array([[1, 5, 39], [0, 3, 16], [1, 2, 4]], "int32"),
    }
    np.savez(tmp_path / "inputs.npz", **inputs)
    # The reference: this process runs FORWARD's code on the files it wrote, as the other backends do.
    outputs = {}
    namespace = {"__name__": "forward"}
    argv = [str(weights), str(tmp_path / "inputs.npz"), str(tmp_path / f"{backend}.npz"),
            str(tmp_path / "pretrainer_preset")]
    saved_argv = sys.argv
    sys.argv = ["forward", *argv]
    try:
        exec(FORWARD, namespace)
    finally:
        sys.argv = saved_argv
    outputs[backend] = dict(np.load(tmp_path / f"{backend}.npz"))
    no_tensorflow = None
    for other in others:
        with_check = other == _no_tensorflow_backend()
        code = NO_TENSORFLOW + FORWARD + NO_TENSORFLOW_AFTER if with_check else FORWARD
        result = _run(other, code, weights, tmp_path / "inputs.npz", tmp_path / f"{other}.npz",
                      tmp_path / "pretrainer_preset")
        if with_check:
            no_tensorflow = result.stdout
        outputs[other] = dict(np.load(tmp_path / f"{other}.npz"))
    return backend, others, outputs, no_tensorflow


def test_same_weights_same_outputs_on_every_backend(cross_backend):
    """Weights and a pretrainer preset written here (the suite's backend) give the same outputs on the others."""
    backend, others, outputs, _ = cross_backend
    if not others:
        pytest.skip(f"only {backend} installed")
    reference = outputs[backend]
    assert set(reference) == {
        "sequence_output", "pooled_output", "layer_0", "layer_1", "layer_2", "pretrainer_mlm", "pretrainer_nsp",
    }
    for other in others:
        for name, value in reference.items():
            difference = np.abs(outputs[other][name] - value).max()
            # Head logits are larger than the LayerNormed states: the same tolerance, relative to them.
            scale = max(1.0, float(np.abs(value).max())) if name.startswith("pretrainer_") else 1.0
            assert difference <= 1e-5 * scale, f"{other} {name}: max abs difference {difference}"


def test_model_side_imports_without_tensorflow(cross_backend):
    """`import keras_bert_app` and running an encoder must not import TensorFlow."""
    backend = _no_tensorflow_backend()
    if not _available(backend):
        pytest.skip("neither jax nor torch installed")
    stdout = cross_backend[3]
    if stdout is None:  # the suite's own backend: no FORWARD process ran on it
        stdout = _run(backend, NO_TENSORFLOW).stdout
    imported = [line for line in stdout.splitlines() if line.startswith("imported: ")]
    assert imported and all(line == "imported: []" for line in imported), stdout[-3000:]
