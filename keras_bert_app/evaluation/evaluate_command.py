"""`keras-bert-app evaluate`: official metrics of a fine-tuned preset, or of a conlleval file.

    keras-bert-app evaluate --preset RUN/preset --input dev.tsv [--output metrics.json]
    keras-bert-app evaluate --conlleval tagged.txt

The first reads a labelled file the way the model was trained and reports
the task's official metrics (GLUE's per task, accuracy for SWAG, entity F1
for NER). The second scores a file in conlleval's input layout: one token a
line, gold tag in the next-to-last column, predicted tag in the last,
sentences separated by blank lines.
"""

import json
import pathlib


def add_arguments(parser):
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", help="the preset/ folder of a finetune run (with --input)")
    source.add_argument("--conlleval", help="a token-per-line file: ... GOLD PREDICTED")
    parser.add_argument("--input", help="labelled file in the task's format (with --preset)")
    parser.add_argument("--output", help="write the metrics as JSON here too")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size (default 32)")


def run(args):
    if args.conlleval:
        metrics = conlleval_file(args.conlleval)
    else:
        if not args.input:
            raise ValueError("--preset needs --input, the labelled file to evaluate on.")
        metrics = evaluate_preset(args.preset, args.input, args.batch_size)
    text = json.dumps(metrics, indent=2)
    print(text)
    if args.output:
        path = pathlib.Path(args.output).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    return 0


def evaluate_preset(preset, input_path, batch_size=32):
    """The official metrics of a fine-tuned preset on a labelled file."""
    from keras_bert_app.training.task_data import TaskData

    data = TaskData.from_preset(preset)
    examples = data.read(input_path)
    if not len(examples):
        raise ValueError(f"{input_path}: no examples to evaluate on.")
    print(data.summary("input", examples))
    model = data.build_model(preset)
    predictions, _ = data.predict(model, examples, batch_size)
    return {**data.metrics(examples, predictions), "examples": len(examples)}


def conlleval_file(path):
    """Entity scores of a conlleval-layout file (gold and predicted tag columns)."""
    from keras_bert_app.evaluation.entity_f1 import entity_scores

    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")
    gold, predicted = [[]], [[]]
    with path.open(encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            fields = line.split()
            if not fields or fields[0] == "-DOCSTART-":
                if gold[-1]:
                    gold.append([])
                    predicted.append([])
                continue
            if len(fields) < 2:
                raise ValueError(f"{path}:{number}: expected '... GOLD PREDICTED' columns; got {line.strip()!r}.")
            gold[-1].append(fields[-2])
            predicted[-1].append(fields[-1])
    try:
        return entity_scores(gold, predicted)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
