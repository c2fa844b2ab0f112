"""Hugging Face transformers ELECTRA checkpoints (`model_type: "electra"`), in and out.

Three layouts are read and written:
- `ElectraModel`: the encoder alone (`embeddings.*`, `embeddings_project.*`
  when `embedding_size != hidden_size`, `encoder.layer.*`); ELECTRA has no
  pooler, so our encoder's `pooler` keeps fresh weights.
- `ElectraForPreTraining`, the discriminator: `electra.` prefix plus
  `discriminator_predictions.{dense,dense_prediction}` (the
  `ReplacedTokenHead` of our `ElectraDiscriminator`).
- `ElectraForMaskedLM`, the generator: `electra.` prefix plus
  `generator_predictions.{dense,LayerNorm}` and `generator_lm_head.bias`
  (our `MaskedLMHead`; the output matrix is the tied token embedding, so
  `generator_lm_head.weight` is absent or equal to it).

The Transformer layers have BERT's names, so their map is
`huggingface.encoder_mappings`. Safetensors are read with NumPy.
"""

import json
import pathlib
import warnings

from keras_bert_app.convert import huggingface, weight_map
from keras_bert_app.convert.weight_map import ConversionError, Mapping

MODEL_TYPE = "electra"
ENCODER_ARCHITECTURE = "ElectraModel"
DISCRIMINATOR_ARCHITECTURE = "ElectraForPreTraining"
GENERATOR_ARCHITECTURE = "ElectraForMaskedLM"
# Fine-tuned checkpoints: their encoder is read, their task head is not.
TASK_ARCHITECTURES = (
    "ElectraForSequenceClassification",
    "ElectraForTokenClassification",
    "ElectraForQuestionAnswering",
    "ElectraForMultipleChoice",
)
ARCHITECTURES = (ENCODER_ARCHITECTURE, DISCRIMINATOR_ARCHITECTURE, GENERATOR_ARCHITECTURE, *TASK_ARCHITECTURES)
PREFIX = "electra."
# The activation of transformers' generator head (`ElectraGeneratorPredictions`), whatever `hidden_act` says:
# the exact GELU (our names for it).
GENERATOR_HEAD_ACTIVATIONS = ("gelu", "gelu_exact")
# Our variable paths of the heads (`layers.ElectraDiscriminatorHead`, `layers.MaskedLMHead`).
DISCRIMINATOR_HEAD = "discriminator_head"
GENERATOR_HEAD = "masked_lm_head"


def is_electra(folder):
    """True when the folder's `config.json` says `model_type: "electra"`."""
    path = pathlib.Path(folder) / huggingface.CONFIG_FILE
    try:
        config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(config, dict) and config.get("model_type") == MODEL_TYPE


def read_config(folder):
    """Our preset config (`encoder`, `tokenizer`, `architecture`) from an HF ELECTRA folder.

    `embedding_dim` is set when `embedding_size` differs from `hidden_size`.
    `architecture` is "electra"; `checkpoint_architecture` the HF class
    (`ElectraForPreTraining`, ...).

    Raises:
        ConversionError: an `architectures` entry this converter does not
            know, or settings BERT's layers cannot express.
    """
    folder = pathlib.Path(folder)
    path = folder / huggingface.CONFIG_FILE
    config = huggingface._read_json(path)
    if config.get("model_type") != MODEL_TYPE:
        raise ConversionError(f"{path}: model_type is {config.get('model_type')!r}; expected {MODEL_TYPE!r}.")
    architecture = checkpoint_architecture(path, config)
    bert_like = {**config, "model_type": "bert"}
    ours = huggingface.config_from_dict(path, bert_like, folder)
    embedding_size = int(config.get("embedding_size") or config["hidden_size"])
    if embedding_size != ours["encoder"]["hidden_dim"]:
        ours["encoder"]["embedding_dim"] = embedding_size
    name = config.get("_name_or_path") or folder.name
    ours["description"] = f"Converted from the Hugging Face ELECTRA checkpoint {name} ({architecture})."
    ours["architecture"] = MODEL_TYPE
    ours["checkpoint_architecture"] = architecture
    return ours


def checkpoint_architecture(path, config):
    """The HF class named in `architectures` (ElectraModel when absent); ConversionError for others."""
    names = config.get("architectures") or [ENCODER_ARCHITECTURE]
    if not isinstance(names, list) or len(names) != 1 or names[0] not in ARCHITECTURES:
        raise ConversionError(
            f"{path}: field 'architectures' is {names!r}; expected one of {list(ARCHITECTURES)} "
            "(an ELECTRA encoder, discriminator or generator)."
        )
    return names[0]


def encoder_mappings(num_layers, prefix="", projection=False, layer_norm_names=("weight", "bias")):
    """`Mapping`s from HF ELECTRA encoder tensors to our `BertEncoder` (no pooler: ELECTRA has none)."""
    mappings = [
        mapping
        for mapping in huggingface.encoder_mappings(num_layers, prefix, layer_norm_names)
        if not mapping.target.startswith("pooler/")
    ]
    if projection:
        mappings += [
            Mapping(f"{prefix}embeddings_project.weight", "embedding_projection/kernel", weight_map.TRANSPOSED),
            Mapping(f"{prefix}embeddings_project.bias", "embedding_projection/bias", weight_map.SAME),
        ]
    return mappings


def discriminator_mappings():
    """`Mapping`s of `discriminator_predictions.*` to our discriminator head."""
    return [
        Mapping("discriminator_predictions.dense.weight", f"{DISCRIMINATOR_HEAD}/dense/kernel", weight_map.TRANSPOSED),
        Mapping("discriminator_predictions.dense.bias", f"{DISCRIMINATOR_HEAD}/dense/bias", weight_map.SAME),
        Mapping(
            "discriminator_predictions.dense_prediction.weight",
            f"{DISCRIMINATOR_HEAD}/dense_prediction/kernel",
            weight_map.TRANSPOSED,
        ),
        Mapping(
            "discriminator_predictions.dense_prediction.bias", f"{DISCRIMINATOR_HEAD}/dense_prediction/bias", weight_map.SAME
        ),
    ]


def generator_mappings(layer_norm_names=("weight", "bias")):
    """`Mapping`s of `generator_predictions.*` and `generator_lm_head.bias` to our `MaskedLMHead`."""
    gamma, beta = layer_norm_names
    return [
        Mapping("generator_predictions.dense.weight", f"{GENERATOR_HEAD}/dense/kernel", weight_map.TRANSPOSED),
        Mapping("generator_predictions.dense.bias", f"{GENERATOR_HEAD}/dense/bias", weight_map.SAME),
        Mapping(f"generator_predictions.LayerNorm.{gamma}", f"{GENERATOR_HEAD}/layer_norm/gamma", weight_map.SAME),
        Mapping(f"generator_predictions.LayerNorm.{beta}", f"{GENERATOR_HEAD}/layer_norm/beta", weight_map.SAME),
        Mapping("generator_lm_head.bias", f"{GENERATOR_HEAD}/output_bias", weight_map.SAME),
    ]


def load_weights(model, path):
    """Fill an encoder, or an encoder with its ELECTRA head, from an HF ELECTRA checkpoint.

    Args:
        model: a `BertEncoder`; a model with `.encoder` and
            `.discriminator_head` (filled from `discriminator_predictions.*`
            when the checkpoint has them); or a model with `.encoder` and
            `.masked_lm_head` (a generator: `BertPretrainer` without NSP,
            filled from `generator_predictions.*`).
        path: a checkpoint folder or an explicit weights file.

    Returns:
        bool. True when the head was loaded too.
    """
    tensors, source_name = huggingface.read_tensors(path)
    encoder = getattr(model, "encoder", model)
    prefix = PREFIX if f"{PREFIX}embeddings.word_embeddings.weight" in tensors else ""
    layer_norm_names = huggingface._layer_norm_names(tensors)
    mappings = encoder_mappings(encoder.num_layers, prefix, _has_projection(encoder), layer_norm_names)
    heads = False
    if getattr(model, "discriminator_head", None) is not None and "discriminator_predictions.dense.weight" in tensors:
        mappings += discriminator_mappings()
        heads = True
    elif getattr(model, "masked_lm_head", None) is not None and "generator_lm_head.bias" in tensors:
        weight_map.check_tied_output(tensors, "generator_lm_head.weight", f"{prefix}embeddings.word_embeddings.weight",
                                     source_name)
        _check_generator_activation(model, path)
        mappings += generator_mappings(layer_norm_names)
        heads = True
    ignored = huggingface.IGNORED + ("generator_lm_head.weight",)
    if not heads:
        ignored += ("discriminator_predictions.", "generator_predictions.", "generator_lm_head.")
    # Other top-level tensors (a fine-tuned task's classifier) are not ELECTRA's encoder.
    own = (prefix, "discriminator_predictions.", "generator_") if prefix else ("embeddings", "encoder.")
    names = [name for name in tensors if name.startswith(own)]
    weight_map.check_unused(names, {mapping.source for mapping in mappings}, source_name, ignored)
    weight_map.load_mapped(model, mappings, tensors.get, source_name)
    return heads


def save(model, folder, vocabulary_path, lowercase):
    """Write an HF ELECTRA folder that transformers' `from_pretrained` loads.

    A `BertEncoder` becomes an `ElectraModel` (its pooler, which ELECTRA
    does not have, is left out); a model with a `discriminator_head` an
    `ElectraForPreTraining`; a model with a `masked_lm_head` and no
    next-sentence head (a generator) an `ElectraForMaskedLM`. Writes
    `config.json`, `model.safetensors`, `vocab.txt` and `tokenizer_config.json`.
    """
    from safetensors.numpy import save_file

    encoder = getattr(model, "encoder", model)
    weight_map.check_vocabulary(vocabulary_path, encoder.vocabulary_size)
    projection = _has_projection(encoder)
    if getattr(model, "discriminator_head", None) is not None:
        architecture = DISCRIMINATOR_ARCHITECTURE
        mappings = encoder_mappings(encoder.num_layers, PREFIX, projection) + discriminator_mappings()
    elif getattr(model, "masked_lm_head", None) is not None:
        if getattr(model, "next_sentence_head", None) is not None:
            raise ConversionError(
                "An ELECTRA generator has a masked-LM head only; this model has a next-sentence head too "
                "(build it with next_sentence_prediction=False)."
            )
        architecture = GENERATOR_ARCHITECTURE
        mappings = encoder_mappings(encoder.num_layers, PREFIX, projection) + generator_mappings()
        if model.masked_lm_head.activation not in GENERATOR_HEAD_ACTIVATIONS:
            warnings.warn(
                "transformers' ElectraForMaskedLM head applies the exact GELU ('gelu') whatever hidden_act "
                f"says; this generator's head applies {model.masked_lm_head.activation!r}, so its masked-LM logits "
                "in transformers will differ.",
                stacklevel=2,
            )
    else:
        architecture = ENCODER_ARCHITECTURE
        mappings = encoder_mappings(encoder.num_layers, "", projection)
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = weight_map.export_mapped(model, mappings)
    save_file(tensors, str(folder / huggingface.SAFETENSORS_FILE), metadata={"format": "pt"})
    huggingface._write_json(folder / huggingface.CONFIG_FILE, hf_config(encoder, architecture))
    huggingface._write_json(
        folder / huggingface.TOKENIZER_CONFIG_FILE,
        {"do_lower_case": bool(lowercase), "tokenizer_class": "ElectraTokenizer"},
    )
    (folder / huggingface.VOCABULARY_FILE).write_text(
        pathlib.Path(vocabulary_path).read_text(encoding="utf-8"), encoding="utf-8"
    )
    return folder


def hf_config(encoder, architecture):
    """An HF `ElectraConfig` dict for our encoder."""
    config = huggingface.hf_config(encoder, architecture)
    config["model_type"] = MODEL_TYPE
    config["embedding_size"] = embedding_width(encoder)
    config["tie_word_embeddings"] = True
    return config


def embedding_width(encoder):
    """The encoder's embedding width E (its hidden width H unless factorized)."""
    return encoder.hidden_dim if getattr(encoder, "embedding_dim", None) is None else encoder.embedding_dim


def _has_projection(encoder):
    return embedding_width(encoder) != encoder.hidden_dim


def _check_generator_activation(model, path):
    """transformers' `ElectraGeneratorPredictions` applies the exact GELU whatever `hidden_act` says; our
    masked-LM head applies the encoder's activation, so a generator with another `hidden_act` is refused."""
    if model.masked_lm_head.activation not in GENERATOR_HEAD_ACTIVATIONS:
        path = pathlib.Path(path)
        config_path = (path.parent if path.is_file() else path) / huggingface.CONFIG_FILE
        hidden_act = json.loads(config_path.read_text(encoding="utf-8")).get("hidden_act") if config_path.is_file() else None
        raise ConversionError(
            f"{config_path}: field 'hidden_act' is {hidden_act!r}; expected 'gelu' for an ElectraForMaskedLM: its "
            "head applies the exact GELU whatever hidden_act says, ours the encoder's activation. "
            "BertEncoder.from_preset reads the encoder alone."
        )
