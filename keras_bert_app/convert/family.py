"""The family of a preset (BERT, ELECTRA or ALBERT), read from its config.

The family decides the formats a preset is written in (`convert.checkpoint`)
and the task heads it gets (`models.sentence_head`). A conversion records it
as the config's "architecture" entry; an ELECTRA pretraining run's preset is
known by its `electra_pretrainer` entry, an encoder with shared layers
(`num_groups`) is ALBERT's, one with factorized embeddings (`embedding_dim`)
without them ELECTRA's (BERT's formats cannot hold either).
"""

BERT = "bert"
ELECTRA = "electra"
ALBERT = "albert"
FAMILIES = (BERT, ELECTRA, ALBERT)
ELECTRA_PRETRAINER_ENTRY = "electra_pretrainer"  # the config entry of `ElectraPretrainer.save_to_preset`


def family(config):
    """"bert", "electra" or "albert": the family of a preset config (our format, or a converter's)."""
    encoder = config.get("encoder") or {}
    if config.get("architecture") == ALBERT or encoder.get("num_groups") is not None:
        return ALBERT
    if config.get("architecture") == ELECTRA or ELECTRA_PRETRAINER_ENTRY in config or encoder.get("embedding_dim") is not None:
        return ELECTRA
    return BERT
