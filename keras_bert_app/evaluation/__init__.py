"""Metrics that match the official scripts: GLUE metrics, CoNLL entity F1 (and SQuAD)."""
