"""The task heads per family through `finetune`: an ELECTRA preset fine-tunes the raw-[CLS] head and its fine-tuned
preset stays ELECTRA's; `--pooling` overrides the family's choice."""

import csv
import json

import pytest

from keras_bert_app import cli, errors, presets
from keras_bert_app.tasks.multiple_choice import MultipleChoice
from keras_bert_app.tasks.text_classification import TextClassification
from tests.tasks.tiny_presets import SPECIALS, write_tiny_preset

WORDS = ["good", "bad", "film", "plot", "great", "awful", "the", "a"]


def _electra_preset(folder):
    write_tiny_preset(folder, SPECIALS + WORDS)
    presets.write_config_entry(folder, "architecture", "electra")
    return folder


def _run(tmp_path, *flags):
    with open(tmp_path / "train.csv", "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows([["text", "label"], *[[f"the {w} film", w] for w in ("good", "bad") * 4]])
    output = tmp_path / "run"
    assert cli.main(["finetune", "classify", "--preset", str(_electra_preset(tmp_path / "electra")), "--output",
                     str(output), "--train", str(tmp_path / "train.csv"), "--dev", str(tmp_path / "train.csv"),
                     "--text-column", "text", "--label-column", "label", "--epochs", "1", "--batch-size", "4",
                     *flags]) == 0
    return json.loads((output / "preset" / "config.json").read_text())


@pytest.mark.parametrize("flags, pooling", [((), "cls"), (("--pooling", "pooler"), "pooler")])
def test_electra_preset_fine_tunes_the_raw_cls_head_unless_told_and_stays_electra(tmp_path, flags, pooling):
    config = _run(tmp_path, *flags)
    assert config["task"]["config"]["pooling"] == pooling
    assert config["architecture"] == "electra"  # `convert --to huggingface` writes it as ELECTRA's task class


def test_pooling_option_overrides_the_family_and_is_checked():
    assert TextClassification(pooling="pooler").model_arguments()["pooling"] == "pooler"
    assert "pooling" not in TextClassification().model_arguments()
    assert MultipleChoice(pooling="cls").model_arguments() == {"num_choices": 4, "pooling": "cls"}
    with pytest.raises(errors.ArgumentError, match="pooling"):
        TextClassification(pooling="mean")
