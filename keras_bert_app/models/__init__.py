"""keras.Model subclasses: the encoder, the pretrainer and one file per task model."""
