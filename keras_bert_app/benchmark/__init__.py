"""`keras-bert-app bench`: BERT speed side by side with keras-hub and HF transformers.

`suite.run_benchmarks` runs it (the command is `keras_bert_app.commands.bench`,
also `tools/benchmark.py`); `plan` checks the settings and lists the runs;
`worker` (ours) and `peers` (keras-hub, HF) are the measured sides, each in
its own subprocess (`processes`), sharing `measurement`; `flops` counts model
FLOPs and peaks for MFU; `report` builds the rows, ratios and table;
`data_benchmarks` runs the tokenizer and pretraining-data benchmarks of tools/.
"""
