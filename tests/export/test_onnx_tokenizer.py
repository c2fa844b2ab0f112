"""The raw-string ONNX graph's tokenizer (onnxruntime-extensions' BertTokenizer op) vs ours, on real text.

ONNX Runtime runs in a fresh interpreter without TensorFlow, as an ORT user's server does: in a process
that has imported TensorFlow, the extensions' regex op leaves its input unchanged (see onnx_tokenizer.py).
"""

import pickle
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxruntime_extensions")
SEQUENCE_LENGTH = 128
RUNNER = textwrap.dedent(
    """
    import pickle, sys
    import numpy as np
    import onnxruntime as ort, onnxruntime_extensions as ortx
    model_file, texts_file, results_file = sys.argv[1:4]
    options = ort.SessionOptions()
    options.register_custom_ops_library(ortx.get_library_path())
    session = ort.InferenceSession(model_file, options)
    texts = pickle.load(open(texts_file, "rb"))
    batch_size = int(sys.argv[4])
    rows = []
    for start in range(0, len(texts), batch_size):
        ids = session.run(None, {"text": np.array(texts[start:start + batch_size], dtype=object)})[0]
        rows += [row[row != 0] for row in ids]
    pickle.dump({"rows": rows, "tensorflow": "tensorflow" in sys.modules}, open(results_file, "wb"))
    """
)
# What differs, per text (the serving guide lists the same): ids that must still differ.
KNOWN_CASES = {
    "x\u0000y\u0007z": "the op ends the text at NUL; ours drops control characters and keeps 'y', 'z'",
}
CASES = ["Pāli kamma", "Densuşianu", "αὐτός", "Café naïve RÉSUMÉ", "中文字 and 日本語", "tab\there\u00a0nbsp",
         "x\u0000y\u0007z", "a [MASK] b [SEP] c", "soft\u00adhyphen", "e\u0301 combining", "emoji 🙂 here",
         "don't stop-now...", ""]


def op_ids(tokenizer, texts, tmp_path, sequence_length=SEQUENCE_LENGTH, batch_size=256):
    """The op graph's ids of `texts` (without padding), computed by ONNX Runtime in a clean process."""
    import onnx

    from keras_bert_app.export.onnx_tokenizer import DOMAIN, tokenizer_graph

    model = onnx.helper.make_model(tokenizer_graph(tokenizer, sequence_length),
                                   opset_imports=[onnx.helper.make_opsetid("", 17), onnx.helper.make_opsetid(DOMAIN, 1)])
    model_file, texts_file, results_file = tmp_path / "tokenizer.onnx", tmp_path / "texts.pkl", tmp_path / "ids.pkl"
    onnx.save(model, str(model_file))
    texts_file.write_bytes(pickle.dumps(list(texts)))
    done = subprocess.run([sys.executable, "-c", RUNNER, str(model_file), str(texts_file), str(results_file),
                           str(batch_size)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    results = pickle.loads(results_file.read_bytes())
    assert not results["tensorflow"]
    return results["rows"]


def our_ids(tokenizer, texts, sequence_length=SEQUENCE_LENGTH):
    preprocessor = BertPreprocessor(tokenizer, sequence_length=sequence_length)
    rows = []
    for start in range(0, len(texts), 1024):
        ids = keras.ops.convert_to_numpy(preprocessor(texts[start:start + 1024])["token_ids"])
        rows += [row[row != 0] for row in ids]
    return rows


@pytest.fixture(scope="module")
def uncased(shared_data):
    return BertTokenizer(str(shared_data / "vocab" / "bert_uncased_vocab.txt"), lowercase=True)


def test_op_ids_equal_ours_on_the_wikipedia_sample(uncased, enwiki_lines, tmp_path):
    theirs, ours = op_ids(uncased, enwiki_lines, tmp_path), our_ids(uncased, enwiki_lines)
    differing = [i for i, (a, b) in enumerate(zip(theirs, ours)) if len(a) != len(b) or (a != b).any()]
    share = 1 - len(differing) / len(enwiki_lines)
    listed = "\n".join(f"{enwiki_lines[i][:100]!r}: {uncased.detokenize([theirs[i]])} vs ours "
                       f"{uncased.detokenize([ours[i]])}" for i in differing[:20])
    assert share >= 0.995, f"{share:.4%} of {len(enwiki_lines)} lines agree; differing:\n{listed}"


def test_op_cases(uncased, tmp_path):
    """Each listed case agrees with ours, or differs as KNOWN_CASES says (and a fixed one is noticed)."""
    theirs, ours = op_ids(uncased, CASES, tmp_path, 32), our_ids(uncased, CASES, 32)
    for text, a, b in zip(CASES, theirs, ours):
        same = len(a) == len(b) and (a == b).all()
        assert same != (text in KNOWN_CASES), (text, list(a), list(b))


def test_the_accent_rewrites_run_for_the_batches_that_need_them(uncased, tmp_path):
    """An ASCII batch skips the accent rewrites (`accent_nodes`' guards): each text alone, and the batch, as ours."""
    texts = ["plain ascii text", "Pāli kamma", "Café naïve", "£5 and 'quotes'", "e\u0301 combining", "αὐτός", ""]
    alone = op_ids(uncased, texts, tmp_path, 32, batch_size=1)
    together = op_ids(uncased, texts, tmp_path, 32)
    for text, a, b, c in zip(texts, alone, together, our_ids(uncased, texts, 32)):
        assert list(a) == list(b) == list(c), text
