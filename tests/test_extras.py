"""Optional packages: with each extra's package made unimportable, `import keras_bert_app` works, the core paths
run, and each feature that needs the package says in one line which extra installs it."""

import json
import pathlib
import subprocess
import sys
import textwrap

import pytest

from keras_bert_app import extras

ROOT = pathlib.Path(__file__).resolve().parent.parent
BLOCKED = ("sklearn", "scipy", "keras_hub", "tensorflow_serving")



def blocker(modules=BLOCKED):
    """Code to prepend to a script run in a fresh interpreter: `modules` are "not installed" (the
    ModuleNotFoundError Python raises for a missing package); everything else imports as usual."""
    return textwrap.dedent(
        f"""
        import sys
        BLOCKED = {tuple(modules)!r}

        class NotInstalled:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)

        sys.meta_path.insert(0, NotInstalled())
        """
    )

FEATURES = textwrap.dedent(
    """
    import json, tempfile, warnings
    import numpy as np
    import keras_bert_app as kba
    from keras_bert_app.extras import MissingExtraError

    encoder = kba.BertEncoder(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16)
    features = {"token_ids": np.ones((2, 8), "int32"), "segment_ids": np.zeros((2, 8), "int32"),
                "padding_mask": np.ones((2, 8), bool)}
    assert encoder(features)["pooled_output"].shape == (2, 8)  # the model side needs no extra

    def features_used():
        from keras_bert_app.benchmark import finetune_worker, peers
        from keras_bert_app.convert import keras_hub
        from keras_bert_app.demo import objectives_study_report
        from keras_bert_app.evaluation import linear_probe, token_context
        from keras_bert_app.export import warmup
        rows = np.zeros((1, 6), "int64")
        yield "linear probe", lambda: linear_probe.probe_accuracy(np.eye(4), [0, 1, 0, 1], np.eye(4), [0, 1, 0, 1])
        yield "token context", lambda: token_context.discriminator_context(None, rows, rows[:, :1], rows[:, :1])
        yield "study intervals", lambda: objectives_study_report.mean_interval([1.0, 2.0])
        yield "keras-hub read", lambda: keras_hub.load_weights(None, tempfile.mkdtemp())
        yield "keras-hub write", lambda: keras_hub.save(None, None, None, True)
        yield "bench peer", lambda: peers.measure_keras_hub({}, None, None)
        yield "bench finetune peer", lambda: finetune_worker.run_keras_hub({})
        yield "warmup file", lambda: warmup.write_warmup_requests(tempfile.mktemp(), [])

    outcomes = {}
    for name, use in features_used():
        try:
            use()
            outcomes[name] = "ran"
        except MissingExtraError as error:
            outcomes[name] = [error.extra, str(error)]
    print(json.dumps(outcomes))
    """
)


def _run(script, *args, timeout=300):
    result = subprocess.run(
        [sys.executable, "-c", blocker() + script, *map(str, args)], cwd=ROOT, capture_output=True, text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return result


def test_each_feature_names_its_extra_in_one_line_and_the_package_imports_without_them():
    outcomes = json.loads(_run(FEATURES).stdout.strip().splitlines()[-1])
    expected = {
        "linear probe": "eval", "token context": "eval", "study intervals": "eval", "keras-hub read": "convert",
        "keras-hub write": "convert", "bench peer": "bench", "bench finetune peer": "bench", "warmup file": "serving",
    }
    assert {name: outcome[0] for name, outcome in outcomes.items()} == expected
    for name, (extra, message) in outcomes.items():
        assert "\n" not in message and f'pip install "keras-bert-app[{extra}]"' in message, (name, message)
    assert outcomes["linear probe"][1] == (
        'The linear probe needs sklearn, which is not installed: pip install "keras-bert-app[eval]".'
    )


def test_a_missing_extra_is_one_line_from_the_command_line(tmp_path):
    """`convert --from keras-hub` without keras-hub: exit code 2 and one line on stderr naming the `convert` extra."""
    hub = pytest.importorskip("keras_hub")
    from tests.convert.checkpoints import write_vocabulary

    folder = tmp_path / "hub"
    vocabulary = write_vocabulary(tmp_path / "vocab.txt", 30)
    hub.models.BertBackbone(
        vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16, max_sequence_length=16
    ).save_to_preset(str(folder))
    hub.models.BertTokenizer(vocabulary=str(vocabulary), lowercase=True).save_to_preset(str(folder))
    script = (
        "from keras_bert_app.commands.main import main\n"
        "print('exit', main(['convert', '--from', 'keras-hub', sys.argv[1], '--output', sys.argv[2]]))\n"
    )
    result = _run(script, folder, tmp_path / "out")
    assert result.stdout.strip().splitlines()[-1] == "exit 2"
    errors = [line for line in result.stderr.splitlines() if line.startswith("keras-bert-app")]
    assert errors == [
        "keras-bert-app convert: error: Reading a keras-hub preset needs keras_hub, which is not installed: "
        'pip install "keras-bert-app[convert]".'
    ], result.stderr[-2000:]


def test_export_without_the_serving_extra_writes_the_model_and_says_which_extra_writes_warmup(tmp_path):
    script = textwrap.dedent(
        """
        import pathlib, warnings
        import keras_bert_app as kba
        encoder = kba.BertEncoder(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16,
                                  max_sequence_length=32)
        preprocessor = kba.BertPreprocessor(kba.BertTokenizer.from_preset("bert_tiny_uncased"), sequence_length=16)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            target = kba.export_for_serving(encoder, sys.argv[1], preprocessor, bucketing=False)
        print([str(w.message) for w in caught if "keras-bert-app[" in str(w.message)])
        print(sorted(path.name for path in (target / "assets.extra").iterdir()), (target / "saved_model.pb").is_file())
        """
    )
    lines = _run(script, tmp_path / "export").stdout.strip().splitlines()
    assert lines[-1] == "['keras_bert_app.json'] True"
    assert lines[-2] == str([
        'The TF Serving warmup file needs tensorflow_serving, which is not installed: pip install '
        '"keras-bert-app[serving]". Exported without it: TF Serving compiles each length on its first request.'
    ])


def test_a_missing_dependency_of_an_installed_extra_is_not_blamed_on_the_extra():
    """`require` names the extra only when the package itself is missing, not a module that package imports."""
    with pytest.raises(extras.MissingExtraError, match=r'^x needs no_such_package, .*\[eval\]"\.$'):
        extras.require("no_such_package.sub", extra="eval", feature="x")
    script = blocker(["numpy"]) + (
        "from keras_bert_app.extras import require, MissingExtraError\n"
        "try:\n"
        "    require('keras_bert_app.evaluation.glue_metrics', extra='eval', feature='x')\n"
        "except MissingExtraError:\n"
        "    print('blamed the extra')\n"
        "except ModuleNotFoundError as error:\n"
        "    print('missing', error.name)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "missing numpy", result.stderr[-2000:]


def test_extras_named_in_the_helper_are_pyproject_extras():
    tomllib = pytest.importorskip("tomllib")
    from packaging.requirements import Requirement

    optional = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for extra, distributions in extras.EXTRAS.items():
        assert {Requirement(line).name for line in optional[extra]} >= set(distributions), extra
    core = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert not {Requirement(line).name for line in core} & {"keras-hub", "scikit-learn", "scipy",
                                                            "tensorflow-serving-api"}
