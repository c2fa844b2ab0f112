"""What every measured side shares: the random pretraining batch and the step timing."""

import time


def make_batch(spec, batch_size, rng):
    """Random pretraining inputs: full-length sequences, `max_predictions` distinct masked positions each."""
    import numpy as np

    length, vocabulary_size = spec["sequence_length"], spec["encoder"]["vocabulary_size"]
    shape = (batch_size, length)
    token_ids = rng.integers(1, vocabulary_size, shape).astype("int32")
    segment_ids = (np.arange(length)[None, :] >= length // 2).astype("int32").repeat(batch_size, 0)
    positions = np.stack([
        np.sort(rng.choice(np.arange(1, length - 1), spec["max_predictions"], replace=False))
        for _ in range(batch_size)
    ]).astype("int32")  # (batch, max_predictions), never [CLS] or the last [SEP]
    return {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": np.ones(shape, "int32"),
        "mask_positions": positions,
        "mlm_labels": rng.integers(0, vocabulary_size, positions.shape).astype("int32"),
        "mlm_weights": np.ones(positions.shape, "float32"),
        "nsp_labels": rng.integers(0, 2, (batch_size,)).astype("int32"),
    }


def time_steps(step, warmup, steps):
    """`{"warmup_seconds": [...], "step_seconds": [...]}` of calls of `step` (which must block)."""
    timings = {"warmup_seconds": [], "step_seconds": []}
    for key, count in (("warmup_seconds", warmup), ("step_seconds", steps)):
        for index in range(count):
            start = time.perf_counter()
            step()
            timings[key].append(time.perf_counter() - start)
            kind = "warmup" if key == "warmup_seconds" else "timed"
            progress(f"  {kind} step {index + 1}/{count}: {timings[key][-1]:.3f} s")
    return timings


def encoder_inputs(batch):
    """The encoder's three inputs of a batch from `make_batch`."""
    return {name: batch[name] for name in ("token_ids", "segment_ids", "padding_mask")}


def progress(message):
    """A progress line on stdout (the parent process echoes it as it comes)."""
    print(message, flush=True)


def time_inference(spec, inference_batches, forward):
    """`time_steps` of `forward(batch)` for each inference batch size; {size: timings}."""
    inference = {}
    for size, batch in inference_batches.items():
        progress(f"encoder forward, batch {size}")
        inference[size] = time_steps(lambda: forward(batch), spec["warmup"], spec["steps"])
    return inference
