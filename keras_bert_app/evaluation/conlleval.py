"""`evaluate_conlleval`: entity scores of a file in conlleval's input layout.

One token a line, the gold tag in the next-to-last column and the predicted
tag in the last; sentences separated by blank lines (`-DOCSTART-` lines too).
The command line: `keras-bert-app evaluate --conlleval FILE`.
"""

import os
from typing import Union

from keras_bert_app import errors


def evaluate_conlleval(path: Union[str, os.PathLike]) -> dict:
    """conlleval's entity precision, recall and F1 of a `... GOLD PREDICTED` file.

    Args:
        path: str or path. The token-per-line file.

    Returns:
        dict from `entity_f1.entity_scores`: `precision`, `recall`, `f1`,
        `num_gold`, `num_predicted`, `num_correct` (and per entity type).

    Raises:
        keras_bert_app.errors.MissingFileError: no such file.
        keras_bert_app.errors.DataError: a line without the two tag columns, or bad tags.
    """
    from keras_bert_app.data.text_file import open_text
    from keras_bert_app.evaluation.entity_f1 import entity_scores

    path = errors.check_file("path", path)
    gold, predicted = [[]], [[]]
    with open_text(path) as file:
        for number, line in enumerate(file, 1):
            fields = line.split()
            if not fields or fields[0] == "-DOCSTART-":
                if gold[-1]:
                    gold.append([])
                    predicted.append([])
                continue
            if len(fields) < 2:
                raise errors.DataError(f"{path}:{number}: expected '... GOLD PREDICTED' columns; got {line.strip()!r}.")
            gold[-1].append(fields[-2])
            predicted[-1].append(fields[-1])
    try:
        return entity_scores(gold, predicted)
    except ValueError as error:
        raise errors.DataError(f"{path}: {error}") from None
