"""SavedModel export for TF Serving, with tokenization inside the graph."""
