"""A preset is resolved once, at the entry: the loaders get the `ResolvedPreset`, not its path again."""

import keras
import pytest

from keras_bert_app import presets
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
    record = {"resolve_arguments": [], "config_reads": 0}

    def counting(function):
        def wrapper(*args, **kwargs):
            record["config_reads"] += 1
            return function(*args, **kwargs)
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
