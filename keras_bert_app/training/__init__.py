"""Training: BERT's optimizer and schedule, distribution, callbacks, pretraining."""
