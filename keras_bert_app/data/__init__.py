"""Data: corpus reading, pretraining pairs and masks, TFRecord I/O, task readers.

Pretraining data (BERT paper, section 3.1 and appendix A): `corpus` reads
the original corpus format, `pretraining_pairs`, `sentence_order` and
`full_sentences` make sequences, `masking` (with `segmentation` for Chinese
words) masks them, `pretraining_instances` does both per document,
`pretraining_records` writes and reads the original TFRecords,
`create_pretraining_data` is the static generator (`beam_pipeline` the same
as an Apache Beam pipeline; both run `pretraining_tasks`) and
`dynamic_pretraining` draws fresh pairs and masks every epoch in `tf.data`.
"""
