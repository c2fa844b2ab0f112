"""`keras-bert-app summary`: build an encoder from a preset, run it, print its summary."""

import time


def add_arguments(parser):
    parser.add_argument("--preset", default="bert_tiny_uncased", help="built-in preset name or preset folder")
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=8)


def run(args):
    import keras
    import numpy as np

    from keras_bert_app import presets
    from keras_bert_app.models.bert_encoder import BertEncoder

    load_weights = presets.weights_path(args.preset) is not None
    encoder = BertEncoder.from_preset(args.preset, load_weights=load_weights)
    encoder.summary()
    print(
        f"preset {args.preset}: {encoder.count_params():,} parameters, "
        f"{'weights loaded' if load_weights else 'fresh weights (preset folder has no model.weights.h5)'}, "
        f"backend {keras.config.backend()}"
    )
    rng = np.random.default_rng(0)
    shape = (args.batch_size, args.sequence_length)
    inputs = {
        "token_ids": rng.integers(1, encoder.vocabulary_size, shape).astype("int32"),
        "segment_ids": np.zeros(shape, "int32"),
        "padding_mask": np.ones(shape, "int32"),
    }
    encoder.predict(inputs, verbose=0)  # build/compile once
    started = time.perf_counter()
    outputs = encoder.predict(inputs, verbose=0)
    elapsed = time.perf_counter() - started
    print(
        f"forward pass, batch {args.batch_size} x seq {args.sequence_length}: {elapsed:.3f} s; "
        f"sequence_output {outputs['sequence_output'].shape}, pooled_output {outputs['pooled_output'].shape}, "
        f"{len(outputs['encoder_outputs'])} encoder_outputs"
    )
    return 0
