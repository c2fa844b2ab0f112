"""Latency and throughput of an exported classifier vs the Keras model, same run.

    python tools/benchmark_serving.py [--preset bert_base_uncased] [--sequence-length 128] [--repeats 5]

Exports a (freshly initialised) classifier of the preset's size, then times
batches of 1 and 32 raw strings through (a) the Keras model with the
preprocessor called eagerly and (b) the SavedModel's `serving_default`
signature (tokenization inside the graph). Prints ms/batch, sequences/s and
the ratio export/Keras.
"""

import argparse
import statistics
import tempfile
import time


def _time(function, repeats):
    function()  # warm up (tracing, XLA, caches)
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="bert_base_uncased")
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import keras
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from keras_bert_app.export.serving import export_for_serving
    from keras_bert_app.models.bert_classifier import BertClassifier
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor

    encoder = BertEncoder.from_preset(args.preset, load_weights=False)
    model = BertClassifier(encoder, num_classes=2)
    preprocessor = BertPreprocessor.from_preset(args.preset, sequence_length=args.sequence_length)
    sentence = "the quick brown fox jumps over the lazy dog " * (args.sequence_length // 10)
    with tempfile.TemporaryDirectory() as folder:
        target = export_for_serving(model, folder, preprocessor)
        serving = tf.saved_model.load(str(target)).signatures["serving_default"]
        print(f"{args.preset}, seq {args.sequence_length}, backend {keras.config.backend()}, median of {args.repeats}")
        print(f"{'batch':>5} {'keras ms':>9} {'export ms':>10} {'keras seq/s':>12} {'export seq/s':>13} {'export/keras':>13}")
        for batch in (1, 32):
            texts = [sentence] * batch
            keras_seconds = _time(lambda: model.predict_on_batch(preprocessor(texts)), args.repeats)
            export_seconds = _time(lambda: serving(text=tf.constant(texts)), args.repeats)
            print(
                f"{batch:>5} {keras_seconds * 1e3:>9.1f} {export_seconds * 1e3:>10.1f} "
                f"{batch / keras_seconds:>12.1f} {batch / export_seconds:>13.1f} {keras_seconds / export_seconds:>12.2f}x"
            )


if __name__ == "__main__":
    main()
