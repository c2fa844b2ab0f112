"""Files as users bring them, through the command line: a UTF-8 byte-order mark, Windows line ends,
quoted records over several lines, Latin-1 and UTF-16 exports, empty and null cells, duplicate headers.

Each is read as meant, or refused with one line naming the file, the line and the problem (exit code 2).
`finetune` prints the training summary before it reads the dev file, so a broken dev file shows how the
training file was read without a training run.
"""

import json
import re

import pytest

from keras_bert_app import cli
from tests.tasks.tiny_presets import write_tiny_preset

BOM = "\ufeff".encode()
FAST = ["--epochs", "1", "--batch-size", "4", "--sequence-length", "32"]


@pytest.fixture(scope="module")
def preset(tmp_path_factory, shared_data):
    folder = tmp_path_factory.mktemp("tiny_preset")
    return write_tiny_preset(folder, shared_data / "vocab" / "bert_uncased_vocab.txt", max_sequence_length=128)


def run_cli(argv, capsys):
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line(code, err, pattern):
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert re.search(pattern, err), err


def classify(tmp_path, preset, train, dev, suffix=".csv", extra=()):
    paths = []
    for name, content in (("train", train), ("dev", dev)):
        path = tmp_path / f"{name}{suffix}"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        paths.append(path)
    label = "score" if "--regression" in extra else "label"
    return ["finetune", "classify", "--train", paths[0], "--dev", paths[1], "--text-column", "text",
            "--label-column", label, "--preset", preset, "--output", tmp_path / "run", *FAST, *extra]


def test_classify_reads_a_bom_crlf_file_and_numbers_records_by_their_first_line(tmp_path, preset, capsys):
    # Excel's "CSV UTF-8": a byte-order mark before the header, CRLF line ends, a quoted cell over two lines.
    train = BOM + b'text,label\r\n"good, very\r\ngood",a\r\nbad,b\r\nfine,a\r\n'
    dev = 'text,label\n"a cell\nover two lines",c\n'  # the record starts on line 2, ends on line 3
    code, out, err = run_cli(classify(tmp_path, preset, train, dev), capsys)
    assert "train: 3 examples from" in out
    assert_one_line(code, err, r"dev.csv:2: label 'c' is not one of \['a', 'b'\]")


@pytest.mark.parametrize(
    "suffix, train, extra, message",
    [
        (".csv", "text,label\nok,a\ncaf\u00e9,b\n".encode("latin-1"), (),
         r"train.csv:3: not UTF-8 text \(byte 0xe9 at column 4, near b'caf\\xe9,b'.*save the file as UTF-8"),
        (".tsv", "text\tlabel\nok\ta\nno\tb\n".encode("utf-16"), (), r"train.tsv:1: not UTF-8 text \(it starts with a UTF-16"),
        (".csv", "text,label\nok,a\nno,\nfine,b\n", (), r"train.csv:3: the label \(column 'label'\) is empty"),
        (".csv", "text,label,text\nok,a,x\nno,b,y\n", (), r"train.csv:1: column 'text' appears 2 times in the header"),
        (".jsonl", '{"text": null, "label": "a"}\n', (), r"train.jsonl:1: 'text' is null; expected a string"),
        (".jsonl", '{"text": "ok", "label": ["a"]}\n', (), r"train.jsonl:1: 'label' is an array; expected a string"),
        (".csv", "text,score\nok,1.5\nno,nan\n", ("--regression",), r"train.csv:3: expected a finite numeric score; got 'nan'"),
        (".csv", 'text,label\n"never closed,a\nno,b\n', (), r"train.csv:2: expected 2 fields .* an unclosed quote\?"),
    ],
    ids=["latin-1", "utf-16", "empty-label", "duplicate-header", "json-null", "json-array", "nan-score", "open-quote"],
)
def test_classify_refuses_bad_training_files_in_one_line(tmp_path, preset, capsys, suffix, train, extra, message):
    code, _, err = run_cli(classify(tmp_path, preset, train, train, suffix, extra), capsys)
    assert_one_line(code, err, message)


def test_glue_reads_a_bom_and_refuses_a_nan_score(tmp_path, preset, capsys):
    folder = tmp_path / "STS-B"
    folder.mkdir()
    rows = "index\tsentence1\tsentence2\tscore\n0\tA cat.\tA cat.\t5.0\n1\tA dog.\tA car.\t0.4\n"
    (folder / "train.tsv").write_bytes(BOM + rows.encode())
    (folder / "dev.tsv").write_text(rows + "2\tA man.\tA boy.\tNaN\n", encoding="utf-8")
    code, out, err = run_cli(["finetune", "glue", "--task", "STS-B", "--data-dir", folder, "--preset", preset,
                              "--output", tmp_path / "run", *FAST], capsys)
    assert "train: 2 examples from" in out
    assert_one_line(code, err, r"dev.tsv:4: expected a finite numeric score; got 'NaN'")


@pytest.mark.parametrize("dev_rows, reason", [
    ("0\tA man.\tA boy.\t3.2\n", "1 example: a correlation needs 2 or more"),
    ("0\tA man.\tA boy.\t3.0\n1\tA cat.\tA dog.\t3.0\n", "the gold scores are all equal"),
], ids=["one-example", "constant-gold"])
def test_a_correlation_without_a_value_is_null_with_a_line_not_a_failed_run(tmp_path, preset, capsys, dev_rows, reason):
    # scipy raised after training for one example (no preset written) and answered NaN (not JSON) for constant scores.
    folder = tmp_path / "STS-B"
    folder.mkdir()
    header = "index\tsentence1\tsentence2\tscore\n"
    (folder / "train.tsv").write_text(header + "0\tA cat.\tA cat.\t5.0\n1\tA dog.\tA car.\t0.4\n", encoding="utf-8")
    (folder / "dev.tsv").write_text(header + dev_rows, encoding="utf-8")
    argv = ["finetune", "glue", "--task", "STS-B", "--data-dir", folder, "--preset", preset, "--output", tmp_path / "run",
            *FAST]
    with pytest.warns(UserWarning, match=re.escape(f"pearson correlation is undefined ({reason}); reported as null")):
        code, _, err = run_cli(argv, capsys)
    assert code == 0, err
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["dev"]["pearson"] is None and metrics["dev"]["spearman"] is None
    assert (tmp_path / "run" / "preset" / "config.json").is_file()


def test_colas_test_file_with_its_header_is_predicted(tmp_path, preset, capsys):
    folder = tmp_path / "CoLA"
    folder.mkdir()
    rows = ["gj04\t1\t\tOur friends won't buy this analysis.", "gj04\t0\t*\tThey drank the pub.",
            "gj04\t1\t\tThe sailors rode the breeze.", "gj04\t0\t*\tThe more we study verbs."]
    (folder / "train.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (folder / "dev.tsv").write_text("\n".join(rows[:2]) + "\n", encoding="utf-8")
    # GLUE's CoLA test.tsv, unlike its train and dev files, has a header: index, sentence.
    (folder / "test.tsv").write_text("index\tsentence\n0\tBill whistled.\n1\tThe book was read.\n", encoding="utf-8")
    code, _, err = run_cli(["finetune", "glue", "--task", "CoLA", "--data-dir", folder, "--preset", preset,
                            "--output", tmp_path / "run", *FAST], capsys)
    assert code == 0, err
    for source in (folder / "test.tsv", folder / "dev.tsv"):
        output = tmp_path / f"{source.stem}.jsonl"
        code, _, err = run_cli(["predict", "--preset", tmp_path / "run", "--input", source, "--output", output], capsys)
        assert code == 0, err
        assert len(output.read_text().splitlines()) == 2


CONLL = "-DOCSTART- -X- -X- O\n\nJohn NNP B-NP B-PER\nlives VBZ B-VP O\n\nParis NNP B-NP B-LOC\n"


def test_ner_drops_the_bom_before_docstart(tmp_path, preset, capsys):
    # Read as plain UTF-8, "\ufeff-DOCSTART-" was a word: a third, bogus sentence tagged O.
    (tmp_path / "train.txt").write_bytes(BOM + CONLL.encode())
    (tmp_path / "dev.txt").write_bytes("Jos\u00e9 B-PER\n".encode("latin-1"))
    code, out, err = run_cli(["finetune", "ner", "--train", tmp_path / "train.txt", "--dev", tmp_path / "dev.txt",
                              "--preset", preset, "--output", tmp_path / "run", *FAST], capsys)
    assert "train: 2 examples from" in out
    assert_one_line(code, err, r"dev.txt:1: not UTF-8 text \(byte 0xe9 at column 4")


@pytest.mark.parametrize(
    "task, content", [("ner", "-DOCSTART- -X- -X- O\n\n"), ("swag", ",video-id,sent1,sent2,ending0,ending1,label\n")],
    ids=["ner", "swag"],
)
def test_an_empty_training_file_is_named_as_such(tmp_path, preset, capsys, task, content):
    # NER used to blame the dev file ("tag 'B-PER' is not one of ['O']"), SWAG said "no examples".
    train = tmp_path / "train.txt"
    train.write_text(content, encoding="utf-8")
    dev = tmp_path / "dev.txt"
    dev.write_text(CONLL, encoding="utf-8")
    argv = ["finetune", task, "--train", train, "--dev", dev, "--preset", preset, "--output", tmp_path / "run", *FAST]
    if task == "swag":
        argv += ["--num-choices", "2"]
    code, _, err = run_cli(argv, capsys)
    assert_one_line(code, err, r"train.txt: the training set is empty")


def squad_file(path, answers, version="1.1", bom=False):
    context = "The paper was written by Jacob Devlin in 2018."
    qas = [{"id": f"q{i}", "question": "Who wrote it?", "answers": a} for i, a in enumerate(answers)]
    data = {"version": version, "data": [{"title": "T", "paragraphs": [{"context": context, "qas": qas}]}]}
    path.write_bytes((BOM if bom else b"") + json.dumps(data).encode())
    return path


DEVLIN = [{"text": "Jacob Devlin", "answer_start": 25}]


@pytest.mark.parametrize(
    "train_answers, dev_answers, message",
    [
        # "answers": null was a TypeError and a stack trace.
        ([DEVLIN], [None], r"dev.json: data\[0\].paragraphs\[0\].qas\[0\].answers must be list; got NoneType"),
        ([[{"text": "Jacob Devlin", "answer_start": 0}]], [DEVLIN],
         r"train.json: no training window could be made: all 1 questions were skipped, their answer not located "
         r"\(first, q0: answer_start 0 points at"),
    ],
    ids=["null-answers", "no-answer-located"],
)
def test_squad_bad_files_in_one_line(tmp_path, preset, capsys, train_answers, dev_answers, message):
    train = squad_file(tmp_path / "train.json", train_answers, bom=True)  # a BOM is no longer "not a JSON file"
    dev = squad_file(tmp_path / "dev.json", dev_answers)
    code, _, err = run_cli(["finetune", "squad", "--version", "1.1", "--train", train, "--dev", dev,
                            "--preset", preset, "--output", tmp_path / "run", *FAST[:-1], "64"], capsys)
    assert_one_line(code, err, message)


def test_squad_v1_dev_question_without_answer_names_the_file(tmp_path, preset, capsys):
    train = squad_file(tmp_path / "train.json", [DEVLIN])
    dev = squad_file(tmp_path / "dev.json", [DEVLIN, []])
    code, _, err = run_cli(["finetune", "squad", "--version", "1.1", "--train", train, "--dev", dev,
                            "--preset", preset, "--output", tmp_path / "run", *FAST[:-1], "64"], capsys)
    assert_one_line(code, err, r"dev.json: Question 'q1' has no gold answer")


def test_other_commands_read_bom_and_name_non_utf8_lines(tmp_path, preset, capsys):
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("ok\ncaf\u00e9 B-PER B-PER\n".encode("latin-1"))
    code, _, err = run_cli(["extract-features", "--input", latin1, "--preset", preset, "--output", tmp_path / "f.jsonl"],
                           capsys)
    assert_one_line(code, err, r"latin1.txt:2: not UTF-8 text \(byte 0xe9 at column 4")
    code, _, err = run_cli(["evaluate", "--conlleval", latin1], capsys)
    assert_one_line(code, err, r"latin1.txt:2: not UTF-8 text")
    data = squad_file(tmp_path / "dev.json", [DEVLIN], bom=True)
    predictions = tmp_path / "predictions.json"
    predictions.write_bytes(BOM + json.dumps({"q0": "Jacob Devlin"}).encode())
    code, out, err = run_cli(["evaluate", "squad", "--data", data, "--predictions", predictions], capsys)
    assert code == 0, err
    assert json.loads(out)["exact_match"] == 100.0


def test_predict_gives_every_row_of_a_texts_only_csv_a_line_even_an_empty_text(tmp_path, preset, capsys):
    # A one-column CSV: a quoted empty cell or one of spaces is a text (empty once tokenized) and gets a
    # prediction, as in a file with more columns; blank lines and a spreadsheet's rows of empty cells are no rows.
    train = "text,label\ngood,a\nbad,b\nfine,a\nawful,b\n"
    code, _, err = run_cli(classify(tmp_path, preset, train, train), capsys)
    assert code == 0, err
    texts = tmp_path / "texts.csv"
    texts.write_text('text\ngood\n""\n   \n\nbad\n', encoding="utf-8")
    code, out, err = run_cli(["predict", "--preset", tmp_path / "run", "--input", texts,
                              "--output", tmp_path / "p.jsonl"], capsys)
    assert code == 0, err
    assert "2 examples have no tokens" in out, out
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [row["line"] for row in rows] == [2, 3, 4, 6]
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("text,label\ngood,a\n,\n\nbad,b\n", encoding="utf-8")
    code, _, err = run_cli(["predict", "--preset", tmp_path / "run", "--input", pairs,
                            "--output", tmp_path / "q.jsonl"], capsys)
    assert code == 0, err
    assert [json.loads(line)["line"] for line in (tmp_path / "q.jsonl").read_text().splitlines()] == [2, 5]


def test_ner_says_that_the_words_of_a_truncated_sentence_past_the_limit_are_tagged_o(tmp_path, preset, capsys):
    long_sentence = "".join(f"word{index} O\n" for index in range(40)) + "\n"
    (tmp_path / "train.txt").write_text(CONLL + "\n" + long_sentence, encoding="utf-8")
    code, out, err = run_cli(["finetune", "ner", "--train", tmp_path / "train.txt", "--dev", tmp_path / "train.txt",
                              "--preset", preset, "--output", tmp_path / "run", *FAST], capsys)
    assert code == 0, err
    assert "1 examples longer than 32 tokens were truncated (their words past the limit are tagged O)" in out
    tags = [json.loads(line)["tags"] for line in (tmp_path / "run" / "dev_predictions.jsonl").read_text().splitlines()]
    assert len(tags[-1]) == 40  # every word has a tag, those cut off included
