"""Data: corpus reading, pretraining pairs and masks, TFRecord I/O, task readers.

Pretraining data (BERT paper, section 3.1 and appendix A):
- `corpus`: the original corpus format -> `TokenizedCorpus`;
- `pretraining_pairs`: sentence pairs and next-sentence labels;
- `masking`: masked-LM positions and the 80/10/10 corruption (token, whole-word and n-gram units);
- `segmentation`: Chinese word boundaries (jieba) aligned with tokens, for whole-word and n-gram masking;
- `electra_masking`: ELECTRA's masking (no random tokens) for replaced-token detection;
- `pretraining_instances`: both, per document, reproducibly seeded;
- `pretraining_records`: TFRecords in the original layout and their reader
  (`pretraining_dataset`);
- `create_pretraining_data`: the static generator (the stage function `kba.create_pretraining_data`);
- `dynamic_pretraining`: fresh pairs and masks every epoch in `tf.data`.
"""
