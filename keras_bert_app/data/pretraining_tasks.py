"""What the local command and the Beam pipeline share: files, tasks, their records, the shuffle.

`create_pretraining_data` runs the tasks in worker processes,
`beam_pipeline` as a pipeline's elements; both call these functions, so
their records are byte-identical. A task is `(pass, start, end)`: one dupe
pass over documents `[start, end)`.
"""

import os

import numpy as np

from keras_bert_app import errors
from keras_bert_app.data.corpus import expand_input_files
from keras_bert_app.data.pretraining_records import existing_records
from keras_bert_app.data.pretraining_records import serialize_features

DOCUMENTS_PER_TASK = 16


def generate_task(corpus, maker, task):
    """Serialized instances of documents `[start, end)` of `task = (pass, start, end)`, and their counts.

    The one per-element function of the local command and the Beam pipeline:
    each document draws from its own generator (`maker.document_rng`), so a
    task's records depend on its key only.

    Returns:
        `(records, counts)`: a list of bytes and an int64 array of
        instances, tokens, masked positions, label-0 pairs (is-next / in
        order) and documents that drew a short target length.
    """
    pass_index, start, end = task
    # One serialization call for the whole task: NumPy's per-call cost is
    # paid once, not once per document.
    features, num_short = maker.group_instances(corpus, range(start, end), pass_index)
    labels = features.get("next_sentence_labels", np.zeros(0, np.int64))
    num_instances = len(features["input_ids"])
    # instances, tokens, masked, label 0 (is_next / in order), short
    counts = np.array([num_instances, features["input_mask"].sum(), np.count_nonzero(features["masked_lm_weights"]),
                       (labels == 0).sum(), num_short], dtype=np.int64)
    return (serialize_features(features) if num_instances else []), counts


def pretraining_tasks(num_documents, dupe_factor):
    """The tasks `(pass, start, end)` in output order: passes, then groups of documents."""
    return [
        (pass_index, start, min(start + DOCUMENTS_PER_TASK, num_documents))
        for pass_index in range(dupe_factor)
        for start in range(0, num_documents, DOCUMENTS_PER_TASK)
    ]


def record_order(seed, num_records):
    """The shuffle of the records before sharding: position -> record index (task order)."""
    return np.random.default_rng(seed).permutation(num_records)


def check_output(output_dir, overwrite):
    """Refuse to mix or silently replace the shards of an earlier run."""
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise errors.OutputExistsError(f"output_dir {output_dir!r} is a file: expected a directory.")
    old = existing_records(output_dir)
    if old and not overwrite:
        raise errors.OutputExistsError(
            f"output_dir {output_dir!r} already holds {len(old)} *.tfrecord "
            f"file(s) ({old[0]}, ...) from another run; choose an empty "
            "directory or overwrite them (overwrite=True, --overwrite)."
        )
    return old


def input_files_of(input_files):
    """The corpus files named by paths and globs; typed errors naming `input_files`."""
    try:
        return expand_input_files(input_files)
    except FileNotFoundError as error:
        raise errors.MissingFileError("input_files", f"input_files: {error}") from None
    except (ValueError, TypeError) as error:
        raise errors.ArgumentError("input_files", f"input_files: {error}") from None
