"""`finetune --mixed-precision`: the model computes in bfloat16 with float32 weights, the global dtype policy is
left as it was, and the saved preset loads in float32."""

import json

import keras
import numpy as np
import pytest

import keras_bert_app as kba
from keras_bert_app import cli, errors
from keras_bert_app.training import finetune as finetune_module
from tests.training.test_finetune import tiny_preset  # noqa: F401 (a fixture)

pytestmark = pytest.mark.all_backends

ROWS = ["text,label"] + [
    f"{word} good fine,pos" if i % 2 else f"{word} bad awful,neg"
    for i, word in enumerate("the a one two red blue cat dog sun moon".split())
]


SCORE_ROWS = ["text,score"] + [f"{word} {'good ' * (i % 4)}day,{i % 4 + 0.5 * (i % 3)}"
                              for i, word in enumerate("the a one two red blue cat dog sun moon sea sky".split())]


@pytest.fixture(scope="module")
def runs(tiny_preset, tmp_path_factory):
    """Two `finetune` command lines: a regression with `--mixed-precision` (2 epochs), a classifier without it.

    Each gives its output folder, its log and the model `finetune` built. One mixed-precision run serves both
    tests: what they check of it (dtypes, the preset, its dev scores) does not depend on the task. The run without
    it (that the policy is put back after a mixed-precision run: code that runs the same on every backend) only
    on TensorFlow.
    """
    import contextlib
    import io

    folder = tmp_path_factory.mktemp("mixed_precision")
    (folder / "scores.csv").write_text("\n".join(SCORE_ROWS) + "\n", encoding="utf-8")
    (folder / "data.csv").write_text("\n".join(ROWS) + "\n", encoding="utf-8")
    common = ["finetune", "classify", "--preset", tiny_preset, "--text-column", "text", "--batch-size", "4",
              "--sequence-length", "16", "--learning-rate", "1e-3"]
    argvs = {
        # metrics.json comes from the bfloat16 model's dev pass; `predict` and `evaluate` run the preset in float32.
        "mixed": [*common, "--train", folder / "scores.csv", "--dev", folder / "scores.csv", "--label-column", "score",
                  "--regression", "--epochs", "2", "--output", folder / "mixed", "--mixed-precision"],
        "plain": [*common, "--train", folder / "data.csv", "--dev", folder / "data.csv", "--label-column", "label",
                  "--epochs", "1", "--output", folder / "plain"],
    }
    if keras.config.backend() != "tensorflow":
        del argvs["plain"]
    built = []
    build = finetune_module._build_model
    result = {"policy": keras.config.dtype_policy().name, "data": folder / "scores.csv"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(finetune_module, "_build_model", lambda *a: built.append(build(*a)) or built[-1])
        for name, argv in argvs.items():
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                assert cli.main([str(a) for a in argv]) == 0
            result[name] = {"output": folder / name, "log": out.getvalue(), "model": built[-1]}
    assert len(built) == len(argvs)
    return result


def test_mixed_precision_trains_in_bfloat16_and_saves_a_float32_preset(runs):
    assert "dtype policy mixed_bfloat16" in runs["mixed"]["log"]
    mixed = runs["mixed"]["model"]
    assert keras.config.dtype_policy().name == runs["policy"]  # the global policy is as it was
    assert (mixed.encoder.compute_dtype, mixed.encoder.variable_dtype) == ("bfloat16", "float32")
    assert all(v.dtype == "float32" for v in mixed.trainable_variables)  # float32 weights and optimizer updates
    slots = [v for v in mixed.optimizer.variables if "int" not in v.dtype]  # all but the step counter
    assert len(slots) >= 2 * len(mixed.trainable_variables) and all(v.dtype == "float32" for v in slots)
    if "plain" in runs:
        assert "dtype policy" not in runs["plain"]["log"] and runs["plain"]["model"].encoder.compute_dtype == "float32"
    inputs = {"token_ids": np.array([[2, 5, 7, 3]], "int32"), "segment_ids": np.zeros((1, 4), "int32"),
              "padding_mask": np.ones((1, 4), "int32")}
    assert keras.backend.standardize_dtype(mixed.encoder(inputs)["sequence_output"].dtype) == "bfloat16"

    # The saved preset holds no dtype: it loads in float32, and its outputs are the run's, to bfloat16's rounding.
    preset = runs["mixed"]["output"] / "preset"
    assert "dtype" not in json.loads((preset / "config.json").read_text())["encoder"]
    reloaded = kba.BertClassifier.from_preset(preset)
    assert reloaded.encoder.compute_dtype == "float32"
    ours = keras.ops.convert_to_numpy(reloaded(inputs))
    theirs = keras.ops.convert_to_numpy(keras.ops.cast(mixed(inputs), "float32"))
    np.testing.assert_allclose(ours, theirs, atol=0.05)


def test_a_mixed_precision_runs_dev_figures_are_its_float32_presets(runs, tmp_path):
    # metrics.json came from the bfloat16 model's dev pass; `predict` and `evaluate` run the preset in float32.
    run = runs["mixed"]["output"]
    assert cli.main(["evaluate", "--preset", str(run / "preset"), "--input", str(runs["data"]),
                     "--batch-size", "4", "--output", str(tmp_path / "evaluated.json")]) == 0
    run_metrics = json.loads((run / "metrics.json").read_text())["dev"]
    evaluated = json.loads((tmp_path / "evaluated.json").read_text())
    for name in ("pearson", "spearman"):
        np.testing.assert_allclose(evaluated[name], run_metrics[name], rtol=1e-6, err_msg=name)


def test_mixed_precision_must_be_a_bool(tmp_path, tiny_preset):
    data = tmp_path / "data.csv"
    data.write_text("\n".join(ROWS) + "\n", encoding="utf-8")
    with pytest.raises(errors.ArgumentError, match="mixed_precision") as caught:
        kba.finetune("classify", tiny_preset, tmp_path / "run", train=data, dev=data, text_column="text",
                     label_column="label", mixed_precision="yes")
    assert caught.value.argument == "mixed_precision"
    assert not (tmp_path / "run").exists()
