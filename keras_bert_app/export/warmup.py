"""`assets.extra/tf_serving_warmup_requests`: the requests TF Serving replays when it loads a model.

Its records are tensorflow-serving-api's protos (the `serving` extra).
"""

from keras_bert_app.extras import require


def write_warmup_requests(path, requests, signature_name="serving_default"):
    """`assets.extra/tf_serving_warmup_requests`: PredictionLog records TF Serving replays on load.

    Args:
        path: the file to write.
        requests: list of `{input name: list of str}`, one record each.
        signature_name: str. The signature the requests call.
    """
    import tensorflow as tf

    require("tensorflow_serving", extra="serving", feature="The TF Serving warmup file")
    from tensorflow_serving.apis import predict_pb2, prediction_log_pb2

    with tf.io.TFRecordWriter(str(path)) as writer:
        for inputs in requests:
            request = predict_pb2.PredictRequest()
            request.model_spec.signature_name = signature_name
            for name, values in inputs.items():
                request.inputs[name].CopyFrom(tf.make_tensor_proto(list(values), dtype=tf.string))
            log = prediction_log_pb2.PredictionLog(
                predict_log=prediction_log_pb2.PredictLog(request=request)
            )
            writer.write(log.SerializeToString())


def bucket_warmup_inputs(head):
    """One warmup request per served length: its packed length rounds up to that length.

    The text repeats a vocabulary word that is one piece, `length - 4`
    times (the heads add at most 4 tokens: `[CLS]`, `[SEP]`s, a `[MASK]`).
    """
    word = _one_piece_word(head.tokenizer)
    if word is None:
        return []
    return [head.length_warmup_input(" ".join([word] * (length - 4))) for length in head.bucket_lengths]


def _one_piece_word(tokenizer):
    """A vocabulary word that tokenizes to one piece, also repeated ("the the the": 3 pieces); None if none."""
    import tensorflow as tf

    candidates = [t for t in tokenizer.get_vocabulary() if t.isalpha() and not t.startswith("[")][:50]
    for word in candidates:
        if int(tokenizer(tf.constant([" ".join([word] * 3)])).row_lengths()[0]) == 3:
            return word
    return None
