"""`keras-bert-app bench` / tools/benchmark.py: a smoke run on the tiny preset (nothing is timed here)."""

import json
import statistics

import keras
import numpy as np
import pytest

from keras_bert_app import cli, errors, presets
from keras_bert_app.benchmark import measurement, suite

SEQUENCE_LENGTH = 32


def _run(tmp_path, *extra):
    output = tmp_path / "bench.json"
    status = cli.main([
        "bench", "--preset", "bert_tiny_uncased", "--backends", keras.config.backend(), "--in-process",
        "--sequence-length", str(SEQUENCE_LENGTH), "--max-predictions", "4", "--batch-size", "2",
        "--inference-batch-sizes", "2", "--steps", "1", "--warmup", "0", "--no-jit",
        "--skip-keras-hub", "--skip-data", "--output", str(output), *extra,
    ])
    return status, output


def _count_fused_attention_calls(monkeypatch):
    calls = []
    original = keras.ops.dot_product_attention
    monkeypatch.setattr(keras.ops, "dot_product_attention", lambda *a, **k: calls.append(1) or original(*a, **k))
    return calls


def test_smoke_run_writes_rows_with_positive_rates_and_ratios_from_the_rows(tmp_path, capsys, monkeypatch):
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    calls = _count_fused_attention_calls(monkeypatch)
    status, output = _run(tmp_path)
    printed = capsys.readouterr().out
    assert status == 0, printed
    report = json.loads(output.read_text())

    rows = {(row["task"], row["model"]): row for row in report["rows"]}
    assert set(rows) == {(task, model) for task in ("train", "inference") for model in ("ours", "HF")}
    config = presets.read_config("bert_tiny_uncased")["encoder"]
    for (task, _), row in rows.items():
        assert row["batch_size"] == 2
        assert len(row["step_seconds"]) == 1 and row["median_step_seconds"] > 0
        assert row["median_step_seconds"] == statistics.median(row["step_seconds"])
        np.testing.assert_allclose(row["sequences_per_second"], 2 / row["median_step_seconds"])
        np.testing.assert_allclose(row["tokens_per_second"], row["sequences_per_second"] * SEQUENCE_LENGTH)
        # 6NT + 12LHST for a training step, a third of it for a forward pass (hand count).
        tokens = 2 * SEQUENCE_LENGTH
        forward = 2 * _hf_non_embedding_parameters(config) * tokens + (
            4 * config["num_layers"] * config["hidden_dim"] * SEQUENCE_LENGTH * tokens
        )
        assert row["flops_per_step"] == (3 * forward if task == "train" else forward)
        assert row["peak_flops"] > 0
        np.testing.assert_allclose(row["mfu"], row["flops_per_step"] / row["median_step_seconds"] / row["peak_flops"])

    ratios = {(r["task"], r["peer"]): r for r in report["ratios"]}
    assert set(ratios) == {("train", "HF"), ("inference", "HF")}
    for (task, peer), ratio in ratios.items():
        assert ratio["ours_backend"] == keras.config.backend() and ratio["peer_backend"] == "torch"
        expected = rows[(task, "ours")]["sequences_per_second"] / rows[(task, peer)]["sequences_per_second"]
        np.testing.assert_allclose(ratio["ratio"], expected)
        assert ratio["ratio"] > 0

    settings = report["settings"]
    assert settings["jit"] is False and settings["mixed_precision"] is False
    assert settings["fused_attention"] is False and calls == []  # without --fused-attention: our own attention
    assert settings["steps"] == 1 and settings["backends"] == [keras.config.backend()]
    assert report["machine"]["usable_cpus"] >= 1
    assert any("keras-hub skipped" in note for note in report["notes"])
    assert "ours/peer" in printed and "total wall time" in printed


def _hf_non_embedding_parameters(config):
    """Parameters of HF's BertModel outside its embeddings: the reference for N."""
    import transformers

    model = transformers.BertModel(transformers.BertConfig(
        vocab_size=config["vocabulary_size"], hidden_size=config["hidden_dim"],
        num_hidden_layers=config["num_layers"], num_attention_heads=config["num_heads"],
        intermediate_size=config["intermediate_dim"],
    ))
    return sum(p.numel() for name, p in model.named_parameters() if not name.startswith("embeddings."))


def test_masked_positions_are_distinct_and_never_the_first_or_last_token():
    spec = {"sequence_length": 16, "max_predictions": 5, "encoder": {"vocabulary_size": 50}}
    batch = measurement.make_batch(spec, 3, np.random.default_rng(0))
    positions = batch["mask_positions"]
    assert positions.shape == (3, 5)
    assert positions.min() >= 1 and positions.max() <= 14
    assert all(len(set(row)) == 5 for row in positions.tolist())
    assert batch["token_ids"].shape == (3, 16) and batch["token_ids"].max() < 50


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--max-predictions", "31"], "max_predictions must be <= sequence length - 2"),
        (["--inference-batch-sizes", "0"], "--inference-batch-sizes must be comma-separated positive integers"),
        (["--backends", "theano"], "Unknown backend 'theano'"),
    ],
)
def test_bad_arguments_fail_with_a_clear_message(tmp_path, capsys, extra, message):
    status, output = _run(tmp_path, *extra)
    assert status == 2
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1
    assert not output.exists()


def test_fused_attention_option_reaches_our_encoder(tmp_path, capsys, monkeypatch):
    """`--fused-attention`: our forward pass goes through keras.ops.dot_product_attention (off: the smoke run)."""
    calls = _count_fused_attention_calls(monkeypatch)
    # --peak-tflops: no CPU matmul measurement here (the smoke run measures it).
    status, output = _run(tmp_path, "--skip-hf", "--fused-attention", "--peak-tflops", "1")
    assert status == 0, capsys.readouterr().out
    assert len(calls) >= presets.read_config("bert_tiny_uncased")["encoder"]["num_layers"]
    assert json.loads(output.read_text())["settings"]["fused_attention"] is True
    assert "fused attention True" in capsys.readouterr().out


# === README and docstring command lines through the entry point (stubbed: the real run takes ~15 min) ===
def _recording_benchmarks(monkeypatch, calls):
    def fake(**kwargs):
        calls.append(kwargs)
        peak = {"description": "stub"}
        return {"rows": [], "notes": [], "data": {}, "settings": {"peak": peak}, "wall_seconds": 0.0, "failed_runs": []}

    monkeypatch.setattr(suite, "run_benchmarks", fake)


def test_readme_commands_reach_the_stage_function(tmp_path, monkeypatch, capsys):
    import inspect

    monkeypatch.chdir(tmp_path)
    defaults = {name: p.default for name, p in inspect.signature(suite.run_benchmarks).parameters.items()}
    calls = []
    _recording_benchmarks(monkeypatch, calls)
    # `keras-bert-app bench`: the stage function's own defaults (bert_base_uncased, every installed backend).
    assert cli.main(["bench"]) == 0
    call = calls[-1]
    call.pop("log"), defaults.pop("log")
    assert call == {**defaults, "inference_batch_sizes": [1, 32]} and defaults["inference_batch_sizes"] == (1, 32)
    assert call["preset"] == "bert_base_uncased" and call["backends"] is None and call["output"] == "bench.json"
    assert "total wall time" in capsys.readouterr().out
    # README: `keras-bert-app bench --fused-attention`
    assert cli.main(["bench", "--fused-attention"]) == 0
    assert calls[-1]["fused_attention"] is True
    # Docstring: `keras-bert-app bench --backends jax --mixed-precision --fused-attention --skip-data`
    assert cli.main(["bench", "--backends", "jax", "--mixed-precision", "--fused-attention", "--skip-data"]) == 0
    assert calls[-1]["backends"] == ["jax"] and calls[-1]["mixed_precision"] and calls[-1]["skip_data"]
    # README options `--no-jit`, `--peak-tflops`
    assert cli.main(["bench", "--no-jit", "--peak-tflops", "989", "--inference-batch-sizes", "4,8"]) == 0
    assert calls[-1]["jit"] is False and calls[-1]["peak_tflops"] == 989.0
    assert calls[-1]["inference_batch_sizes"] == [4, 8]


def test_tools_benchmark_is_the_same_command(monkeypatch, tmp_path):
    # `python tools/benchmark.py --preset bert_tiny_uncased --steps 2 --skip-data`
    import importlib.util
    import pathlib

    monkeypatch.chdir(tmp_path)
    calls = []
    _recording_benchmarks(monkeypatch, calls)
    path = pathlib.Path(__file__).resolve().parent.parent / "tools" / "benchmark.py"
    spec = importlib.util.spec_from_file_location("tools_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.run(["--preset", "bert_tiny_uncased", "--steps", "2", "--skip-data"]) == 0
    assert calls[-1]["preset"] == "bert_tiny_uncased" and calls[-1]["steps"] == 2 and calls[-1]["skip_data"]


def test_a_failed_run_exits_1(monkeypatch, capsys):
    def failing(**kwargs):
        return {"rows": [], "notes": ["ours on jax failed: boom"], "data": {}, "settings": {"peak": {"description": ""}},
                "wall_seconds": 1.0, "failed_runs": ["ours on jax"]}

    monkeypatch.setattr(suite, "run_benchmarks", failing)
    assert cli.main(["bench", "--skip-data"]) == 1
    assert "- ours on jax failed: boom" in capsys.readouterr().out


@pytest.mark.parametrize(
    "change, error_class, argument",
    [
        ({"steps": "3"}, errors.ArgumentTypeError, "steps"),
        ({"steps": 0}, errors.ArgumentError, "steps"),
        ({"backends": ["theano"]}, errors.ArgumentError, "backends"),
        ({"inference_batch_sizes": [0]}, errors.ArgumentError, "inference_batch_sizes"),
        ({"preset": "bert_no_such_preset"}, errors.ArgumentError, "preset"),
        ({"output": "no_such_folder/bench.json"}, errors.MissingFileError, "output"),
        ({"in_process": "yes"}, errors.ArgumentTypeError, "in_process"),
    ],
)
def test_bad_arguments_raise_one_typed_error_naming_the_argument(tmp_path, monkeypatch, change, error_class, argument):
    monkeypatch.chdir(tmp_path)
    arguments = {"preset": "bert_tiny_uncased", "backends": [keras.config.backend()], "skip_hf": True,
                 "skip_keras_hub": True, "skip_data": True, "in_process": True, **change}
    with pytest.raises(error_class) as raised:
        suite.run_benchmarks(**arguments, log=lambda line: None)
    assert raised.value.argument == argument and argument in str(raised.value)
    assert not list(tmp_path.iterdir())
