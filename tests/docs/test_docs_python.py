"""Every Python block of the hand-written docs runs here, or says why not and defines every name it uses.

A block the suite cannot run (it needs a TPU, a running TF Serving, your
own corpus) is preceded by `<!-- docs-python: not run (REASON) -->`; it
must still define or import every name it uses, so a reader can paste it.
The other blocks run as written, in a temporary folder, except the TPU
block, which runs on a one-device CPU strategy with the tiny preset and a
quarter of its examples (the substitutions below, as the README's TPU block).
"""

import ast
import builtins
import re

import keras
import pytest

from tests.test_readme_commands import ROOT, documentation_files

NOT_RUN = re.compile(r"<!-- docs-python: not run \([^)]+\) -->\n```python\n")
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
TPU_SUBSTITUTIONS = (
    ('create_distribution("tpu")', 'create_distribution("mirrored")'),
    ("num_classes=2)", "num_classes=2, load_weights=False)"),
    ('"bert_base_uncased"', '"bert_tiny_uncased"'),
    ("jit_compile=True", "jit_compile=False"),
    ('"rain again"] * 64', '"rain again"] * 16'),  # a quarter of the examples: 6 steps, not 24
    ("[0, 1, 0, 1] * 64", "[0, 1, 0, 1] * 16"),
)
MAX_COLUMNS = 88


def docs_blocks():
    """[(page, block source, runs here)] of every Python block of the hand-written docs (not the README)."""
    found = []
    for path in documentation_files()[1:]:
        if "notebooks" in path.parts:  # the notebook's page: its cells run in order in tests/test_notebook.py
            continue
        text = path.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            marked = bool(NOT_RUN.search(text[max(0, match.start() - 200):match.start() + 10]))
            found.append((path.relative_to(ROOT).as_posix(), match.group(1), not marked))
    return found


def undefined_names(source):
    """Names a block loads that it neither assigns, imports, nor gets from Python's builtins."""
    tree = ast.parse(source)
    defined = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
    return sorted({node.id for node in ast.walk(tree) if isinstance(node, ast.Name)
                   and isinstance(node.ctx, ast.Load) and node.id not in defined})


def test_every_block_defines_what_it_uses_and_fits_88_columns():
    blocks = docs_blocks()
    assert len(blocks) >= 8
    for page, source, _ in blocks:
        assert not undefined_names(source), (page, undefined_names(source))
        assert max(len(line) for line in source.splitlines()) <= MAX_COLUMNS, page


def test_the_name_check_notices_an_undefined_name():
    assert undefined_names("import x\ny = x.f(total_steps)\n") == ["total_steps"]
    assert undefined_names("import keras_bert_app as kba\nrun = kba.pretrain()\nrun / 'p'\n") == []


def runnable(marker):
    (found,) = [(page, source) for page, source, runs in docs_blocks() if runs and marker in source]
    return found


def test_the_runnable_blocks_are_the_ones_run_here():
    markers = ("encoder = kba.BertEncoder.from_preset", "classifier.save_to_preset(\"my_classifier\"",
               "preprocessor = kba.BertPreprocessor(tokenizer", "create_distribution(\"tpu\")",
               "result = kba.distill(")  # the distillation guide's block: tests/training/test_distill.py runs it
    runs = [source for _, source, runs in docs_blocks() if runs]
    assert sorted(sum(marker in source for marker in markers) for source in runs) == [1] * len(runs)
    assert len(runs) == len(markers)


def run_block(source, folder, monkeypatch):
    monkeypatch.chdir(folder)
    namespace = {}
    exec(compile(source, "docs block", "exec"), namespace)
    return namespace


def test_getting_started_encoder_block(tmp_path, monkeypatch):
    _, source = runnable("encoder = kba.BertEncoder.from_preset")
    namespace = run_block(source, tmp_path, monkeypatch)
    assert tuple(namespace["out"]["sequence_output"].shape) == (1, 6, 768)
    assert len(namespace["out"]["encoder_outputs"]) == 12


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="tf.data with a Keras model: TensorFlow")
def test_fine_tuning_blocks(tmp_path, monkeypatch):
    _, fit = runnable("classifier.save_to_preset(\"my_classifier\"")
    namespace = run_block(fit, tmp_path, monkeypatch)
    assert namespace["classifier"].optimizer.iterations.numpy() == 2 * 3
    assert (tmp_path / "my_classifier" / "vocab.txt").is_file()
    _, tokenizer = runnable("preprocessor = kba.BertPreprocessor(tokenizer")
    features = run_block(tokenizer, tmp_path, monkeypatch)["features"]
    assert features["token_ids"].shape == (1, 128)


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="tf.distribute: TensorFlow backend")
def test_tpu_block_on_a_cpu_strategy(tmp_path, monkeypatch):
    _, source = runnable("create_distribution(\"tpu\")")
    for old, new in TPU_SUBSTITUTIONS:
        assert old in source, old
        source = source.replace(old, new)
    namespace = run_block(source, tmp_path, monkeypatch)
    assert namespace["classifier"].optimizer.iterations.numpy() == namespace["total_steps"] == 3 * 64 // 32
