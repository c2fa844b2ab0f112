"""The head on one vector per sequence, as each family fine-tunes: BERT's pooler or ELECTRA's raw [CLS].

`pooling="pooler"`: dropout and a dense layer on the pooled output
`tanh(dense([CLS]))` (BERT, section 4.1 of the paper; ALBERT).
`pooling="cls"`: the raw [CLS] vector through dense(hidden), GELU and
dropout before the output layer, as HF transformers' ELECTRA heads do
(`ElectraClassificationHead`: dropout, dense, GELU, dropout, output;
`ElectraForMultipleChoice`'s sequence summary: the same without the first
dropout), so their fine-tuned checkpoints load (`convert.huggingface_heads`).
google-research/electra's own fine-tuning (`finetune/classification`) has
no hidden layer: dropout on the raw [CLS], then the output layer. Both skip
BERT's tanh pooler, which ELECTRA's pretraining never trains.
`from_preset` picks the pooling by the preset's family unless it is given.
"""

import keras

from keras_bert_app.convert import family, resolve
from keras_bert_app.models.bert_task import BertTask

POOLINGS = ("pooler", "cls")
FAMILY_POOLING = {family.BERT: "pooler", family.ALBERT: "pooler", family.ELECTRA: "cls"}


def check_pooling(model_name, pooling):
    """`pooling`, "pooler" when None; ValueError naming the model otherwise."""
    pooling = "pooler" if pooling is None else pooling
    if pooling not in POOLINGS:
        raise ValueError(f"{model_name}: pooling must be one of {list(POOLINGS)}; got {pooling!r}.")
    return pooling


def sentence_logits(encoded, units, pooling, dropout, initializer, dtype, names, first_dropout=True):
    """Logits [batch, units] of the encoder's outputs `encoded` through the head `pooling` names.

    Args:
        names: (dropout layer, hidden dense layer of "cls", output layer) names.
        first_dropout: bool. "cls" only: dropout on [CLS] before the hidden dense layer too.
    """
    dropout_name, hidden_name, output_name = names
    head_dropout = keras.layers.Dropout(dropout, dtype=dtype, name=dropout_name)
    output = keras.layers.Dense(units, kernel_initializer=initializer, dtype=dtype, name=output_name)
    if pooling == "pooler":
        return output(head_dropout(encoded["pooled_output"]))  # (batch, units)
    sequence_output = encoded["sequence_output"]
    hidden = keras.layers.Dense(sequence_output.shape[-1], activation="gelu", kernel_initializer=initializer,
                                dtype=dtype, name=hidden_name)
    vector = sequence_output[:, 0, :]  # (batch, hidden): the raw [CLS]
    if first_dropout:
        vector = head_dropout(vector)
    return output(head_dropout(hidden(vector)))


class SentenceTask(BertTask):
    """A task model with a `sentence_logits` head: `from_preset` pools as the preset's family unless told."""

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """`BertTask.from_preset`, with the pooling of the preset's family unless `pooling` is given."""
        return super().from_preset(preset, load_weights, **preset_arguments(cls, preset, kwargs))


def preset_arguments(model_class, preset, arguments):
    """The head arguments with `pooling` set by the preset's family when not given.

    A preset that holds a fine-tuned head of `model_class` keeps the pooling
    it was trained with (none recorded: "pooler", as before it was a choice).
    """
    arguments = dict(arguments)
    if arguments.get("pooling") is None:
        arguments.pop("pooling", None)
        config = resolve.read_config(preset)
        if (config.get("task") or {}).get("class_name") != model_class.__name__:
            arguments["pooling"] = FAMILY_POOLING[family.family(config)]
    return arguments
