"""BertTask, the base of the pretrainer and the task models: compile defaults, one weights format, old folders.

A preset folder holds the encoder in `model.weights.h5` and the heads in
Keras' own weights format (the encoder skipped). Folders written before
(the pretraining heads in a hand-written h5 layout; task weights as a full
model's `save_weights`, optimizer state included) still load, with the same
outputs; a converted or foreign folder's encoder weights are read once.
"""

import json
import pathlib

import h5py
import keras
import numpy as np
import pytest

from keras_bert_app import errors, presets
from keras_bert_app.convert import huggingface, weight_map
from keras_bert_app.models.bert_classifier import BertClassifier
from keras_bert_app.models.bert_encoder import BertEncoder
from keras_bert_app.models.bert_multiple_choice import BertMultipleChoice
from keras_bert_app.models.bert_pretrainer import BertPretrainer
from keras_bert_app.models.bert_question_answerer import BertQuestionAnswerer
from keras_bert_app.models.bert_task import BertTask
from keras_bert_app.models.bert_token_classifier import BertTokenClassifier
from keras_bert_app.models.optimizer import BertAdamW
from tests.convert.checkpoints import TINY as HF_TINY
from tests.convert.checkpoints import huggingface_tensors, write_huggingface

pytestmark = pytest.mark.all_backends

BATCH, LENGTH, PREDICTIONS, VOCABULARY = 2, 8, 3, 30


def _encoder():
    return BertEncoder(
        vocabulary_size=VOCABULARY, num_layers=1, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=16, dropout=0.0,
    )


def _inputs(mask_positions=True):
    rng = np.random.default_rng(0)
    x = {
        "token_ids": rng.integers(1, VOCABULARY, (BATCH, LENGTH)).astype("int32"),
        "segment_ids": np.zeros((BATCH, LENGTH), "int32"),
        "padding_mask": np.ones((BATCH, LENGTH), "int32"),
    }
    if mask_positions:
        x["mask_positions"] = rng.integers(0, LENGTH, (BATCH, PREDICTIONS)).astype("int32")
    return x


def _numpy(outputs):
    return keras.tree.map_structure(lambda value: np.asarray(keras.ops.convert_to_numpy(value)), outputs)


def _assert_same(got, expected):
    for a, b in zip(keras.tree.flatten(_numpy(got)), keras.tree.flatten(_numpy(expected))):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _randomize(model):
    """Non-trivial weights everywhere (fresh biases are zeros: they would hide a missed load)."""
    for index, variable in enumerate(model.weights):
        variable.assign(keras.random.normal(variable.shape, stddev=0.3, seed=index))


def _h5_keys(path):
    keys = []
    with h5py.File(path, "r") as file:
        file.visititems(lambda name, item: keys.append(name) if isinstance(item, h5py.Dataset) else None)
    return keys


# --- The earlier layouts, written as earlier versions wrote them (fixture writers) ---
def _write_legacy_pretrainer_heads(pretrainer, path):
    """`BertPretrainer.save_head_weights` before Keras' format: one dataset per head variable path."""
    tied = id(pretrainer.encoder.token_embedding.embeddings)
    with h5py.File(path, "w") as file:
        for head in (pretrainer.masked_lm_head, pretrainer.next_sentence_head):
            if head is None:
                continue
            for variable in head.weights:
                if id(variable) == tied:
                    continue
                parts = variable.path.split("/")
                if head.name in parts:
                    parts = parts[len(parts) - parts[::-1].index(head.name):]
                file[f"{head.name}/{'/'.join(parts)}"] = keras.ops.convert_to_numpy(variable)


def _write_legacy_task_preset(model, folder, label_names=None):
    """`BertTask.save_to_preset` before: the whole (compiled, trained) model's `save_weights`."""
    folder = model.encoder.save_to_preset(folder)
    model.save_weights(str(folder / "task.weights.h5"))
    entry = {"class_name": type(model).__name__, "config": model.head_config(), "weights": "task.weights.h5"}
    if label_names is not None:
        entry["label_names"] = list(label_names)
    presets.write_config_entry(folder, "task", entry)
    return folder


# --- Compile defaults: one copy, in the base ---
@pytest.mark.parametrize(
    "factory",
    [
        lambda: BertClassifier(_encoder(), num_classes=3),
        lambda: BertQuestionAnswerer(_encoder()),
        lambda: BertMultipleChoice(_encoder(), num_choices=2),
        lambda: BertTokenClassifier(_encoder(), num_classes=3),
    ],
    ids=["classifier", "question_answerer", "multiple_choice", "token_classifier"],
)
def test_task_models_compile_with_the_fine_tuning_recipe(factory):
    model = factory()
    assert isinstance(model, BertTask) and "compile" not in type(model).__dict__
    model.compile(learning_rate=3e-5, total_steps=100, warmup_ratio=0.2, jit_compile=False)
    optimizer = model.optimizer
    assert isinstance(optimizer, BertAdamW) and isinstance(optimizer, keras.optimizers.AdamW)
    # HF Trainer's where the paper is silent: ceil(0.2 * 100) warmup steps, decay from the warmup's end, epsilon 1e-8.
    assert optimizer.get_config()["learning_rate"]["config"] == {
        "peak_learning_rate": 3e-5, "total_steps": 100, "warmup_steps": 20, "decay_from_warmup": True,
    }
    assert (optimizer.decoupled_weight_decay, optimizer.epsilon, optimizer.global_clipnorm) == (0.01, 1e-8, 1.0)
    assert optimizer.get_config()["weight_decay"] == 0.01
    model.compile()  # no total_steps: a constant rate
    assert float(keras.ops.convert_to_numpy(model.optimizer.learning_rate)) == pytest.approx(5e-5)


def test_pretrainer_is_a_task_with_the_pretraining_recipe():
    pretrainer = BertPretrainer(_encoder())
    assert isinstance(pretrainer, BertTask) and "compile" not in type(pretrainer).__dict__
    pretrainer.compile(total_steps=1000)
    assert pretrainer.optimizer.get_config()["learning_rate"]["config"] == {
        "peak_learning_rate": 1e-4, "total_steps": 1000, "warmup_steps": 10, "decay_from_warmup": False,
    }
    assert pretrainer.optimizer.epsilon == 1e-6  # the original optimization.py


def test_compile_makes_the_optimizer_slots_before_the_first_step():
    """Built eagerly in `compile`, not inside the first traced train step (4-5 s of a MiniLM fine-tuning)."""
    model = BertClassifier(_encoder(), num_classes=3)
    model.compile(learning_rate=1e-2, total_steps=4, jit_compile=False)
    if keras.config.backend() != "tensorflow":  # JAX and torch build them eagerly in `fit`, before any step
        assert not model.optimizer.built
        return
    assert model.optimizer.built
    slots = {id(variable) for variable in model.optimizer.variables}
    rng = np.random.default_rng(0)
    x = {
        "token_ids": rng.integers(1, VOCABULARY, (4, LENGTH)).astype("int32"),
        "segment_ids": np.zeros((4, LENGTH), "int32"),
        "padding_mask": np.ones((4, LENGTH), "int32"),
    }
    before = [keras.ops.convert_to_numpy(w).copy() for w in model.trainable_weights]
    model.fit(x, np.array([0, 1, 2, 0]), batch_size=2, epochs=1, verbose=0)
    assert {id(variable) for variable in model.optimizer.variables} == slots  # trained with those slots
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 2
    assert any(not np.allclose(b, keras.ops.convert_to_numpy(w)) for b, w in zip(before, model.trainable_weights))


# --- One weights format ---
def test_pretrainer_heads_are_saved_in_keras_format_without_the_encoder_or_optimizer(tmp_path):
    pretrainer = BertPretrainer(_encoder())
    _randomize(pretrainer)
    pretrainer.compile(jit_compile=False)
    pretrainer.optimizer.build(pretrainer.trainable_variables)  # optimizer state, as after fit
    folder = pretrainer.save_to_preset(tmp_path / "preset")
    keys = _h5_keys(folder / "pretrainer.weights.h5")
    assert keys and all(key.startswith(("layers/masked_lm_head/", "layers/next_sentence_head/")) for key in keys)
    assert not list(folder.glob("*.tmp*"))
    # The same file loads with Keras' own loader (encoder skipped).
    fresh = BertPretrainer(_encoder())
    keras.saving.load_weights(fresh, str(folder / "pretrainer.weights.h5"), objects_to_skip=fresh.encoder._flatten_layers())
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(fresh.masked_lm_head.output_bias),
        keras.ops.convert_to_numpy(pretrainer.masked_lm_head.output_bias),
    )


def test_task_heads_file_holds_only_the_head(tmp_path):
    model = BertClassifier(_encoder(), num_classes=3)
    folder = model.save_to_preset(tmp_path / "run")
    assert sorted(_h5_keys(folder / "task.weights.h5")) == ["layers/dense/vars/0", "layers/dense/vars/1"]


# --- Folders written the old way ---
@pytest.mark.parametrize("next_sentence_prediction", [True, False])
def test_old_layout_pretrainer_folder_loads_with_the_same_outputs(tmp_path, next_sentence_prediction):
    pretrainer = BertPretrainer(_encoder(), next_sentence_prediction=next_sentence_prediction)
    _randomize(pretrainer)
    expected = pretrainer(_inputs())
    folder = pretrainer.encoder.save_to_preset(tmp_path / "old_run_preset")
    _write_legacy_pretrainer_heads(pretrainer, folder / "pretrainer.weights.h5")
    assert "masked_lm_head" in h5py.File(folder / "pretrainer.weights.h5", "r")  # really the old layout

    restored = BertPretrainer.from_preset(folder)  # NSP or not: as the folder holds
    assert restored.next_sentence_prediction is next_sentence_prediction
    _assert_same(restored(_inputs()), expected)
    # Saved again, it is in Keras' format, with the same outputs.
    again = BertPretrainer.from_preset(restored.save_to_preset(tmp_path / "new"))
    assert "layers" in h5py.File(tmp_path / "new" / "pretrainer.weights.h5", "r")
    _assert_same(again(_inputs()), expected)


def test_old_task_folder_with_optimizer_state_loads_with_the_same_outputs(tmp_path):
    model = BertClassifier(_encoder(), num_classes=3, dropout=0.0)
    _randomize(model)
    model.compile(learning_rate=1e-2, jit_compile=False)
    model.optimizer.build(model.trainable_variables)  # optimizer state, as after fit
    x = _inputs(mask_positions=False)
    expected = model(x)
    folder = _write_legacy_task_preset(model, tmp_path / "old_finetune_preset", label_names=["a", "b", "c"])
    assert any(key.startswith("optimizer/") for key in _h5_keys(folder / "task.weights.h5"))
    restored = BertClassifier.from_preset(folder)
    assert restored.num_classes == 3
    _assert_same(restored(x), expected)


def test_masked_lm_only_heads_refuse_an_nsp_pretrainer(tmp_path):
    folder = BertPretrainer(_encoder(), next_sentence_prediction=False).save_to_preset(tmp_path / "mlm_only")
    with pytest.raises(ValueError, match="masked-LM heads only.*next_sentence_prediction=False"):
        BertPretrainer.from_preset(folder, next_sentence_prediction=True)
    # The other way round the saved NSP head is not used.
    with_nsp = BertPretrainer(_encoder()).save_to_preset(tmp_path / "with_nsp")
    assert BertPretrainer.from_preset(with_nsp, next_sentence_prediction=False).next_sentence_head is None


# --- Each weight read once ---
def test_converted_folder_reads_the_encoder_weights_once(tmp_path, monkeypatch):
    pretrainer = BertPretrainer(_encoder())
    _randomize(pretrainer)
    folder = pretrainer.save_to_preset(tmp_path / "converted")
    reads = []
    original = BertEncoder.load_weights

    def counting(self, *args, **kwargs):
        reads.append(args[0])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(BertEncoder, "load_weights", counting)
    restored = BertPretrainer.from_preset(folder)
    assert [pathlib.Path(path).name for path in reads] == ["model.weights.h5"]
    _assert_same(restored(_inputs()), pretrainer(_inputs()))


def test_foreign_folder_is_read_once_into_encoder_and_heads(tmp_path, monkeypatch):
    tensors = huggingface_tensors(HF_TINY, prefix="bert.", heads=True)
    folder = write_huggingface(tmp_path / "hf", tensors=tensors, architecture="BertForPreTraining")
    reads, assigned = [], []
    read_tensors, load_mapped = huggingface.read_tensors, weight_map.load_mapped
    monkeypatch.setattr(huggingface, "read_tensors", lambda path: reads.append(path) or read_tensors(path))
    monkeypatch.setattr(
        weight_map, "load_mapped", lambda model, mappings, *rest: assigned.append(len(mappings)) or load_mapped(model, mappings, *rest)
    )
    pretrainer = BertPretrainer.from_preset(folder)
    assert len(reads) == 1 and len(assigned) == 1
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(pretrainer.masked_lm_head.output_bias), tensors["cls.predictions.bias"]
    )
    classifier = BertClassifier.from_preset(folder, num_classes=2)  # a new head on the checkpoint's encoder
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(classifier.encoder.pooler.bias), tensors["bert.pooler.dense.bias"]
    )
    assert len(reads) == 2


def test_a_bad_preset_is_an_argument_error_and_a_preset_error(tmp_path):
    with pytest.raises(errors.ArgumentError) as error:
        BertClassifier.from_preset(tmp_path / "nowhere", num_classes=2)
    assert error.value.argument == "preset" and isinstance(error.value, presets.PresetError)
    assert "Unknown preset" in str(error.value)
    (tmp_path / "no_weights").mkdir()
    encoder_config = {"vocabulary_size": 30, "num_layers": 1, "num_heads": 2, "hidden_dim": 8, "intermediate_dim": 16}
    (tmp_path / "no_weights" / "config.json").write_text(json.dumps({"encoder": encoder_config}))
    with pytest.raises(presets.PresetError, match="no weights on this machine"):
        BertPretrainer.from_preset(tmp_path / "no_weights")


@pytest.mark.parametrize("next_sentence_prediction", [True, False])
def test_checkpoints_keep_the_layout_of_run_folders_written_before(tmp_path, next_sentence_prediction):
    """`pretrain` resumes from `checkpoints/step-*.weights.h5`: the pretrainer's own `save_weights` layout must not move."""
    fixture = json.loads((pathlib.Path(__file__).parent / "fixtures" / "pretrainer_checkpoint_keys.json").read_text())
    expected = fixture["next_sentence_prediction"][str(next_sentence_prediction)]
    encoder = BertEncoder(
        vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16, max_sequence_length=16, dropout=0.0
    )
    pretrainer = BertPretrainer(encoder, next_sentence_prediction=next_sentence_prediction)
    pretrainer.compile(jit_compile=False)
    pretrainer.optimizer.build(pretrainer.trainable_variables)
    pretrainer.save_weights(str(tmp_path / "step-00000002.weights.h5"))
    with h5py.File(tmp_path / "step-00000002.weights.h5", "r") as file:
        got = []
        file.visititems(lambda name, item: got.append([name, list(item.shape)]) if isinstance(item, h5py.Dataset) else None)
    assert got == expected
