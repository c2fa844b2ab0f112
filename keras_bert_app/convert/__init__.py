"""Foreign checkpoints: original Google TF checkpoints, HF transformers and keras-hub presets.

One weight-map table per family (BERT, ELECTRA, ALBERT: `tables`, the family
of a preset: `family`) and one reader (and writer) per format: `google`,
`huggingface` (its config in `huggingface_config`, its task classes in
`huggingface_heads`) and `keras_hub`; `detect` recognises a foreign folder
and dispatches; `resolve` turns any preset name or folder (ours or foreign)
into our config plus a weights loader, for every `from_preset`; `hub`
fetches the built-in presets' real weights. These read and write formats
onto a model they are given; `checkpoint` (the `convert_checkpoint` stage),
`task_checkpoint`, `electra_pair` and `local_preset` build models.
"""
