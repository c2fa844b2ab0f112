"""`keras-bert-app predict`: run a fine-tuned preset on a file, JSON lines out.

    keras-bert-app predict --preset RUN/preset --input test.tsv --output predictions.jsonl

The input is read the way the model was trained (the "task" entry of the
preset's config.json says how: GLUE TSV, CSV/TSV/JSONL columns, SWAG CSV or
CoNLL columns); labels in it are ignored. Each output line holds the input
`line`, the `prediction` (class name, score or choice index; NER: `words`
and `tags`) and, except for NER, the `logits`.
"""

import json
import pathlib


def add_arguments(parser):
    parser.add_argument("--preset", required=True, help="the preset/ folder of a finetune run")
    parser.add_argument("--input", required=True, help="file to predict, in the task's format")
    parser.add_argument("--output", required=True, help="JSON lines file to write")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size (default 32)")


def run(args):
    from keras_bert_app.training.task_data import TaskData

    data = TaskData.from_preset(args.preset)
    examples = data.read(args.input, labeled=False)
    if not len(examples):
        raise ValueError(f"{args.input}: no examples to predict.")
    print(data.summary("input", examples))
    model = data.build_model(args.preset)
    model.compile()  # XLA where `finetune` used it: the same logits as its dev predictions
    predictions, logits = data.predict(model, examples, args.batch_size)
    output = pathlib.Path(args.output).expanduser()
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("w", encoding="utf-8") as file:
        for index, line in enumerate(examples.lines):
            if data.reader == "ner":
                record = {"line": line, "words": examples.words[index], "tags": predictions[index]}
            else:
                record = {
                    "line": line,
                    "prediction": predictions[index],
                    "logits": [round(float(v), 6) for v in logits[index]],
                }
            file.write(json.dumps(record) + "\n")
    print(f"Wrote {len(examples)} predictions to {output}.")
    return 0
