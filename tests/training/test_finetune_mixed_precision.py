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


def test_mixed_precision_trains_in_bfloat16_and_saves_a_float32_preset(tmp_path, tiny_preset, monkeypatch, capsys):
    data = tmp_path / "data.csv"
    data.write_text("\n".join(ROWS) + "\n", encoding="utf-8")
    built = []
    build = finetune_module._build_model
    monkeypatch.setattr(finetune_module, "_build_model", lambda *a: built.append(build(*a)) or built[-1])
    argv = ["finetune", "classify", "--preset", tiny_preset, "--train", data, "--dev", data, "--text-column", "text",
            "--label-column", "label", "--epochs", "1", "--batch-size", "4", "--sequence-length", "16",
            "--learning-rate", "1e-3"]
    policy = keras.config.dtype_policy().name

    assert cli.main([str(a) for a in argv + ["--output", tmp_path / "bf16", "--mixed-precision"]]) == 0
    assert "dtype policy mixed_bfloat16" in capsys.readouterr().out
    assert cli.main([str(a) for a in argv + ["--output", tmp_path / "f32"]]) == 0
    assert "dtype policy" not in capsys.readouterr().out

    mixed, plain = built
    assert keras.config.dtype_policy().name == policy  # the global policy is as it was
    assert (mixed.encoder.compute_dtype, mixed.encoder.variable_dtype) == ("bfloat16", "float32")
    assert all(v.dtype == "float32" for v in mixed.trainable_variables)  # float32 weights and optimizer updates
    slots = [v for v in mixed.optimizer.variables if "int" not in v.dtype]  # all but the step counter
    assert len(slots) >= 2 * len(mixed.trainable_variables) and all(v.dtype == "float32" for v in slots)
    assert plain.encoder.compute_dtype == "float32"
    inputs = {"token_ids": np.array([[2, 5, 7, 3]], "int32"), "segment_ids": np.zeros((1, 4), "int32"),
              "padding_mask": np.ones((1, 4), "int32")}
    assert keras.backend.standardize_dtype(mixed.encoder(inputs)["sequence_output"].dtype) == "bfloat16"

    # The saved preset holds no dtype: it loads in float32, and its logits are the run's, to bfloat16's rounding.
    preset = tmp_path / "bf16" / "preset"
    assert "dtype" not in json.loads((preset / "config.json").read_text())["encoder"]
    reloaded = kba.BertClassifier.from_preset(preset)
    assert reloaded.encoder.compute_dtype == "float32"
    ours = keras.ops.convert_to_numpy(reloaded(inputs))
    theirs = keras.ops.convert_to_numpy(keras.ops.cast(mixed(inputs), "float32"))
    np.testing.assert_allclose(ours, theirs, atol=0.05)


def test_a_mixed_precision_runs_dev_figures_are_its_float32_presets(tmp_path, tiny_preset):
    # metrics.json came from the bfloat16 model's dev pass; `predict` and `evaluate` run the preset in float32.
    rows = ["text,score"] + [f"{word} {'good ' * (i % 4)}day,{i % 4 + 0.5 * (i % 3)}"
                             for i, word in enumerate("the a one two red blue cat dog sun moon sea sky".split())]
    data = tmp_path / "scores.csv"
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    argv = ["finetune", "classify", "--preset", tiny_preset, "--train", data, "--dev", data, "--text-column", "text",
            "--label-column", "score", "--regression", "--epochs", "2", "--batch-size", "4", "--sequence-length", "16",
            "--learning-rate", "1e-3", "--output", tmp_path / "run", "--mixed-precision"]
    assert cli.main([str(a) for a in argv]) == 0
    assert cli.main(["evaluate", "--preset", str(tmp_path / "run" / "preset"), "--input", str(data),
                     "--batch-size", "4", "--output", str(tmp_path / "evaluated.json")]) == 0
    run_metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())["dev"]
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
