"""Raw strings into the ONNX model: onnxruntime-extensions' `BertTokenizer` op in the graph.

The op (domain `ai.onnx.contrib`) holds the vocabulary and does BERT's basic
tokenization (lowercasing and accent stripping for an uncased vocabulary,
punctuation and CJK characters split) and WordPiece, then adds `[CLS]` and
`[SEP]` and truncates to the served length. Its accent stripping covers
Latin-1 letters only, so the graph first rewrites other accented letters
(`accent_nodes`, when a text has one). It tokenizes one string per
call, so the graph loops over the batch (`Loop`), pads each row to S, and
cuts the batch to its longest row, as the SavedModel's length buckets do:

    text [batch] -> accents stripped -> Loop(BertTokenizer, Pad to S) -> [batch, S] -> cut to the
    longest row -> token_ids, segment_ids (0), padding_mask -> the model

Where the op's ids differ from ours, see the serving guide's ONNX Runtime
section (measured on the Wikipedia sample by `tests/export/test_onnx_tokenizer.py`).
In a process that has imported TensorFlow, onnxruntime-extensions' regex
op (1.32/0.15.2) leaves its input unchanged (both link RE2): serve the
raw-string model from a process without TensorFlow, as ORT users do.
"""

import numpy as np

from keras_bert_app import errors

DOMAIN = "ai.onnx.contrib"
IDS = ("tokenizer_token_ids", "tokenizer_segment_ids", "tokenizer_padding_mask")
# Unicode blocks whose accented letters the graph rewrites: Latin, Greek and Cyrillic (with extensions).
ACCENT_BLOCKS = ((0x00C0, 0x0250), (0x0370, 0x0530), (0x1E00, 0x2000))


def check_tokenizer(preprocessor, text_pair=False):
    """Raise `ArgumentError` (one line) for a tokenizer or option the op cannot reproduce."""
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    tokenizer = preprocessor.tokenizer
    if not isinstance(tokenizer, BertTokenizer):
        raise errors.ArgumentError(
            "with_tokenizer", f"export --with-tokenizer: onnxruntime-extensions' BertTokenizer op reproduces "
            f"WordPiece vocabularies only, not this model's {type(tokenizer).__name__}; export token ids in.",
        )
    if tokenizer.special_tokens_in_strings:
        raise errors.ArgumentError(
            "with_tokenizer", "export --with-tokenizer: this tokenizer maps literal [MASK]/[SEP] in the text to "
            "their ids (special_tokens_in_strings) and the op splits them as text; export token ids in.",
        )
    if text_pair:
        raise errors.ArgumentError(
            "with_tokenizer", "export --with-tokenizer: a text pair model takes token ids in ONNX; "
            "the raw-string graph serves one text.",
        )


def accent_table():
    """`{plain letter: the letters that NFD-decompose to it plus marks}` over Latin, Greek and Cyrillic.

    The op lowercases and strips the accents of Latin-1 letters only (É, é, ü)
    and maps others (ā, ş, ō, Greek ύ) to [UNK]; BERT (and our tokenizer)
    decompose every letter (NFD) and drop its marks (Mn). The graph first
    rewrites these letters with `StringRegexReplace`, one class per letter.
    """
    import unicodedata

    table = {}
    for code in [code for start, end in ACCENT_BLOCKS for code in range(start, end)]:
        letter = chr(code)
        plain = "".join(c for c in unicodedata.normalize("NFD", letter) if unicodedata.category(c) != "Mn")
        if plain != letter and len(plain) == 1 and unicodedata.category(letter).startswith("L"):
            table.setdefault(plain, []).append(letter)
    return {plain: "".join(letters) for plain, letters in sorted(table.items())}


def accent_nodes(text, output):
    """Nodes: `text` -> `output` without marks (Mn) and with each accented letter plain.

    One `StringRegexReplace` a letter (about a hundred), run only when a text
    of the batch needs them: an `If` on a regex over the batch first (any
    character above ASCII: cheap), then another (a mark or a letter of the
    table's blocks), so that an ASCII request pays one regex, not a hundred.
    """
    import onnx
    from onnx import helper

    def constant(name, value):
        tensor = helper.make_tensor(name, onnx.TensorProto.STRING, [1], [value.encode("utf-8")])
        return helper.make_node("Constant", [], [name], name=name, value=tensor)

    table = accent_table()
    rewrites = [(r"\p{Mn}", "")] + [(f"[{letters}]", plain) for plain, letters in table.items()]
    nodes, current = [], text
    for index, (pattern, rewrite) in enumerate(rewrites):
        result = f"{output}_rewritten" if index == len(rewrites) - 1 else f"{text}_rewritten_{index}"
        nodes += [constant(f"accent_pattern_{index}", pattern), constant(f"accent_rewrite_{index}", rewrite),
                  helper.make_node("StringRegexReplace", [current, f"accent_pattern_{index}",
                                                          f"accent_rewrite_{index}"], [result],
                                   domain=DOMAIN, global_replace=1)]
        current = result
    accented = "[" + "".join(f"\\x{{{start:04x}}}-\\x{{{end - 1:04x}}}" for start, end in ACCENT_BLOCKS) + r"\p{Mn}]"
    nodes = _unless_matched(text, accented, nodes, f"{output}_rewritten", f"{output}_accented", "accented")
    return _unless_matched(text, r"[^\x00-\x7f]", nodes, f"{output}_accented", output, "non_ascii")


def _unless_matched(text, pattern, nodes, nodes_output, output, name):
    """Nodes: `output` = `text` when no text of the batch matches `pattern`, else `nodes`' `nodes_output`."""
    import onnx
    from onnx import TensorProto, helper

    def graph(graph_nodes, graph_output, graph_name):
        return helper.make_graph(graph_nodes, graph_name, [], [
            helper.make_tensor_value_info(graph_output, TensorProto.STRING, [None])])

    strings = [helper.make_tensor(f"{name}_{key}", onnx.TensorProto.STRING, [1], [value.encode("utf-8")])
               for key, value in (("pattern", pattern), ("nothing", ""))]
    kept = helper.make_node("Identity", [text], [f"{output}_kept"])
    return [
        *[helper.make_node("Constant", [], [tensor.name], value=tensor) for tensor in strings],
        helper.make_node("StringRegexReplace", [text, f"{name}_pattern", f"{name}_nothing"], [f"{name}_removed"],
                         domain=DOMAIN, global_replace=1),
        helper.make_node("StringEqual", [text, f"{name}_removed"], [f"{name}_unmatched"], domain=DOMAIN),
        helper.make_node("Cast", [f"{name}_unmatched"], [f"{name}_unmatched_int"], to=TensorProto.INT32),
        # (An empty batch: ReduceMin's identity, the largest int: nothing matched.)
        helper.make_node("ReduceMin", [f"{name}_unmatched_int"], [f"{name}_none_int"], keepdims=0),
        helper.make_node("Cast", [f"{name}_none_int"], [f"{name}_none"], to=TensorProto.BOOL),
        helper.make_node("If", [f"{name}_none"], [output], then_branch=graph([kept], f"{output}_kept", f"{name}_keep"),
                         else_branch=graph(nodes, nodes_output, f"{name}_rewrite")),
    ]


def tokenizer_graph(tokenizer, sequence_length):
    """An ONNX model: `text` [batch] strings -> the three id tensors, int32 [batch, longest row]."""
    import onnx
    from onnx import TensorProto, helper

    def constant(name, array):
        return helper.make_node("Constant", [], [name], name=name, value=onnx.numpy_helper.from_array(array))

    vocabulary = "\n".join(tokenizer.get_vocabulary())
    body = helper.make_graph(
        [
            helper.make_node("Unsqueeze", ["index", "axis_0"], ["start"]),
            helper.make_node("Add", ["start", "one"], ["end"]),
            helper.make_node("Slice", ["plain_text", "start", "end"], ["one_text"]),
            helper.make_node(
                "BertTokenizer", ["one_text"], ["ids", "types", "mask"], domain=DOMAIN,
                vocab_file=vocabulary, do_lower_case=int(tokenizer.lowercase),
                strip_accents=int(tokenizer.lowercase), max_length=int(sequence_length),
                truncation_strategy_name="longest_first",
            ),
            helper.make_node("Shape", ["ids"], ["length"]),
            helper.make_node("Sub", ["full_length", "length"], ["padding"]),
            helper.make_node("Concat", ["zero", "padding"], ["pads"], axis=0),
            helper.make_node("Pad", ["ids", "pads", "pad_id"], ["row_ids"]),
            helper.make_node("Pad", ["mask", "pads", "zero_scalar"], ["row_mask"]),
            helper.make_node("Identity", ["condition"], ["condition_out"]),
        ],
        "tokenize_one",
        [helper.make_tensor_value_info("index", TensorProto.INT64, []),
         helper.make_tensor_value_info("condition", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("condition_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("row_ids", TensorProto.INT64, [sequence_length]),
         helper.make_tensor_value_info("row_mask", TensorProto.INT64, [sequence_length])],
    )
    # Accents: rewritten on the whole batch before the loop (uncased vocabularies only).
    plain = accent_nodes("text", "plain_text") if tokenizer.lowercase else [
        helper.make_node("Identity", ["text"], ["plain_text"])]
    nodes = plain + [
        constant("axis_0", np.array([0], np.int64)),
        constant("one", np.array([1], np.int64)),
        constant("zero", np.array([0], np.int64)),
        constant("zero_scalar", np.array(0, np.int64)),
        constant("full_length", np.array([sequence_length], np.int64)),
        constant("pad_id", np.array(tokenizer.pad_token_id, np.int64)),
        constant("true", np.array(True)),
        constant("two", np.array([2], np.int64)),
        helper.make_node("Shape", ["text"], ["batch_shape"]),
        helper.make_node("Squeeze", ["batch_shape", "axis_0"], ["batch"]),
        helper.make_node("Loop", ["batch", "true"], ["all_ids", "all_mask"], body=body),
        helper.make_node("ReduceSum", ["all_mask", "one"], ["row_lengths"], keepdims=0),
        # The longest row (at least 2: [CLS] [SEP]; an empty batch cuts to 2 too).
        helper.make_node("Concat", ["row_lengths", "two"], ["lengths_and_two"], axis=0),
        helper.make_node("ReduceMax", ["lengths_and_two"], ["longest"], keepdims=1),
        helper.make_node("Slice", ["all_ids", "zero", "longest", "one"], ["cut_ids"]),
        helper.make_node("Slice", ["all_mask", "zero", "longest", "one"], ["cut_mask"]),
        helper.make_node("Cast", ["cut_ids"], [IDS[0]], to=TensorProto.INT32),
        helper.make_node("Cast", ["cut_mask"], [IDS[2]], to=TensorProto.INT32),
        helper.make_node("Sub", [IDS[2], IDS[2]], [IDS[1]]),  # one segment: zeros of the same shape
    ]
    graph = helper.make_graph(
        nodes, "bert_tokenizer",
        [helper.make_tensor_value_info("text", TensorProto.STRING, [None])],
        [helper.make_tensor_value_info(name, TensorProto.INT32, [None, None]) for name in IDS],
    )
    return graph


def write_with_tokenizer(model_path, target, head):
    """`target`: the tokenizer graph in front of the ids model at `model_path` (`text` in)."""
    import onnx
    from onnx import compose, helper

    from keras_bert_app.export.serving_head import INPUT_NAMES

    model = onnx.load(str(model_path))
    graph = tokenizer_graph(head.tokenizer, head.sequence_length)
    opsets = [entry for entry in model.opset_import if entry.domain != DOMAIN] + [helper.make_opsetid(DOMAIN, 1)]
    tokenizer = helper.make_model(graph, opset_imports=opsets, ir_version=model.ir_version)
    model.opset_import.extend([helper.make_opsetid(DOMAIN, 1)])
    merged = compose.merge_models(tokenizer, model, io_map=list(zip(IDS, INPUT_NAMES)))
    onnx.save(merged, str(target))
    return target
