"""Weight converters: original Google TF checkpoints, HF transformers and keras-hub presets.

One module per source (`google`, `huggingface`, `keras_hub`), each with an
explicit name map (see `weight_map`); `detect` recognises a foreign folder and
dispatches; `hub` fetches the built-in presets' real weights.
"""
