"""A pretraining run's folder: `run_config.json` checks (resume or refuse) and the preset written at the end.

A rerun with the same arguments resumes; other arguments, or a folder that
holds something else, are refused with a message that says which.
"""

import json
import os
import shutil

from keras_bert_app import errors, presets

RUN_CONFIG_FILE = "run_config.json"
# Arguments that define a run: a rerun must give the same ones to resume.
# The names are those of the command line (and of run folders already written):
# "no_nsp" is `not next_sentence_prediction`.
RUN_KEYS = (
    "preset", "data", "corpus", "batch_size", "steps", "learning_rate", "warmup_steps",
    "optimizer", "weight_decay", "accumulation_steps", "mixed_precision", "no_nsp",
    "max_seq_length", "max_predictions", "seed", "checkpoint_every", "output_bias_init", "dropout",
    "objective", "generator_size", "rtd_weight",
    "whole_word_masking", "masking", "max_ngram", "segmenter", "entity_masking", "pairing",
    "corruption", "adam_beta2", "adam_epsilon",
)
# Values of run keys added later, for run folders written before them.
RUN_KEY_DEFAULTS = {
    "output_bias_init": "zeros", "dropout": None, "objective": "mlm_nsp", "generator_size": None, "rtd_weight": None,
    "whole_word_masking": False, "masking": "token", "max_ngram": 3, "segmenter": None, "entity_masking": False,
    "pairing": "nsp",  # the data's pairing (records: theirs), as data_shape resolves it
    "corruption": None, "adam_beta2": 0.999, "adam_epsilon": 1e-6,
}
PRESET_FOLDER = "preset"


def run_config(settings):
    """The run keys as `run_config.json` has always stored them."""
    values = {
        **{key: getattr(settings, key) for key in RUN_KEYS if key not in ("no_nsp", "corpus", "corruption")},
        "no_nsp": not settings.next_sentence_prediction,
        "corpus": None if settings.corpus is None else list(settings.corpus),
        "corruption": None if settings.corruption is None else list(settings.corruption),
    }
    return {key: values[key] for key in RUN_KEYS}


def check_run_dir(run_dir, config, checkpoint_dir):
    """True when `run_dir` holds checkpoints of this same run; errors for another run's folder."""
    from keras_bert_app.training.checkpointing import list_checkpoints

    stored_path = run_dir / RUN_CONFIG_FILE
    if stored_path.is_file():
        stored = json.loads(stored_path.read_text())
        differences = [
            f"{key}: {stored.get(key, RUN_KEY_DEFAULTS.get(key))!r} there, {config[key]!r} now"
            for key in RUN_KEYS
            if _comparable(key, stored.get(key, RUN_KEY_DEFAULTS.get(key))) != _comparable(key, config[key])
        ]
        if differences:
            raise errors.ArgumentError(
                "output",
                f"{run_dir} holds a run with another configuration ({'; '.join(differences)}). "
                "Rerun with the same arguments to resume it, or pass a new output folder.",
            )
        return bool(list_checkpoints(checkpoint_dir))
    if run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
        raise errors.OutputExistsError(
            f"{run_dir} is not empty and has no {RUN_CONFIG_FILE}: not a pretraining run folder. "
            "Pass a new or empty output folder."
        )
    return False


PATH_KEYS = ("preset", "data", "corpus")


def _comparable(key, value):
    """A run key's value as compared on resume: a local path the same however it is spelled ("P", "./P", "/abs/P")."""
    if key not in PATH_KEYS or value is None:
        return value
    if isinstance(value, list):
        return [_comparable(key, item) for item in value]
    text = str(value)
    if "://" in text or not (os.sep in text or os.path.exists(text)):
        return value  # a built-in preset name, or a remote (tf.io.gfile) path: as given
    return os.path.normpath(os.path.abspath(os.path.expanduser(text)))


def write_run_config(run_dir, config):
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / RUN_CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")


def _tokenizer_asset(resolved):
    """The preset's `tokenizer` config entry and the file it names: WordPiece's vocabulary or ALBERT's SentencePiece model."""
    from keras_bert_app.preprocessing.preset_tokenizer import SENTENCEPIECE

    entry = resolved.config.get("tokenizer", {})
    if entry.get("type") == SENTENCEPIECE:
        model = resolved.sentencepiece_model_path
        return {**entry, "sentencepiece_model": model.name}, model
    vocabulary = resolved.vocabulary_path
    return {**entry, "vocabulary": vocabulary.name}, vocabulary


def write_preset(pretrainer, source_preset, folder, resolved):
    """The run's result as a preset folder: config, vocabulary, encoder + head weights.

    The encoder config keeps the starting preset's dropout rate: `dropout`
    is a choice of how to pretrain, and fine-tuning from the preset uses the
    model's own rate. A pretrainer that writes sub-presets (ELECTRA's
    `generator/`) gets the tokenizer and the same dropout rule there too.
    """
    source_config = resolved.config
    tokenizer, vocabulary = _tokenizer_asset(resolved)
    temporary = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(temporary, ignore_errors=True)
    presets.write_config_entry(temporary, "name", folder.parent.name)
    presets.write_config_entry(temporary, "description", f"Pretrained from {source_preset} by keras-bert-app pretrain.")
    presets.write_config_entry(temporary, "tokenizer", tokenizer)
    shutil.copyfile(vocabulary, temporary / vocabulary.name)
    pretrainer.save_to_preset(temporary)
    source_dropout = source_config.get("encoder", {}).get("dropout")
    for sub_preset in [temporary, *sorted(path.parent for path in temporary.glob("*/config.json"))]:
        config = presets.read_config(sub_preset)
        if sub_preset != temporary:
            presets.write_config_entry(sub_preset, "name", f"{folder.parent.name}/{sub_preset.name}")
            presets.write_config_entry(sub_preset, "tokenizer", tokenizer)
            shutil.copyfile(vocabulary, sub_preset / vocabulary.name)
        if source_dropout is not None:
            presets.write_config_entry(sub_preset, "encoder", {**config["encoder"], "dropout": source_dropout})
            for name, entry in config.items():
                inner = entry.get("config", {}) if isinstance(entry, dict) else {}
                if isinstance(inner.get("generator"), dict):  # a head config that holds an encoder config
                    generator = {**inner["generator"], "dropout": source_dropout}
                    presets.write_config_entry(sub_preset, name, {**entry, "config": {**inner, "generator": generator}})
    shutil.rmtree(folder, ignore_errors=True)
    temporary.rename(folder)
