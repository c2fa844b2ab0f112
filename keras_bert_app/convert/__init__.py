"""Foreign checkpoints: original Google TF checkpoints, HF transformers and keras-hub presets.

One module per format and architecture (`google`, `huggingface`,
`keras_hub` for BERT; `google_electra`, `huggingface_electra`,
`keras_hub_electra` for ELECTRA), each with an explicit name map (see
`weight_map`); `detect` recognises a foreign folder and dispatches;
`resolve` turns any preset name or folder (ours or foreign) into our config
plus a weights loader, for every `from_preset`; `hub` fetches the built-in
presets' real weights. These read and write formats
onto a model they are given; `checkpoint` (the `convert_checkpoint` stage)
is the one module here that builds models.
"""
