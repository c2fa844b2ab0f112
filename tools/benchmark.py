"""BERT speed side by side with keras-hub and HF transformers (same as `keras-bert-app bench`).

Pretraining step (MLM + NSP, AdamW) and encoder inference for a preset at
sequence length 128: ours on each installed Keras backend vs keras-hub
`BertMaskedLM`/`BertBackbone` and HF `BertForPreTraining`/`BertModel`, with
sequences/s, tokens/s, model FLOPs, MFU and the ratios ours/peer; then the
tokenizer and pretraining-data benchmarks of this folder. One table on
stdout, all numbers in JSON. See `keras_bert_app/benchmark/`.

    python tools/benchmark.py                                # bert_base_uncased, ~15 min on 2 CPU cores
    python tools/benchmark.py --preset bert_tiny_uncased --steps 2 --skip-data   # smoke run
    python tools/benchmark.py --backends jax --mixed-precision --batch-size 64 --peak-tflops 989 --skip-data
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from keras_bert_app.commands.main import main  # noqa: E402


def run(argv=None):
    """`keras-bert-app bench ARGV`; returns the exit status."""
    return main(["bench", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(run())
