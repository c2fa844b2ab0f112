"""The `pretraining_data.json` beside pretraining records: corpus statistics, instance counts, settings.

Written last by `create_pretraining_data`, from the local command's corpus
or from the Beam pipeline's workers (`beam_pipeline`): the same file either
way. `pretrain` reads the pairing from it (`pretraining_records.records_pairing`).
"""


def corpus_statistics(corpus, single_sentence_documents):
    """The corpus' counts for the summary (a small dict: the Beam pipeline writes it from its workers)."""
    return {
        "documents": corpus.num_documents,
        "sentences": corpus.num_sentences,
        "corpus_tokens": corpus.num_tokens,
        "single_sentence_documents": single_sentence_documents,
        "segmentation": corpus.segmentation,
    }


def pretraining_summary(files, shards, statistics, counts, seconds, pairing, settings):
    """The `pretraining_data.json` of a run: corpus statistics, instance counts (`generate_task`'s), settings."""
    num_instances, num_tokens, num_masked, num_is_next, num_short = [int(count) for count in counts]
    return {
        "input_files": files,
        "shards": shards,
        "documents": statistics["documents"],
        "sentences": statistics["sentences"],
        "corpus_tokens": statistics["corpus_tokens"],
        "instances": num_instances,
        "tokens": num_tokens,
        "masked_fraction": num_masked / max(num_tokens, 1),
        "pairing": pairing,
        **_pairing_counts(pairing, num_instances, num_is_next, statistics["single_sentence_documents"]),
        "real_token_fraction": num_tokens / max(num_instances * settings["max_seq_length"], 1),
        "short_target_fraction": num_short / (settings["dupe_factor"] * statistics["documents"]),
        "seconds": seconds,
        **settings,
        "segmentation": statistics["segmentation"],
    }


def _pairing_counts(pairing, num_instances, num_label_0, single_sentence_documents):
    """The summary's pair-label counts: the IsNext share (nsp), the swapped share and skipped documents (sop)."""
    if pairing == "nsp":
        return {"is_next_fraction": num_label_0 / max(num_instances, 1)}
    if pairing == "sop":
        return {
            "swapped_fraction": 1 - num_label_0 / max(num_instances, 1),
            "single_sentence_documents": single_sentence_documents,
        }
    return {}


def segmenter_name(segmenter):
    if segmenter is None or isinstance(segmenter, str):
        return segmenter
    return getattr(segmenter, "__name__", type(segmenter).__name__)
