"""Hugging Face transformers checkpoints of BERT, ELECTRA and ALBERT, in and out.

A folder holds `config.json` (its `model_type` names the family),
`model.safetensors` (or shards) and the tokenizer (`vocab.txt`, ALBERT's
`spiece.model`, or from transformers 5 `tokenizer.json`: `tokenizer_json`).
The encoder classes and the pretraining classes (`...ForPreTraining`,
`...ForMaskedLM`, with their heads) are read and written by the family's
table (`tables`); the masked-LM output layer must be tied to the token
embeddings. Task classes (`huggingface_heads`) give their encoder here.
Safetensors are read with NumPy; a `pytorch_model.bin` only when its path is
given explicitly and torch is installed (`torch.load(weights_only=True)`).
"""

import collections
import pathlib
import warnings

from keras_bert_app.convert import tables, weight_map
from keras_bert_app.convert.family import ALBERT, BERT, ELECTRA
from keras_bert_app.convert.huggingface_config import (  # noqa: F401 (this module's names for them)
    ACTIVATIONS, CONFIG_FILE, SENTENCEPIECE_FILE, TOKENIZER_CONFIG_FILE, VOCABULARY_FILE, checkpoint_family,
    config_from_dict, hf_config, is_checkpoint, read_config, read_json, write_json,
)
from keras_bert_app.convert.weight_map import ConversionError

SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX_FILE = "model.safetensors.index.json"
PYTORCH_FILE = "pytorch_model.bin"
IGNORED = ("position_ids",)  # buffers, not weights
# Per family: the class names' stem and the task classes' encoder prefix; the pretraining heads as (our
# attribute, the tensor that marks it, its tensors' prefix), the first one deciding whether they are read; the
# masked-LM decoder (tied to the token embeddings) and the pooler's tensor (None: the family has no pooler).
Family = collections.namedtuple("Family", ["stem", "prefix", "heads", "decoder", "pooler"])
FAMILIES = {
    BERT: Family("Bert", "bert.", (("masked_lm_head", "cls.predictions.bias", "cls.predictions."),
                                   ("next_sentence_head", "cls.seq_relationship.weight", "cls.seq_relationship.")),
                 "cls.predictions.decoder", "pooler.dense.weight"),
    ALBERT: Family("Albert", "albert.", (("masked_lm_head", "predictions.bias", "predictions."),
                                         ("next_sentence_head", "sop_classifier.classifier.weight", "sop_classifier.")),
                   "predictions.decoder", "pooler.weight"),
    ELECTRA: Family("Electra", "electra.", (("discriminator_head", "discriminator_predictions.dense.weight",
                                             "discriminator_predictions."),
                                            ("masked_lm_head", "generator_lm_head.bias", "generator_")),
                    "generator_lm_head", None),
}
# The activation of transformers' ELECTRA generator head, whatever `hidden_act` says: the exact GELU (our names).
GENERATOR_HEAD_ACTIVATIONS = ("gelu", "gelu_exact")
GENERATOR_ARCHITECTURE = "ElectraForMaskedLM"


def encoder_mappings(num_layers, prefix="", layer_norm_names=None, family=BERT, skip=()):
    """`Mapping`s from HF encoder tensors (under `prefix`) to our encoder of `num_layers` layers (ALBERT: groups)."""
    return tables.mappings(tables.ENCODERS[family], "huggingface", num_layers, prefix, skip=skip,
                           layer_norm=layer_norm_names)


def read_tensors(path):
    """`({name: NumPy array}, file name for errors)` of a checkpoint folder or an explicit weights file.

    A folder gives its `model.safetensors` (or the shards its index lists);
    a `.bin` (pickle) file is read only when named explicitly, with torch's
    `weights_only=True`.
    """
    path = pathlib.Path(path)
    if path.is_dir():
        if (path / SAFETENSORS_FILE).is_file():
            return _read_safetensors([path / SAFETENSORS_FILE]), str(path / SAFETENSORS_FILE)
        if (path / SAFETENSORS_INDEX_FILE).is_file():
            index = read_json(path / SAFETENSORS_INDEX_FILE)
            shards = sorted(set(index.get("weight_map", {}).values()))
            return _read_safetensors([path / shard for shard in shards]), str(path / SAFETENSORS_INDEX_FILE)
        if (path / PYTORCH_FILE).is_file():
            raise ConversionError(
                f"{path} has only {PYTORCH_FILE} (a pickle file). Pass the file itself ({path / PYTORCH_FILE}) to "
                "load it with torch (weights_only=True), or convert it to model.safetensors."
            )
        raise FileNotFoundError(f"{path}: no {SAFETENSORS_FILE} or {PYTORCH_FILE}.")
    if path.suffix == ".safetensors":
        return _read_safetensors([path]), str(path)
    if path.suffix == ".bin":
        return _read_pytorch(path), str(path)
    raise FileNotFoundError(f"{path}: expected a checkpoint folder, a .safetensors or a .bin file.")


def load_weights(model, path):
    """Fill an encoder, or a model with its pretraining heads, from an HF checkpoint of any family.

    Args:
        model: a `BertEncoder`; a `BertPretrainer` (BERT's or ALBERT's
            heads, or ELECTRA's generator head without NSP); an
            `ElectraDiscriminator`. Heads the checkpoint lacks (a masked-LM
            class's NSP head, a pooler) keep fresh weights, with a warning.
        path: a checkpoint folder or an explicit weights file.

    Raises:
        ConversionError: an untied masked-LM output layer, which our head
            (scoring against the token embeddings) cannot hold; an ELECTRA
            generator whose `hidden_act` is not the GELU its HF head applies;
            tensors that do not fit the config.

    Returns:
        bool. True when pretraining heads were loaded.
    """
    tensors, source_name = read_tensors(path)
    kind = checkpoint_family(path)
    spec = FAMILIES[kind]
    encoder = getattr(model, "encoder", model)
    prefix = spec.prefix if f"{spec.prefix}embeddings.word_embeddings.weight" in tensors else ""
    masked_lm = next(head[1] for head in spec.heads if head[0] == "masked_lm_head")  # its output bias
    if f"{spec.decoder}.bias" in tensors:  # the bias HF's forward adds (tied checkpoints may hold a copy)
        tensors = {**tensors, masked_lm: tensors[f"{spec.decoder}.bias"]}
    loaded, absent = tables.present_heads(model, spec.heads, tensors)
    if spec.pooler and f"{prefix}{spec.pooler}" not in tensors:
        absent.add("pooler")
    if "masked_lm_head" in loaded:
        weight_map.check_tied_output(tensors, f"{spec.decoder}.weight", f"{prefix}embeddings.word_embeddings.weight",
                                     source_name)
        if kind == ELECTRA:
            _check_generator_activation(model, path)
    layer_norm = ("gamma", "beta") if any(name.endswith("LayerNorm.gamma") for name in tensors) else None
    mappings = encoder_mappings(encoder.num_groups or encoder.num_layers, prefix, layer_norm, kind,
                                absent | no_projection(encoder))
    mappings += tables.mappings(tables.HEADS[kind], "huggingface", skip=_other_heads(spec, loaded, absent),
                                layer_norm=layer_norm)
    ignored = IGNORED + (f"{spec.decoder}.",) + tuple(head[2] for head in spec.heads if head[0] not in loaded)
    own = [name for name in tensors if not prefix or name.startswith((prefix, *(head[2] for head in spec.heads)))]
    weight_map.check_unused(own, {mapping.source for mapping in mappings}, source_name, ignored)
    weight_map.load_mapped(model, mappings, tensors.get, source_name)
    if absent:
        warnings.warn(f"{source_name} has no tensors for our {' and '.join(sorted(absent))} (a masked-LM or task "
                      "checkpoint): those keep fresh weights.", stacklevel=2)
    return bool(loaded)


def save(model, folder, tokenizer_path, lowercase, family=BERT, strip_accents=True):
    """Write an HF folder of the family that transformers' `from_pretrained` loads.

    An encoder becomes `BertModel`/`ElectraModel`/`AlbertModel`; a
    pretrainer with a sentence head `BertForPreTraining`/`AlbertForPreTraining`,
    without one (a generator) `...ForMaskedLM` (without our pooler: those
    classes have none); an `ElectraDiscriminator` `ElectraForPreTraining`.
    `tokenizer_path` is the `vocab.txt` (ALBERT: the SentencePiece model).
    """
    spec = FAMILIES[family]
    encoder = getattr(model, "encoder", model)
    sentence = getattr(model, "next_sentence_head", None) is not None
    skip = no_projection(encoder)
    if getattr(model, "masked_lm_head", None) is not None:
        if family == ELECTRA:
            _check_generator_head(model)
        architecture = f"{spec.stem}For{'PreTraining' if sentence else 'MaskedLM'}"
        skip |= set() if sentence else {"pooler", "next_sentence_head"}  # transformers would call them unexpected
    elif getattr(model, "discriminator_head", None) is not None:
        architecture = f"{spec.stem}ForPreTraining"
    else:
        architecture = f"{spec.stem}Model"
    prefix = "" if architecture.endswith("Model") else spec.prefix
    mappings = encoder_mappings(encoder.num_groups or encoder.num_layers, prefix, family=family, skip=skip)
    if prefix:
        heads = {head[0] for head in spec.heads if getattr(model, head[0], None) is not None}
        mappings += tables.mappings(tables.HEADS[family], "huggingface", skip=_other_heads(spec, heads, set()))
    tensors = weight_map.export_mapped(model, mappings)
    if family == ALBERT and prefix:
        tensors[f"{spec.decoder}.weight"] = tensors[f"{prefix}embeddings.word_embeddings.weight"]
        tensors[f"{spec.decoder}.bias"] = tensors["predictions.bias"]
    return write_folder(folder, tensors, hf_config(encoder, architecture, family), tokenizer_path, lowercase, family,
                        strip_accents)


def write_folder(folder, tensors, config, tokenizer_path, lowercase, family=BERT, strip_accents=True):
    """An HF folder: `model.safetensors`, `config.json`, the tokenizer file and `tokenizer_config.json`."""
    from safetensors.numpy import save_file

    tokenizer_path = pathlib.Path(tokenizer_path)
    if family != ALBERT:
        weight_map.check_vocabulary(tokenizer_path, config["vocab_size"])
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / SAFETENSORS_FILE), metadata={"format": "pt"})
    write_json(folder / CONFIG_FILE, config)
    settings = {"do_lower_case": bool(lowercase), "tokenizer_class": f"{FAMILIES[family].stem}Tokenizer"}
    if family == ALBERT:
        settings["keep_accents"] = not strip_accents
    write_json(folder / TOKENIZER_CONFIG_FILE, settings)
    name = SENTENCEPIECE_FILE if family == ALBERT else VOCABULARY_FILE
    (folder / name).write_bytes(tokenizer_path.read_bytes())
    return folder


def no_projection(encoder):
    """`{"embedding_projection"}` when the encoder has none (BERT, ELECTRA with E = H): its rows are skipped."""
    return {"embedding_projection"} if getattr(encoder, "embedding_projection", None) is None else set()


def _other_heads(spec, loaded, absent):
    """Our head layers whose table rows are not read or written: the family's heads not loaded."""
    return {head[0] for head in spec.heads if head[0] not in loaded} | absent


def _check_generator_head(model):
    """Refuse a generator with an NSP head; warn when its head's activation is not the GELU transformers applies."""
    if getattr(model, "next_sentence_head", None) is not None:
        raise ConversionError("An ELECTRA generator has a masked-LM head only; this model has a next-sentence head "
                              "too (build it with next_sentence_prediction=False).")
    if model.masked_lm_head.activation not in GENERATOR_HEAD_ACTIVATIONS:
        warnings.warn("transformers' ElectraForMaskedLM head applies the exact GELU ('gelu') whatever hidden_act says; "
                      f"this generator's head applies {model.masked_lm_head.activation!r}, so its masked-LM logits in "
                      "transformers will differ.", stacklevel=3)


def _check_generator_activation(model, path):
    """transformers' generator head applies the exact GELU whatever `hidden_act` says; ours the encoder's: another
    `hidden_act` is refused."""
    if model.masked_lm_head.activation not in GENERATOR_HEAD_ACTIVATIONS:
        path = pathlib.Path(path)
        config_path = (path.parent if path.is_file() else path) / CONFIG_FILE
        hidden_act = read_json(config_path).get("hidden_act") if config_path.is_file() else None
        raise ConversionError(
            f"{config_path}: field 'hidden_act' is {hidden_act!r}; expected 'gelu' for an ElectraForMaskedLM: its "
            "head applies the exact GELU whatever hidden_act says, ours the encoder's activation. "
            "BertEncoder.from_preset reads the encoder alone."
        )


def _read_safetensors(paths):
    from safetensors.numpy import load_file

    tensors = {}
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"{path}: safetensors shard not found.")
        tensors.update(load_file(str(path)))
    return tensors


def _read_pytorch(path):
    try:
        import torch
    except ImportError:
        raise ConversionError(
            f"{path} is a PyTorch pickle file; reading it needs torch (pip install torch), or convert it to "
            "model.safetensors."
        ) from None
    state = torch.load(str(path), map_location="cpu", weights_only=True)
    return {name: tensor.float().numpy() if tensor.is_floating_point() else tensor.numpy()
            for name, tensor in state.items()}
