"""HF task classes of ELECTRA and ALBERT through `convert` (BERT's: `test_huggingface_task_heads`): random-weight
`...ForSequenceClassification` and `...ForMultipleChoice` become fine-tuned presets with transformers' logits on every
backend (ELECTRA's heads on the raw [CLS]), and go back out as the same class, which transformers loads without a
missing or unexpected key. A task checkpoint of another head than the task asked for is refused in one line."""

import json
import shutil

import keras
import numpy as np
import pytest

from keras_bert_app import cli
from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_multiple_choice import BertMultipleChoice
from tests.convert.heldout_checkpoints import WORDS
from tests.preprocessing.sentencepiece_models import train_model

TOLERANCE = 1e-4
VOCABULARY = 100
SIZES = dict(vocab_size=VOCABULARY, embedding_size=32, hidden_size=48, num_hidden_layers=2, num_attention_heads=3,
             intermediate_size=100, max_position_embeddings=40)
CASES = {  # id: (transformers class, our class, pooling, config)
    "electra_classifier": ("ElectraForSequenceClassification", BertClassifier, "cls",
                           dict(id2label={0: "sports", 1: "politics", 2: "tech"})),
    "electra_choice": ("ElectraForMultipleChoice", BertMultipleChoice, "cls", {}),
    "albert_classifier": ("AlbertForSequenceClassification", BertClassifier, "pooler",
                          dict(id2label={0: "negative", 1: "positive"}, hidden_act="gelu_new")),
}


@pytest.fixture(scope="module")
def sentencepiece_path(tmp_path_factory, shared_data):
    lines = (shared_data / "corpus" / "enwiki_sample.txt").read_text(encoding="utf-8").split("\n")[:400]
    return train_model(tmp_path_factory.mktemp("spm") / "spiece.model", lines, vocabulary_size=VOCABULARY)


def _checkpoint(architecture, folder, sentencepiece_path, **config):
    """A transformers task class with random weights (drawn wide: every parameter shows) and its tokenizer file."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    family = "Albert" if architecture.startswith("Albert") else "Electra"
    torch.manual_seed(0)
    model = getattr(transformers, architecture)(getattr(transformers, f"{family}Config")(**{**SIZES, **config})).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=torch.Generator().manual_seed(1)) * 0.1)
    model.save_pretrained(str(folder))
    if family == "Albert":
        shutil.copyfile(sentencepiece_path, folder / "spiece.model")
    else:
        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
        tokens += [f"token{index}" for index in range(VOCABULARY - len(tokens))]
        (folder / "vocab.txt").write_text("\n".join(tokens[:VOCABULARY]) + "\n", encoding="utf-8")
    return model


def _batch(choices=None):
    """Token ids, two segments and a padded row ([batch, choices, seq] for multiple choice)."""
    shape = (3, 16) if choices is None else (2, choices, 16)
    token_ids = np.random.default_rng(0).integers(5, VOCABULARY, size=shape).astype("int32")
    token_ids[..., 0], token_ids[..., -1] = 2, 3
    segment_ids = np.zeros_like(token_ids)
    segment_ids[..., 9:] = 1
    padding_mask = np.ones_like(token_ids)
    padding_mask[1, ..., 11:] = 0
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def _transformers(model, batch):
    import torch

    with torch.no_grad():
        return model(input_ids=torch.tensor(batch["token_ids"]), token_type_ids=torch.tensor(batch["segment_ids"]),
                     attention_mask=torch.tensor(batch["padding_mask"])).logits.numpy()


def _main(*argv):
    return cli.main([str(argument) for argument in argv])


@pytest.mark.all_backends
@pytest.mark.parametrize("case", sorted(CASES))
def test_task_checkpoint_converts_with_transformers_logits_and_goes_back(tmp_path, case, sentencepiece_path):
    transformers = pytest.importorskip("transformers")
    architecture, model_class, pooling, config = CASES[case]
    reference = _checkpoint(architecture, tmp_path / "hf", sentencepiece_path, **config)
    assert _main("convert", "--from", "huggingface", tmp_path / "hf", "--output", tmp_path / "preset") == 0
    preset = json.loads((tmp_path / "preset" / "config.json").read_text())
    assert preset["architecture"] == architecture.split("For")[0].lower()
    assert preset["task"]["class_name"] == model_class.__name__ and preset["task"]["config"]["pooling"] == pooling
    if "id2label" in config:
        assert preset["task"]["label_names"] == [config["id2label"][index] for index in sorted(config["id2label"])]
    batch = _batch(choices=4 if model_class is BertMultipleChoice else None)
    expected = _transformers(reference, batch)
    ours = keras.ops.convert_to_numpy(model_class.from_preset(tmp_path / "preset")(batch))
    np.testing.assert_allclose(ours, expected, atol=TOLERANCE)

    assert _main("convert", "--to", "huggingface", tmp_path / "preset", "--output", tmp_path / "back") == 0
    back, info = getattr(transformers, architecture).from_pretrained(str(tmp_path / "back"), output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    assert back.config.id2label == reference.config.id2label
    np.testing.assert_allclose(_transformers(back.eval(), batch), expected, atol=TOLERANCE)


def test_a_task_checkpoint_of_another_head_is_refused_in_one_line(tmp_path, sentencepiece_path, capsys):
    """`finetune swag` from an ELECTRA sequence classifier: the multiple-choice classes it takes are named."""
    _checkpoint("ElectraForSequenceClassification", tmp_path / "hf", sentencepiece_path)
    header = "video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label\n"
    (tmp_path / "swag.csv").write_text(header + "v,0,x,the cat sat,on the,gold,mat,dog,red city,river .,0\n")
    capsys.readouterr()
    assert _main("finetune", "swag", "--preset", tmp_path / "hf", "--output", tmp_path / "run",
                 "--train", tmp_path / "swag.csv", "--dev", tmp_path / "swag.csv") == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0, error
    assert "a ElectraForSequenceClassification (a BertClassifier head); expected one of ['BertForMultipleChoice', " \
           "'ElectraForMultipleChoice', 'AlbertForMultipleChoice']" in error, error
