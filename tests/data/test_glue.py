import pytest

from keras_bert_app.data.glue import glue_file
from keras_bert_app.data.glue import glue_task
from keras_bert_app.data.glue import read_glue


def write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_cola_has_no_header(tmp_path):
    path = write(tmp_path / "train.tsv", ["gj04\t1\t\tOur friends won't buy this analysis.", "gj04\t0\t*\tThey drank the pub."])
    examples = read_glue(path, "CoLA")
    assert examples.texts == ["Our friends won't buy this analysis.", "They drank the pub."]
    assert examples.labels == [1, 0] and examples.text_pairs is None


def test_sentence_pair_tasks(tmp_path):
    mrpc = write(tmp_path / "mrpc.tsv", [
        "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String",
        '1\t1\t2\tHe said "yes".\tHe agreed.',
        "0\t3\t4\tA cat.\tA dog.",
    ])
    examples = read_glue(mrpc, "mrpc")
    assert examples.texts == ['He said "yes".', "A cat."]  # quotes kept: no CSV quoting
    assert examples.text_pairs == ["He agreed.", "A dog."] and examples.labels == [1, 0]
    header = "index\tpromptID\tpairID\tgenre\ts1b\ts2b\ts1p\ts2p\tsentence1\tsentence2\tlabel1\tgold_label"
    mnli = write(tmp_path / "dev_matched.tsv", [header, "0\t1\t1\tfic\t.\t.\t.\t.\tP.\tH.\tneutral\tneutral"])
    examples = read_glue(mnli, "MNLI")
    assert examples.labels == [2] and examples.label_names == ["contradiction", "entailment", "neutral"]
    stsb = write(tmp_path / "sts.tsv", [
        "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore",
        "0\tmain\tx\t2012\t1\tnone\tnone\tA plane.\tAn airplane.\t5.000",
    ])
    examples = read_glue(stsb, "STS-B")
    assert examples.labels == [5.0] and examples.label_names is None
    for name, header, row, label in (
        ("qqp", "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate", "1\t1\t2\tq?\tr?\t1", 1),
        ("qnli", "index\tquestion\tsentence\tlabel", "0\tq?\ts.\tnot_entailment", 1),
        ("rte", "index\tsentence1\tsentence2\tlabel", "0\ta.\tb.\tentailment", 0),
        ("wnli", "index\tsentence1\tsentence2\tlabel", "0\ta.\tb.\t1", 1),
        ("sst-2", "sentence\tlabel", "it 's fine \t1", 1),
    ):
        assert read_glue(write(tmp_path / f"{name}.tsv", [header, row]), name).labels == [label]


def test_task_lookup_and_files(tmp_path):
    assert glue_task("SST-2").metrics == ("accuracy",)
    assert glue_task("mnli").dev_files == ("dev_matched", "dev_mismatched")
    with pytest.raises(ValueError, match="Unknown GLUE task 'squad'"):
        glue_task("squad")
    with pytest.raises(FileNotFoundError, match="train.tsv"):
        glue_file(tmp_path, "train")


def test_bad_rows(tmp_path):
    path = write(tmp_path / "rte.tsv", ["index\tsentence1\tsentence2\tlabel", "0\ta.\tb.\tentailment", "1\ta.\tmaybe"])
    with pytest.raises(ValueError, match=r"rte.tsv:3: expected 4 fields"):
        read_glue(path, "rte")
    path = write(tmp_path / "rte2.tsv", ["index\tsentence1\tsentence2\tlabel", "0\ta.\tb.\tcontradiction"])
    with pytest.raises(ValueError, match=r"rte2.tsv:2: label 'contradiction' is not one of"):
        read_glue(path, "rte")
    path = write(tmp_path / "mrpc.tsv", ["Quality\t#1 String", "1\tx"])
    with pytest.raises(ValueError, match=r"mrpc.tsv:2: no column '#2 String'"):
        read_glue(path, "mrpc")
    path = write(tmp_path / "cola.tsv", ["gj04\t1\t"])
    with pytest.raises(ValueError, match=r"cola.tsv:1: no column 3"):
        read_glue(path, "cola")
