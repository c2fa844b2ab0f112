"""Serving requests, then `saved_model_cli` commands, in ONE fresh interpreter (each process costs a TensorFlow
import). The requests run in a process that imports only tensorflow and tensorflow_text (the modules are
recorded before `saved_model_cli` runs); each command then goes through `saved_model_cli`'s own entry point with
the TF Text ops registered, as TF Serving links them."""

import json
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np

RUNNER = textwrap.dedent(
    """
    import json, pickle, sys
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
    jobs_file, results_file, commands = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    jobs = pickle.load(open(jobs_file, "rb"))
    loaded, results = {}, []
    for export_dir, signature, inputs in jobs:
        if export_dir not in loaded:
            loaded[export_dir] = tf.saved_model.load(export_dir).signatures
        try:
            inputs = {k: tf.constant(v.tolist(), tf.string) if v.dtype == object else tf.constant(v) for k, v in inputs.items()}
            outputs = loaded[export_dir][signature](**inputs)
            results.append({k: v.numpy() for k, v in outputs.items()})
        except tf.errors.InvalidArgumentError as error:
            results.append("InvalidArgument: " + error.message)
    modules = sorted(m for m, v in sys.modules.items() if v is not None and m.split(".")[0] in ("keras_bert_app", "keras_hub"))
    pickle.dump({"results": results, "modules": modules}, open(results_file, "wb"))
    from tensorflow.python.tools import saved_model_cli
    for command in commands:
        sys.argv = ["saved_model_cli", *command]
        print("=== saved_model_cli " + command[0], flush=True)
        try:
            saved_model_cli.main()
        except SystemExit as exit_:
            if exit_.code:
                raise
    """
)


def serve_and_run_saved_model_cli(jobs, commands, folder):
    """`(results, outputs)`: the outputs of each `(export_dir, signature, inputs)` job (`{output: array}` or an
    error line) and the stdout of each `saved_model_cli` command (a list of its arguments), in order."""
    jobs_file, results_file = folder / "jobs.pkl", folder / "results.pkl"

    def encode(values):
        if isinstance(values, list):
            return np.array([v.encode() if isinstance(v, str) else v for v in values], dtype=object)
        return values

    encoded = [
        (str(export_dir), signature, {k: encode(values) for k, values in inputs.items()})
        for export_dir, signature, inputs in jobs
    ]
    jobs_file.write_bytes(pickle.dumps(encoded))
    result = subprocess.run(
        [sys.executable, "-c", RUNNER, str(jobs_file), str(results_file),
         json.dumps([[str(part) for part in command] for command in commands])],
        capture_output=True, text=True, timeout=600, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    answer = pickle.loads(results_file.read_bytes())
    # (tensorflow_text itself may pull in keras; our package must not be needed.)
    assert answer["modules"] == []
    outputs = result.stdout.split("=== saved_model_cli ")[1:]
    assert len(outputs) == len(commands), result.stdout[-3000:]
    return answer["results"], outputs


def serve_in_clean_process(jobs, folder):
    """The outputs of each `(export_dir, signature, inputs)` job (inputs: lists of str/bytes, sent as tf.string, or
    NumPy arrays), run in a fresh process."""
    return serve_and_run_saved_model_cli(jobs, [], folder)[0]
