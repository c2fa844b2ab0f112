"""`keras-bert-app summary`: build an encoder from a preset, run it, print its summary.

    keras-bert-app summary --preset bert_tiny_uncased --sequence-length 128 --batch-size 8
"""


def add_arguments(parser):
    parser.add_argument("--preset", default="bert_tiny_uncased", help="built-in preset name or preset folder")
    parser.add_argument("--sequence-length", type=int, default=None,
                        help="tokens per sequence (default: 128, or the preset's max_sequence_length if fewer)")
    parser.add_argument("--batch-size", type=int, default=8, help="examples in the dummy batch (default 8)")


def run(args):
    from keras_bert_app.models.encoder_summary import summarize_encoder

    summary = summarize_encoder(args.preset, sequence_length=args.sequence_length, batch_size=args.batch_size)
    summary.encoder.summary()
    weights = "weights loaded" if summary.weights_loaded else "fresh weights (preset folder has no model.weights.h5)"
    print(f"preset {args.preset}: {summary.parameters:,} parameters, {weights}, backend {summary.backend}")
    shapes = summary.output_shapes
    print(
        f"forward pass, batch {args.batch_size} x seq {summary.sequence_length}: {summary.forward_seconds:.3f} s; "
        f"sequence_output {shapes['sequence_output']}, pooled_output {shapes['pooled_output']}, "
        f"{shapes['encoder_outputs']} encoder_outputs"
    )
    return 0
