"""A preset is resolved once, at the entry: the loaders get the `ResolvedPreset`, not its path again."""

import os

import keras
import pytest

from keras_bert_app import cli, presets
from keras_bert_app.convert import detect, resolve
from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer


def write_run(run):
    """A finetune run folder (its `preset/` with a task entry), random tiny weights."""
    keras.utils.set_random_seed(1)
    encoder = BertEncoder(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16,
                          max_sequence_length=32)
    folder = run / "preset"
    BertClassifier(encoder, num_classes=2).save_to_preset(folder, label_names=["no", "yes"])
    BertTokenizer.from_preset("bert_tiny_uncased").save_to_preset(folder)
    task = presets.read_config(folder)["task"]
    presets.write_config_entry(folder, "task", {**task, "data": {"reader": "classify", "sequence_length": 16,
                                                                  "text_pair_column": None}})
    return run


@pytest.fixture
def recorded(monkeypatch):
    """Every argument `resolve_preset` gets, and how often a config.json is read, from here on."""
    record = {"resolve_arguments": [], "config_reads": 0, "config_folders": []}

    def counting(function):
        def wrapper(name_or_path, *args, **kwargs):
            record["config_reads"] += 1
            record["config_folders"].append(str(name_or_path))
            return function(name_or_path, *args, **kwargs)
        return wrapper

    original = resolve.resolve_preset

    def resolve_preset(preset, *args, **kwargs):
        record["resolve_arguments"].append(preset)
        return original(preset, *args, **kwargs)

    monkeypatch.setattr(resolve, "resolve_preset", resolve_preset)
    monkeypatch.setattr(presets, "read_config", counting(presets.read_config))
    monkeypatch.setattr(detect, "read_config", counting(detect.read_config))
    return record


def test_export_reads_the_run_folder_once_and_passes_the_resolved_preset_down(tmp_path, monkeypatch, recorded):
    from keras_bert_app.export import serving

    run = write_run(tmp_path / "run")
    recorded.update(resolve_arguments=[], config_reads=0)
    served = {}
    monkeypatch.setattr(serving, "write_saved_model", lambda model, head, target, warmup: served.update(
        model=model, head=head) or target)
    serving.export_for_serving(run, tmp_path / "out")
    assert recorded["config_reads"] == 1
    first, *rest = recorded["resolve_arguments"]
    assert not isinstance(first, resolve.ResolvedPreset) and rest  # the folder, then the object it became
    assert all(isinstance(argument, resolve.ResolvedPreset) and argument is rest[0] for argument in rest)
    assert rest[0].folder == run / "preset" and rest[0].task["class_name"] == "BertClassifier"
    assert isinstance(served["model"], BertClassifier) and served["head"].label_names == ["no", "yes"]


def test_a_resolved_preset_is_taken_as_it_is(tmp_path, recorded):
    from keras_bert_app.preprocessing.bert_preprocessor import BertPreprocessor
    from keras_bert_app.tasks.registry import task_from_preset

    run = write_run(tmp_path / "run")
    recorded.update(resolve_arguments=[], config_reads=0)
    resolved = resolve.resolve_preset(run / "preset")
    assert recorded["config_reads"] == 1
    assert resolve.resolve_preset(resolved) is resolved and resolve.read_config(resolved) is resolved.config
    model = BertClassifier.from_preset(resolved)
    preprocessor = BertPreprocessor.from_preset(resolved, sequence_length=8)
    task = task_from_preset(resolved)
    assert recorded["config_reads"] == 1  # the models, the tokenizer and the task read nothing again
    assert model.num_classes == 2 and preprocessor.sequence_length == 8 and task.label_names == ["no", "yes"]
    assert str(resolved) == str(run / "preset") and resolved.file("model.weights.h5") is not None
    assert resolved.file("pretrainer.weights.h5") is None


def test_export_takes_a_resolved_preset_and_reads_nothing_again(tmp_path, monkeypatch, recorded):
    from keras_bert_app.export import serving

    run = write_run(tmp_path / "run")
    resolved = resolve.resolve_preset(run / "preset")
    monkeypatch.setattr(serving, "write_saved_model", lambda model, head, target, warmup: target)
    recorded.update(resolve_arguments=[], config_reads=0)
    serving.export_for_serving(resolved, tmp_path / "out")
    assert recorded["config_reads"] == 0
    assert recorded["resolve_arguments"] and all(argument is resolved for argument in recorded["resolve_arguments"])


def _csv(path, texts):
    path.write_text("text,label\n" + "".join(f"{text},{'yes' if i % 2 else 'no'}\n" for i, text in enumerate(texts)))
    return path


TEXTS = ["the cat sat", "a dog ran home", "the bank raised rates", "shares fell", "the team won", "rain today"]

# Each command that takes --preset, at tiny sizes: {tiny} is an encoder preset folder, {run} a finetune run folder
# (read as its preset/), {data} a folder with text.csv and sentences.txt; the folder whose config is counted.
COMMANDS = {
    "predict": ("predict --preset {run} --input {data}/text.csv --output {out}/predictions.jsonl", "run"),
    "evaluate": ("evaluate --preset {run} --input {data}/text.csv", "run"),
    "finetune": ("finetune classify --train {data}/text.csv --dev {data}/text.csv --text-column text "
                 "--label-column label --preset {tiny} --output {out}/run --epochs 1 --batch-size 4 "
                 "--sequence-length 16", "tiny"),
    "extract_features": ("extract-features --input {data}/sentences.txt --preset {tiny} --layers=-1 "
                         "--output {out}/features.jsonl --sequence-length 16", "tiny"),
    "pretrain": ("pretrain --preset {tiny} --corpus {data}/sentences.txt --output {out}/pretrain --steps 1 "
                 "--batch-size 2 --max-seq-length 16 --checkpoint-every 1 --jit-compile false --verbose 0", "tiny"),
    "summary": ("summary --preset {tiny} --sequence-length 8 --batch-size 1", "tiny"),
    "distill": ("distill --teacher {run} --student-layers 0 --train {data}/text.csv --dev {data}/text.csv "
                "--output {out}/distilled --epochs 1 --batch-size 4", "run"),
}


@pytest.fixture(scope="module")
def command_inputs(tmp_path_factory, shared_data):
    from tests.tasks.tiny_presets import write_tiny_preset

    root = tmp_path_factory.mktemp("commands")
    tiny = write_tiny_preset(root / "tiny", shared_data / "vocab" / "bert_uncased_vocab.txt")
    run = write_run(root / "run")
    presets.write_config_entry(run / "preset", "task", {**presets.read_config(run / "preset")["task"], "data": {
        "reader": "classify", "sequence_length": 16, "text_column": "text", "text_pair_column": None,
        "label_column": "label", "regression": False}})
    data = root / "data"
    data.mkdir()
    _csv(data / "text.csv", TEXTS)
    (data / "sentences.txt").write_text("\n".join(TEXTS[:3]) + "\n\n" + "\n".join(TEXTS[3:]) + "\n")
    return {"tiny": tiny, "run": run, "data": data}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_reads_its_preset_config_once(command, command_inputs, tmp_path, recorded, capsys):
    argv, counted = COMMANDS[command]
    folder = command_inputs[counted]
    recorded.update(resolve_arguments=[], config_reads=0, config_folders=[])
    code = cli.main(argv.format(out=tmp_path, **command_inputs).split())
    assert code == 0, capsys.readouterr().err
    preset = folder / "preset" if counted == "run" else folder
    reads = [read for read in recorded["config_folders"] if os.path.realpath(read) == os.path.realpath(preset)]
    assert len(reads) == 1, recorded["config_folders"]
