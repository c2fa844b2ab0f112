"""One row of `keras-bert-app bench --task serving`, in its own process (its peak memory is its own).

    python -m keras_bert_app.benchmark.serving_worker ROW PLAN_JSON RESULT_JSON

A row is a way to serve the same fine-tuned classifier: a function from a
list of texts to label ids, tokenization included. The worker times one
short and one long request (p50/p99), a batch of 32, and runs the dev set.
"""

import json
import resource
import sys
import time

ROWS = {
    "savedmodel_text": "our SavedModel on TensorFlow, raw strings in (in-graph tokenizer)",
    "onnx_ids": "our ONNX on ONNX Runtime, ids in (HF tokenizers in front)",
    "onnx_text": "our ONNX on ONNX Runtime, raw strings in (onnxruntime-extensions tokenizer)",
    "onnx_int8_text": "our ONNX int8 (ORT dynamic quantization) on ONNX Runtime, raw strings in",
    "hf_onnx": "HF: transformers -> torch.onnx.export -> ONNX Runtime, HF tokenizers",
    "torch_eager": "HF transformers on PyTorch eager, HF tokenizers",
}


def _hf_tokenizer(plan):
    """HF's tokenizer of the converted folder (`AutoTokenizer`, as optimum users load it)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(plan["huggingface"])
    return lambda texts: tokenizer(texts, padding=True, truncation=True, max_length=plan["sequence_length"],
                                   return_tensors="np")


def peak_memory_mib():
    """This process's peak resident memory (VmHWM: unlike ru_maxrss, not inherited from the parent at fork)."""
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _session(path, extensions=False):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    if extensions:
        import onnxruntime_extensions

        options.register_custom_ops_library(onnxruntime_extensions.get_library_path())
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def build(row, plan):
    """`predict(texts) -> label ids` of a row."""
    import numpy as np

    if row not in ROWS:
        raise ValueError(f"unknown row {row!r}; expected one of {sorted(ROWS)}")
    if row == "savedmodel_text":
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (the tokenizer ops)

        serve = tf.saved_model.load(plan["saved_model"]).signatures["serving_default"]
        return lambda texts: serve(text=tf.constant(texts))["label_id"].numpy()
    if row in ("onnx_text", "onnx_int8_text"):
        session = _session(plan["onnx_text" if row == "onnx_text" else "onnx_int8_text"], extensions=True)
        return lambda texts: session.run(["label_id"], {"text": np.array(texts, dtype=object)})[0]
    tokenize = _hf_tokenizer(plan)
    if row == "onnx_ids":
        session = _session(plan["onnx_ids"])

        def predict(texts):
            encoded = tokenize(texts)
            features = {"token_ids": encoded["input_ids"].astype("int32"),
                        "segment_ids": encoded["token_type_ids"].astype("int32"),
                        "padding_mask": encoded["attention_mask"].astype("int32")}
            return session.run(["label_id"], features)[0]

        return predict
    if row == "hf_onnx":
        session = _session(plan["hf_onnx"])

        def predict(texts):
            encoded = tokenize(texts)
            feeds = {name: encoded[name].astype("int64") for name in ("input_ids", "token_type_ids", "attention_mask")}
            return session.run(None, feeds)[0].argmax(-1)

        return predict
    if row == "torch_eager":
        import torch
        from transformers import BertForSequenceClassification

        model = BertForSequenceClassification.from_pretrained(plan["huggingface"]).eval()

        def predict(texts):
            encoded = tokenize(texts)
            with torch.inference_mode():
                logits = model(**{name: torch.from_numpy(value) for name, value in encoded.items()}).logits
            return logits.argmax(-1).numpy()

        return predict


def latencies(predict, texts, repeats):
    """`{"p50_ms", "p99_ms"}` of `predict(texts)` over `repeats` calls after 3 untimed ones."""
    import numpy as np

    for _ in range(3):
        predict(texts)
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        predict(texts)
        seconds.append(time.perf_counter() - start)
    return {"p50_ms": 1000 * float(np.percentile(seconds, 50)), "p99_ms": 1000 * float(np.percentile(seconds, 99))}


def measure(row, plan):
    """The row's figures: latencies, throughput at batch 32, dev accuracy, peak memory."""
    start = time.perf_counter()
    predict = build(row, plan)
    load_seconds = time.perf_counter() - start
    dev_texts, dev_labels = plan["dev_texts"], plan["dev_label_ids"]
    predicted = []
    for index in range(0, len(dev_texts), 32):
        predicted += [int(label) for label in predict(dev_texts[index:index + 32])]
    accuracy = sum(p == t for p, t in zip(predicted, dev_labels)) / len(dev_labels)
    short = latencies(predict, [plan["short_text"]], plan["repeats"])
    long = latencies(predict, [plan["long_text"]], max(5, plan["repeats"] // 2))
    batch = dev_texts[:32]
    batch_time = latencies(predict, batch, max(3, plan["repeats"] // 5))["p50_ms"] / 1000
    return {
        "row": row,
        "description": ROWS[row],
        "short_p50_ms": short["p50_ms"], "short_p99_ms": short["p99_ms"],
        "long_p50_ms": long["p50_ms"], "long_p99_ms": long["p99_ms"],
        "batch32_texts_per_second": len(batch) / batch_time,
        "dev_accuracy": accuracy,
        "dev_predictions": predicted,
        "peak_memory_mib": peak_memory_mib(),
        "load_seconds": load_seconds,
    }


def main(argv):
    row, plan_file, result_file = argv
    with open(plan_file, encoding="utf-8") as file:
        plan = json.load(file)
    result = measure(row, plan)
    with open(result_file, "w", encoding="utf-8") as file:
        json.dump(result, file)


if __name__ == "__main__":
    main(sys.argv[1:])
