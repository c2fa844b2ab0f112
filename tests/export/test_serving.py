"""SavedModel export: raw text in, checked in a process that imports only TF + TF Text."""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_bert_app.export.serving import export_for_serving, next_version
from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer
from tests.conftest import REPO_ROOT
from tests.export.clean_process import serve_and_run_saved_model_cli

SEQUENCE_LENGTH = 24
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "",
    "   \t\n ",
    "nul\x00bytes and \x07 controls",
    "emoji 😀🎉 and عربي right-to-left שלום",
    "x" * 100_000,
    "supercalifragilistic" * 500,
]

# Runs in a clean interpreter: only tensorflow and tensorflow_text are imported.
CLEAN_PROCESS = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
    export_dir, request_file, output_file = sys.argv[1:4]
    request = json.load(open(request_file))
    serving = tf.saved_model.load(export_dir).signatures["serving_default"]
    outputs = serving(**{k: tf.constant(v, tf.string) for k, v in request.items()})
    np.savez(output_file, **{k: v.numpy() for k, v in outputs.items()})
    loaded = sorted(m for m, v in sys.modules.items() if v is not None and m.split(".")[0] in ("keras_bert_app", "keras_hub"))
    print(json.dumps(loaded))
    """
)


def _tiny_encoder(vocabulary_size=30522):
    return BertEncoder(
        vocabulary_size=vocabulary_size, num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=64,
    )


@pytest.fixture(scope="module")
def preprocessor():
    return BertPreprocessor(BertTokenizer.from_preset("bert_tiny_uncased"), sequence_length=SEQUENCE_LENGTH)


def serve_in_clean_process(export_dir, request, tmp_path):
    request_file = tmp_path / "request.json"
    request_file.write_text(json.dumps(request))
    output_file = tmp_path / "outputs.npz"
    result = subprocess.run(
        [sys.executable, "-c", CLEAN_PROCESS, str(export_dir), str(request_file), str(output_file)],
        capture_output=True, text=True, timeout=600,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # (tensorflow_text itself may pull in keras; our package must not be needed.)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
    return dict(np.load(output_file, allow_pickle=True))


def keras_outputs(model, preprocessor, texts):
    features = preprocessor(texts)
    return keras.tree.map_structure(keras.ops.convert_to_numpy, model.predict(features, verbose=0))


LABELS = ["business", "sport", "tech"]
PAIR_REQUEST = {"text_a": TEXTS[:4], "text_b": TEXTS[3:7]}


@pytest.fixture(scope="module")
def exports(tmp_path_factory, preprocessor):
    """A classifier and a sentence-pair regressor, exported once for the module. (A bare encoder's export, the
    features head: test_heldout_heads.py serves it bucketed and not in a clean process against transformers'
    outputs of the same weights, and test_dynamic_padding.py checks its padding positions are 0.)"""
    folder = tmp_path_factory.mktemp("exports")
    keras.utils.set_random_seed(1)
    classifier = BertClassifier(_tiny_encoder(), num_classes=3)
    regressor = BertClassifier(_tiny_encoder(), num_classes=1)
    return {
        "classifier": (classifier, export_for_serving(classifier, folder / "export", preprocessor, label_names=LABELS)),
        "regressor": (regressor, export_for_serving(regressor, folder / "sts", preprocessor, text_pair=True)),
    }


def _warmup_requests(target):
    """The inputs of each `PredictionLog` in the export's warmup file."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    requests = []
    for record in tf.data.TFRecordDataset(str(target / "assets.extra" / "tf_serving_warmup_requests")):
        log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        requests.append({k: list(tf.make_ndarray(v)) for k, v in log.predict_log.request.inputs.items()})
    return requests


CLI_COMMANDS = lambda target: (  # noqa: E731
    ["show", "--dir", target, "--all"],
    ["run", "--dir", target, "--tag_set", "serve", "--signature_def", "serving_default",
     "--input_exprs", "text=['a fine day', 'a bad day']"],
)


@pytest.fixture(scope="module")
def served(exports, tmp_path_factory, preprocessor):
    """Every request of this module (and the `saved_model_cli` commands), answered by one process that imports
    only TF + TF Text for the requests."""
    target = exports["classifier"][1]
    features = preprocessor(["a fine day"])
    requests = {
        "classifier": (exports["classifier"][1], "serving_default", {"text": TEXTS}),
        "regressor": (exports["regressor"][1], "serving_default", PAIR_REQUEST),
        "empty": (target, "serving_default", {"text": []}),
        "many": (target, "serving_default", {"text": ["some words here"] * 1000}),
        "invalid_utf8": (target, "serving_default", {"text": [b"bad \xff\xfe bytes"]}),
        "by_text": (target, "serving_default", {"text": ["a fine day"]}),
        "by_ids": (target, "serve_token_ids",
                   {k: keras.ops.convert_to_numpy(v).astype("int32") for k, v in features.items()}),
    }
    warmups = _warmup_requests(target)
    for index, inputs in enumerate(warmups):
        requests[f"warmup_{index}"] = (target, "serving_default", inputs)
    results, cli_outputs = serve_and_run_saved_model_cli(
        list(requests.values()), CLI_COMMANDS(target), tmp_path_factory.mktemp("served")
    )
    answers = dict(zip(requests, results))
    answers["warmup_inputs"], answers["saved_model_cli"] = warmups, cli_outputs
    return answers


def test_classifier_export_matches_keras_in_a_clean_process(exports, served, preprocessor):
    model, target = exports["classifier"]
    assert target.name == "1"
    assert (target / "assets" / "vocab.txt").read_text().split("\n")[:3] == ["[PAD]", "[unused0]", "[unused1]"]
    metadata = json.loads((target / "assets.extra" / "keras_bert_app.json").read_text())
    assert metadata["sequence_length"] == SEQUENCE_LENGTH and metadata["label_names"] == LABELS
    served = served["classifier"]
    expected = keras.ops.convert_to_numpy(keras.ops.softmax(keras_outputs(model, preprocessor, TEXTS)))
    np.testing.assert_allclose(served["probabilities"], expected, atol=1e-5)
    np.testing.assert_array_equal(served["label_id"], expected.argmax(-1))
    assert [label.decode() for label in served["label"]] == [LABELS[i] for i in expected.argmax(-1)]
    # The next export gets the next version number.
    assert next_version(target.parent) == 2


def test_pair_regression(exports, served, preprocessor):
    regressor = exports["regressor"][0]
    expected = keras_outputs(regressor, preprocessor, (PAIR_REQUEST["text_a"], PAIR_REQUEST["text_b"]))[:, 0]
    np.testing.assert_allclose(served["regressor"]["score"], expected, atol=1e-5)


def test_signatures_cli_warmup_and_edge_batches(served):
    num_classes = len(LABELS)
    shown, ran = served["saved_model_cli"]
    for expected in ("signature_def['serving_default']", "signature_def['serve_token_ids']", "dtype: DT_STRING",
                     f"shape: (-1, {SEQUENCE_LENGTH})", "outputs['probabilities']", "outputs['label']"):
        assert expected in shown, expected
    assert "probabilities" in ran

    # (Served in the clean process: the warmup file's requests, an empty batch, 1000 texts, invalid UTF-8 and
    # the token-ids signature.)
    requests = 0
    for index, inputs in enumerate(served["warmup_inputs"]):
        outputs = served[f"warmup_{index}"]
        assert not isinstance(outputs, str), outputs
        assert outputs["probabilities"].shape == (len(inputs["text"]), num_classes)
        requests += 1
    assert requests >= 2
    assert served["empty"]["probabilities"].shape == (0, num_classes)
    many = served["many"]["probabilities"]
    assert many.shape == (1000, num_classes) and np.allclose(many, many[0], atol=1e-5)
    # Invalid UTF-8 reaches the graph as bytes: no crash.
    assert served["invalid_utf8"]["label_id"].shape == (1,)
    np.testing.assert_allclose(served["by_ids"]["probabilities"], served["by_text"]["probabilities"], atol=1e-6)


def test_vocabulary_mismatch_is_refused(tmp_path, preprocessor):
    model = BertClassifier(_tiny_encoder(vocabulary_size=1000), num_classes=2)
    with pytest.raises(ValueError, match="vocabulary has 30522 tokens but the model's token embedding has 1000 rows"):
        export_for_serving(model, tmp_path / "export", preprocessor)


@pytest.mark.large
@pytest.mark.skipif(keras.config.backend() == "torch", reason="Keras exports no SavedModel from torch (a documented error)")
def test_jax_export_equals_tensorflow_export(tmp_path, preprocessor):
    pytest.importorskip("jax")
    keras.utils.set_random_seed(3)
    model = BertClassifier(_tiny_encoder(), num_classes=3)
    weights = tmp_path / "classifier.weights.h5"
    model.save_weights(str(weights))
    tf_target = export_for_serving(model, tmp_path / "tf", preprocessor)
    code = textwrap.dedent(
        """
        import sys
        from keras_bert_app.export.serving import export_for_serving
        from keras_bert_app.models.bert_classifier import BertClassifier
        from keras_bert_app.models.bert_encoder import BertEncoder
        from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
        encoder = BertEncoder(vocabulary_size=30522, num_layers=2, num_heads=2, hidden_dim=16,
                              intermediate_dim=32, max_sequence_length=64)
        model = BertClassifier(encoder, num_classes=3)
        model.load_weights(sys.argv[1])
        export_for_serving(model, sys.argv[2], BertPreprocessor.from_preset("bert_tiny_uncased", sequence_length=int(sys.argv[3])))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(weights), str(tmp_path / "jax"), str(SEQUENCE_LENGTH)],
        capture_output=True, text=True, timeout=600,
        env=dict(os.environ, KERAS_BACKEND="jax", PYTHONPATH=str(REPO_ROOT), TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    from_tf = serve_in_clean_process(tf_target, {"text": TEXTS}, tmp_path)
    from_jax = serve_in_clean_process(tmp_path / "jax" / "1", {"text": TEXTS}, tmp_path)
    np.testing.assert_allclose(from_jax["probabilities"], from_tf["probabilities"], atol=1e-5)
