"""Length buckets in the exported SavedModel: the same outputs as a fixed-S export, the same shapes.

The exports are served in this process (`tf.saved_model.load`): what is checked is the graph's bucketing, not the
process (a clean TF + TF Text process serves bucketed exports in test_serving.py, test_serving_heads.py and
test_heldout_heads.py)."""

import json

import keras
import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.export.serving import WARMUP_FILE, export_for_serving
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

SEQUENCE_LENGTH = 64
BUCKETS = [8, 12, 16, 24, 32, 48, 64]
HIDDEN = 16
SHORT = ["a fine day"]
MEDIUM = ["a fine day", "the quick brown fox jumps over the lazy dog " * 2, ""]  # 20 pieces + [CLS] [SEP]: bucket 24
LONG = ["a fine day", "supercalifragilistic expialidocious " * 40]  # cut at S


@pytest.fixture(scope="module")
def preprocessor():
    return BertPreprocessor(BertTokenizer.from_preset("bert_tiny_uncased"), sequence_length=SEQUENCE_LENGTH)


@pytest.fixture(scope="module")
def exports(tmp_path_factory, preprocessor):
    """One encoder (features: a pooled and a per-position output), exported with buckets and at fixed S."""
    folder = tmp_path_factory.mktemp("exports")
    keras.utils.set_random_seed(5)
    encoder = BertEncoder(
        vocabulary_size=30522, num_layers=2, num_heads=2, hidden_dim=HIDDEN, intermediate_dim=32,
        max_sequence_length=SEQUENCE_LENGTH,
    )
    return {
        "bucketed": export_for_serving(encoder, folder / "bucketed", preprocessor),
        "fixed": export_for_serving(encoder, folder / "fixed", preprocessor, bucketing=False),
    }


def _warmup_requests(target):
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    requests = []
    for record in tf.data.TFRecordDataset(str(target / "assets.extra" / WARMUP_FILE)):
        log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        inputs = log.predict_log.request.inputs
        requests.append({name: [v.decode() for v in tf.make_ndarray(inputs[name])] for name in inputs})
    return requests


@pytest.fixture(scope="module")
def served(exports, preprocessor, tmp_path_factory):
    """Short, medium and max-length requests (and the warmups) on both exports."""
    requests = {"short": SHORT, "medium": MEDIUM, "long": LONG}
    jobs, keys = [], []
    for kind, target in exports.items():
        for name, texts in requests.items():
            jobs.append((target, "serving_default", {"text": texts}))
            keys.append((kind, name))
    features = preprocessor(MEDIUM)
    jobs.append((exports["bucketed"], "serve_token_ids",
                 {name: keras.ops.convert_to_numpy(value).astype("int32") for name, value in features.items()}))
    keys.append(("bucketed", "ids"))
    for index, request in enumerate(_warmup_requests(exports["bucketed"])):
        jobs.append((exports["bucketed"], "serving_default", request))
        keys.append(("warmup", index))
    return dict(zip(keys, _serve_in_process(jobs)))


def _serve_in_process(jobs):
    """The outputs of each `(export_dir, signature, inputs)` job as NumPy arrays (strings sent as tf.string)."""
    import tensorflow as tf

    loaded, results = {}, []
    for export_dir, signature, inputs in jobs:
        if export_dir not in loaded:
            loaded[export_dir] = tf.saved_model.load(str(export_dir)).signatures
        inputs = {k: tf.constant(v, tf.string) if isinstance(v, list) else tf.constant(v) for k, v in inputs.items()}
        results.append({k: v.numpy() for k, v in loaded[export_dir][signature](**inputs).items()})
    return results


@pytest.mark.parametrize("request_name", ["short", "medium", "long"])
def test_bucketed_export_equals_fixed_length_export(served, preprocessor, request_name):
    bucketed, fixed = served[("bucketed", request_name)], served[("fixed", request_name)]
    texts = {"short": SHORT, "medium": MEDIUM, "long": LONG}[request_name]
    real = keras.ops.convert_to_numpy(preprocessor(texts)["padding_mask"]).astype(bool)  # (batch, S)
    # The contract: [-1, H] and [-1, S, H], float32, whatever length the batch ran at.
    for outputs in (bucketed, fixed):
        assert outputs["pooled_output"].shape == (len(texts), HIDDEN)
        assert outputs["sequence_output"].shape == (len(texts), SEQUENCE_LENGTH, HIDDEN)
        assert outputs["sequence_output"].dtype == np.float32
    np.testing.assert_allclose(bucketed["pooled_output"], fixed["pooled_output"], atol=1e-5)
    np.testing.assert_allclose(bucketed["sequence_output"][real], fixed["sequence_output"][real], atol=1e-5)
    assert not bucketed["sequence_output"][~real].any()  # padding positions: 0
    if request_name == "long":
        assert real[1].all()  # the long text filled S


def test_token_ids_signature_and_metadata(exports, served):
    np.testing.assert_allclose(served[("bucketed", "ids")]["pooled_output"], served[("fixed", "medium")]["pooled_output"], atol=1e-5)
    lengths = {kind: json.loads((target / "assets.extra" / "keras_bert_app.json").read_text())["bucket_lengths"]
               for kind, target in exports.items()}
    assert lengths == {"bucketed": BUCKETS, "fixed": [SEQUENCE_LENGTH]}


def test_warmup_file_has_one_request_per_bucket(exports, served, preprocessor):
    requests = _warmup_requests(exports["bucketed"])
    lengths = []
    for index, request in enumerate(requests):
        mask = keras.ops.convert_to_numpy(preprocessor(request["text"])["padding_mask"])
        lengths.append(int(mask.sum(axis=1).max()))
        assert served[("warmup", index)]["sequence_output"].shape == (len(request["text"]), SEQUENCE_LENGTH, HIDDEN)
    from keras_bert_app.data.bucketing import round_up

    per_bucket = [min(round_up(length), SEQUENCE_LENGTH) for length in lengths[-len(BUCKETS):]]
    assert per_bucket == BUCKETS
    assert len(_warmup_requests(exports["fixed"])) == len(requests) - len(BUCKETS) + 1


def test_bucket_length_graph_op():
    import tensorflow as tf

    from keras_bert_app.export.graph_ops import bucket_length
    from keras_bert_app.export.serving_head import served_lengths

    assert served_lengths(64) == tuple(BUCKETS) and served_lengths(20) == (8, 12, 16, 20)
    assert served_lengths(64, False) == (64,)
    lengths = (16, 32, 64)
    for last, expected in ((0, 16), (1, 16), (16, 16), (17, 32), (33, 64), (64, 64)):
        mask = tf.concat([tf.ones([2, last], tf.int32), tf.zeros([2, 64 - last], tf.int32)], axis=1)
        assert int(bucket_length(mask, lengths)) == expected, last
    assert int(bucket_length(tf.zeros([0, 64], tf.int32), lengths)) == 16
    holes = tf.constant([[1, 0, 0] + [0] * 14 + [1] + [0] * 46], tf.int32)  # last real position 18
    assert int(bucket_length(holes, lengths)) == 32


def test_no_bucketing_flag(tmp_path, monkeypatch, capsys):
    from keras_bert_app.export import serving

    heads = []
    monkeypatch.setattr(serving, "write_saved_model", lambda model, head, target, *rest: heads.append(head) or target)
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    preset = tmp_path / "tiny"
    BertEncoder.from_preset("bert_tiny_uncased", load_weights=False).save_to_preset(preset)
    BertTokenizer.from_preset("bert_tiny_uncased").save_to_preset(preset)
    for extra in ([], ["--no-bucketing"]):
        argv = ["export", "--model", str(preset), "--head", "features", "--output", str(tmp_path / "x"), *extra]
        assert cli.main(argv) == 0
    assert [head.bucket_lengths for head in heads] == [(8, 12, 16, 24, 32, 48, 64, 96, 128), (128,)]
