"""The ONNX export: Keras' `model.export(format="onnx")`, then named inputs/outputs, int8, a tokenizer.

`model.onnx` takes `token_ids`, `segment_ids`, `padding_mask` (int32
[batch, seq], both axes dynamic). With `with_tokenizer`,
`model_with_tokenizer.onnx` takes `text` (a [batch] string tensor) and
needs onnxruntime-extensions' op library (`onnxruntime_extensions.get_library_path()`,
registered on the `SessionOptions`). With `quantize="int8"`, the weights of
the matrix multiplications are int8 (ONNX Runtime's dynamic quantization).
"""

from keras_bert_app.export import onnx_fusion, onnx_graph
from keras_bert_app.export.serving_head import INPUT_NAMES

OPSET = 17
MODEL_FILE = "model.onnx"
TOKENIZER_MODEL_FILE = "model_with_tokenizer.onnx"
QUANTIZATIONS = ("int8",)


def write_onnx(serving_model, folder, head, signature, output_names, quantize=None, with_tokenizer=False):
    """Write `folder/model.onnx` (and the raw-text model); returns metadata entries.

    `signature` is the Keras input signature, `output_names` the outputs in the served order.
    """
    import onnx

    path = folder / MODEL_FILE
    serving_model.export(
        str(path), format="onnx", input_signature=signature, opset_version=OPSET, verbose=False
    )
    model = onnx.load(str(path))
    onnx_fusion.fuse_gelus(model)  # before replace_erfc: it reads GELU's Erfc
    onnx_fusion.fuse_layer_norms(model)
    onnx_fusion.drop_squeezed_ones(model)
    onnx_graph.replace_erfc(model)
    names = {f"args_0_{name}": name for name in INPUT_NAMES}
    # tf2onnx's outputs come in Keras' flattening order of the output dict: sorted keys.
    flattened = sorted(serving_model.output.keys()) if isinstance(serving_model.output, dict) else []
    names.update({value.name: name for value, name in zip(model.graph.output, flattened)})
    onnx_graph.rename(model, names)
    onnx_graph.order_outputs(model, list(output_names))
    onnx_graph.name_dynamic_axes(model, ("batch", "sequence"))
    if head.task == "classification" and getattr(head, "label_names", None) is not None:
        onnx_graph.add_labels(model, list(head.label_names))
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    if quantize == "int8":
        quantize_int8(path)
    metadata = {"opset": onnx_graph.opset(onnx.load(str(path))), "model_file": MODEL_FILE,
                "outputs": [value.name for value in onnx.load(str(path)).graph.output]}
    if with_tokenizer:
        from keras_bert_app.export import onnx_tokenizer

        onnx_tokenizer.write_with_tokenizer(path, folder / TOKENIZER_MODEL_FILE, head)
        metadata["text_model_file"] = TOKENIZER_MODEL_FILE
    return metadata


def quantize_int8(path):
    """ONNX Runtime's dynamic int8 quantization of `path`'s weights, in place.

    Per output channel, in 7 bits (`reduce_range`): on the fine-tuned MiniLM
    headline classifier these kept the probabilities within 0.04 of float32
    (per tensor: 0.08, and 1.5 points of dev accuracy lost).
    """
    import pathlib
    import tempfile

    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as scratch:
        quantized = pathlib.Path(scratch) / "int8.onnx"
        quantize_dynamic(str(path), str(quantized), weight_type=QuantType.QInt8, per_channel=True,
                         reduce_range=True)
        pathlib.Path(path).write_bytes(quantized.read_bytes())

