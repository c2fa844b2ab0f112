"""keras.Model subclasses: the encoder, the pretrainer and one file per task model.

`bert_task.BertTask` is the base of the pretrainer and the task models
(compile defaults, head initializer, presets); `head_weights` writes their
heads in Keras' weights format; `optimizer`, `schedules` and `xla` are what
their `compile()` defaults use.
"""
