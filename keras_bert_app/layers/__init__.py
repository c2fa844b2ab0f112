"""Building blocks of BERT: embeddings, attention, Transformer block, heads."""
